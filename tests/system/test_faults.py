"""The whole lifecycle on a misbehaving store: create → upload → submit → several workers → completed.

Every store call of the client (TaskService) and of three in-process workers
(``s3task.worker.loop.Worker``, each on its own thread) goes through a
:class:`faults.FaultyStore`; one run per fault kind and one with all of them
mixed. The client retries what a person would retry (the call failed: try
again). At the end of each run, with the faults off: the invariants of
:func:`faults.check_invariants` and the audit of every status.json write.

The attempt children open the store by URL, so their input reads and output
writes are not faulted here; the soak (test_soak.py) faults them in worker
processes.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import figures
import pytest
from conftest import wait_for
from faults import KINDS, Expect, FaultyStore, check_audit, check_invariants, save_figures
from support import csv_rows

from s3task.config import Settings
from s3task.errors import AlreadyExists, Conflict, InvalidTransition, PreconditionFailed, S3TaskError, StoreUnavailable
from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.worker.loop import Worker

ALICE = Actor("alice")
RUNS: dict[str, dict[str, float]] = {
    "error500": {"error500": 0.15},
    "error503": {"error503": 0.15},
    "timeout": {"timeout": 0.1},
    "slow": {"slow": 0.3},
    "conflict": {"conflict": 0.3},
    "lost": {"lost": 0.25},
    "mixed": {"error500": 0.03, "error503": 0.03, "timeout": 0.03, "slow": 0.05, "conflict": 0.08, "lost": 0.06},
}
TASKS = 9  # of which every third has a ragged input that must fail for good
_totals: dict[str, Any] = {"faults": Counter(), "tasks": 0, "runs": 0, "audited_writes": 0, "lost": 0, "duplicated": 0}


def retrying(call: Callable[[], Any], what: str, tries: int = 60) -> Any:
    """What a person (or a script) does when a call fails for a store reason: try again."""
    for _ in range(tries):
        try:
            return call()
        except (StoreUnavailable, PreconditionFailed, AlreadyExists) as e:
            last = e
    raise AssertionError(f"{what} kept failing: {last}")


def submit_one(service: TaskService, name: str, data: bytes) -> str:
    created = retrying(lambda: service.create(ALICE, name, "copy"), "create")
    task_id = created.record.task_id
    retrying(lambda: service.upload_input(ALICE, task_id, data), "upload")

    def submit() -> None:
        try:
            service.submit(ALICE, task_id)
        except InvalidTransition:
            # An earlier try landed and only its answer was lost: the task is queued (or further).
            record = retrying(lambda: service.get(ALICE, task_id), "get")
            assert record.status != "created", record

    retrying(submit, "submit")
    return task_id


class WorkerLog(logging.Handler):
    """What the workers said: every message, and those at ERROR or above (a crash in the worker is one)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message)
        if record.levelno >= logging.ERROR:
            self.errors.append(message)


def settings_for(root: Path, name: str) -> Settings:
    return Settings(
        store=str(root),
        worker_id=name,
        poll_interval=0.05,
        lease_seconds=9.0,  # heartbeats every 3 s; two failed in a row are tolerated
        lease_grace_seconds=0.5,
        retry_backoff_seconds=0.1,
        max_attempts=3,
        stall_timeout=30,
    )


def run_lifecycle(tmp_path: Path, kind: str, rates: dict[str, float], seed: int) -> None:
    root = tmp_path / "store"
    inner = LocalStore(root)
    layout = Layout()
    store = FaultyStore(inner, seed=seed, rates=rates)
    service = TaskService(store, layout)
    expected: dict[str, Expect] = {}
    for i in range(TASKS):
        if i % 3 == 2:
            task_id = submit_one(service, f"ragged {i}", b"a,b\n1,2\n3,4,5\n")
            expected[task_id] = Expect(error="row 3 (a 3): 3 values where the header has 2 columns")
        else:
            task_id = submit_one(service, f"task {i}", csv_rows(10 * i + 1))
            expected[task_id] = Expect(rows=10 * i + 1)
    seen = WorkerLog()
    logging.getLogger("s3task.worker").addHandler(seen)
    workers = [Worker(settings_for(root, f"{kind}-{n}"), store=store, layout=layout) for n in range(3)]
    store.enabled = False  # the start-up probe is not part of the work under faults
    for w in workers:
        w.prove_store()
    store.enabled = True
    threads = [threading.Thread(target=w.run_forever, name=f"worker-{n}", daemon=True) for n, w in enumerate(workers)]
    for t in threads:
        t.start()
    try:

        def settled() -> bool:
            try:
                return all(read_record(inner, layout, t)[0].is_terminal for t in expected)
            except S3TaskError:
                return False

        wait_for(settled, timeout=90, interval=0.1, what=f"every task finished under {kind} faults")
    finally:
        for w in workers:
            w.stop(timeout=20)
        for t in threads:
            t.join(20)
    logging.getLogger("s3task.worker").removeHandler(seen)
    store.enabled = False
    # A create whose answer was lost must not leave a second, never-submitted task behind.
    in_store = {layout.task_id_of(p) for p in inner.list_prefixes(layout.root)} - {None}
    assert in_store == set(expected), f"tasks nobody submitted: {in_store - set(expected)}"
    verdict = check_invariants(store, layout, expected)
    assert verdict.ok, verdict
    assert verdict.completed == sum(1 for e in expected.values() if e.error is None)
    audited = check_audit(store.audit)
    for kind_ in rates:
        assert store.counts[kind_] > 0, f"no {kind_} fault was injected: the run proved nothing"
    # No worker died in these runs: every lease that expired was abandoned by a live worker that
    # could not tell whether its write had landed.
    expiries = [
        (t, h.get("note"))
        for t in expected
        for h in read_record(inner, layout, t)[0].history
        if "stopped sending heartbeats" in (h.get("note") or "")
    ]
    lost = [m for m in seen.messages if "lost" in m or "giving up" in m or "could not" in m]
    assert expiries == [], f"live workers abandoned leases they held: {expiries}; {lost}"
    crashed = [m for m in seen.errors if "crashed in the worker" in m or "unexpected error" in m]
    assert not crashed, crashed
    _totals["faults"].update(store.counts)
    _totals["tasks"] += len(expected)
    _totals["runs"] += 1
    _totals["audited_writes"] += audited
    _totals["lost"] += len(verdict.lost)
    _totals["duplicated"] += len(verdict.duplicated)
    _totals.setdefault("per_run", {})[kind] = {**dict(store.counts), **verdict.as_dict(), "store_calls": store.calls}


@pytest.mark.parametrize("kind", list(RUNS))
def test_lifecycle_under_faults(tmp_path: Path, kind: str) -> None:
    run_lifecycle(tmp_path, kind, RUNS[kind], seed=list(RUNS).index(kind) + 1)


@figures.at_end
def _publish() -> None:
    """The totals of the runs above, for RELIABILITY.md (from a full run of this module only)."""
    if _totals["runs"] != len(RUNS):
        return
    save_figures(
        "faults",
        {
            "faults_by_kind": {k: _totals["faults"][k] for k in KINDS},
            "faults_total": sum(_totals["faults"].values()),
            "runs": _totals["runs"],
            "tasks": _totals["tasks"],
            "audited_status_writes": _totals["audited_writes"],
            "lost": _totals["lost"],
            "duplicated": _totals["duplicated"],
            "per_run": _totals["per_run"],
        },
    )


# --- the wrapper itself ----------------------------------------------------------------------


def test_the_wrapper_injects_each_kind_as_documented(tmp_path: Path) -> None:
    inner = LocalStore(tmp_path / "s")
    etag = inner.put("k/a", b"1", PutMode.CREATE)

    lost = FaultyStore(inner, rates={"lost": 1.0})
    with pytest.raises((StoreUnavailable, PreconditionFailed)):
        lost.put("k/a", b"2", PutMode.update(etag))
    assert inner.get("k/a").body == b"2", "a lost response still lands the write"
    assert lost.get("k/a").body == b"2", "reads are never 'lost'"

    conflict = FaultyStore(inner, rates={"conflict": 1.0})
    with pytest.raises(Conflict):
        conflict.put("k/a", b"3", PutMode.update(inner.head("k/a").etag))
    conflict.put("k/b", b"x", PutMode.CREATE)  # only conditional updates get a 409
    assert inner.get("k/a").body == b"2"

    for kind in ("error500", "error503", "timeout"):
        failing = FaultyStore(inner, rates={kind: 1.0}, delay=(0, 0.01))
        with pytest.raises(StoreUnavailable):
            failing.put("k/c", b"never", PutMode.OVERWRITE)
        with pytest.raises(StoreUnavailable), failing.open_write("k/d", PutMode.CREATE) as w:
            w.write(b"never")
        assert failing.counts[kind] == 2
    assert inner.list_keys("k/") == ["k/a", "k/b"], "a failed call wrote nothing"

    slow = FaultyStore(inner, rates={"slow": 1.0}, delay=(0.05, 0.05))
    started = time.monotonic()
    assert slow.get("k/b").body == b"x"
    assert time.monotonic() - started >= 0.05 and slow.counts == {"slow": 1}


def test_same_seed_same_faults(tmp_path: Path) -> None:
    inner = LocalStore(tmp_path / "s")
    inner.put("k/a", b"1", PutMode.CREATE)

    def pattern(seed: int) -> list[bool]:
        store = FaultyStore(inner, seed=seed, rates={"error503": 0.5})
        out = []
        for _ in range(40):
            try:
                store.get("k/a")
                out.append(True)
            except StoreUnavailable:
                out.append(False)
        return out

    assert pattern(7) == pattern(7) != pattern(8)


def test_a_retry_racing_a_marker_drop_keeps_its_marker_when_the_check_read_fails(tmp_path: Path) -> None:
    """The poller drops a failed-for-good task's marker just as a person retries it, and its
    re-read of the record fails: the task must not end up queued with no marker (never polled)."""
    from s3task import markers

    inner, layout = LocalStore(tmp_path / "s"), Layout()
    service = TaskService(inner, layout)
    task_id = submit_one(service, "retried", csv_rows(2))
    fail_for_good(inner, layout, task_id)

    class Racing(FaultyStore):
        """The person's retry lands between the poller's delete and its re-read; the re-read fails."""

        armed = False

        def delete(self, key: str, *, if_match: str | None = None) -> None:
            service.retry(ALICE, task_id)
            super().delete(key, if_match=if_match)
            self.armed = True

        def get(self, key: str, *, if_match: str | None = None):
            if self.armed:  # one 503, on the re-read
                self.armed = False
                raise StoreUnavailable(f"the store failed on {key} (503 SlowDown, injected)")
            return super().get(key, if_match=if_match)

    poller_store = Racing(inner)
    with contextlib.suppress(S3TaskError):  # the poller may say so; it must not lose the task
        markers.drop(poller_store, layout, task_id)
    assert read_record(inner, layout, task_id)[0].status == "queued"
    assert inner.list_keys(layout.active_root) == [layout.active_key(task_id)], "a queued task lost its marker"


def test_a_claim_whose_answer_and_next_read_both_fail_is_still_worked_on(tmp_path: Path) -> None:
    """The claim lands but its answer is lost, and the read that would tell fails once too.

    Giving up there leaves the task running under a lease nobody renews: it expires, a failed
    attempt is charged, and the task is processed again (or fails for good on its last attempt).
    """
    inner, layout = LocalStore(tmp_path / "s"), Layout()
    task_id = submit_one(TaskService(inner, layout), "doubtful claim", csv_rows(3))

    class Doubtful(FaultyStore):
        phase = "waiting"

        def put(self, key: str, body: bytes, mode: PutMode, **kwargs: Any) -> str:
            etag = super().put(key, body, mode, **kwargs)
            if self.phase == "waiting" and key.endswith("status.json") and b'"running"' in body:
                self.phase = "claimed"
                raise StoreUnavailable(f"the store did not answer for {key} (injected, write landed)")
            return etag

        def get(self, key: str, *, if_match: str | None = None):
            if self.phase == "claimed":
                self.phase = "done"
                raise StoreUnavailable(f"the store failed on {key} (503 SlowDown, injected)")
            return super().get(key, if_match=if_match)

    worker = Worker(settings_for(tmp_path / "s", "doubtful"), store=Doubtful(inner), layout=layout)
    assert worker.poll_once() == 1, "the worker gave up a claim that had landed"
    wait_for(lambda: read_record(inner, layout, task_id)[0].status == "completed", timeout=60)
    worker.stop()
    record = read_record(inner, layout, task_id)[0]
    assert (record.attempt_id, record.failed_attempts) == (1, 0), record.history


def test_a_retry_whose_marker_is_dropped_before_its_record_is_written_keeps_its_marker(tmp_path: Path) -> None:
    """A poller drops a failed-for-good task's marker (delete, then re-read: still failed) in the
    moment between a person's retry writing the marker and writing the queued record. Found by the
    soak: the task sat queued with no marker, never polled again."""
    from s3task import markers

    inner, layout = LocalStore(tmp_path / "s"), Layout()
    task_id = submit_one(TaskService(inner, layout), "retried", csv_rows(2))
    fail_for_good(inner, layout, task_id)

    class PollerInBetween(FaultyStore):
        def put(self, key: str, body: bytes, mode: PutMode, **kwargs: Any) -> str:
            if key == layout.status_key(task_id) and b'"queued"' in body:
                markers.drop(inner, layout, task_id)  # the poller, acting on the failed record it sees
            return super().put(key, body, mode, **kwargs)

    TaskService(PollerInBetween(inner), layout).retry(ALICE, task_id)
    assert read_record(inner, layout, task_id)[0].status == "queued"
    assert inner.list_keys(layout.active_root) == [layout.active_key(task_id)], "a queued task lost its marker"


def fail_for_good(store, layout, task_id: str) -> None:
    """Claim the task as worker "w" and fail it permanently, as a worker would on bad input."""
    from s3task import lifecycle
    from s3task.records import update_record

    holder: dict = {}

    def claim(r, now):
        new, holder["lease"] = lifecycle.claim(r, now, worker_id="w", lease_seconds=60)
        return new

    update_record(store, layout, task_id, claim)
    update_record(
        store,
        layout,
        task_id,
        lambda r, now: lifecycle.fail(r, now, lease=holder["lease"], error="x", permanent=True),
    )
