"""A store that misbehaves on purpose, the invariants every run must keep, and the published figures.

:class:`FaultyStore` wraps a real :class:`~s3task.store.base.ObjectStore` and
injects, by seed and per-kind rate, what an S3 endpoint does on a bad day:

- ``error500`` / ``error503``: the call fails at once (``StoreUnavailable``), nothing happens;
- ``timeout``: the call hangs a little, then fails (``StoreUnavailable``), nothing happens;
- ``slow``: the call hangs a little, then succeeds;
- ``conflict``: a conditional update answers 409 ``ConditionalRequestConflict`` (``Conflict``);
- ``lost``: a write lands, but its response is lost — the caller sees ``StoreUnavailable``, or the
  ``PreconditionFailed`` / ``AlreadyExists`` an SDK retry of a landed conditional write gets.

Every injected fault is counted by kind. It also keeps an audit of every
status.json write that landed (``old etag → new etag, revision, status``), so a
run can prove that no two writes were based on the same version (one winner
per compare-and-set) and that ``revision`` only grew along the chain.

Worker *processes* pick the wrapper up through ``--handlers faults``: importing
this module with ``S3TASK_TEST_FAULTS`` set (JSON: ``{"seed": 1, "rates": {...}}``)
wraps every store the process opens, the worker's and its children's, and
``S3TASK_TEST_FAULTS_LOG`` names a file to which each fault and each audited
write is appended as one JSON line (they survive a SIGKILL).

``python tests/faults.py report`` rewrites RELIABILITY.md from the figures the
last run left in ``tests/artifacts/reliability.json``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from s3task.errors import AlreadyExists, Conflict, PreconditionFailed, StoreUnavailable
from s3task.store.base import PutMode

KINDS = ("error500", "error503", "timeout", "slow", "conflict", "lost")
ERRORS = ("error500", "error503", "timeout")
ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "tests" / "artifacts" / "reliability.json"
REPORT = ROOT / "RELIABILITY.md"
ENV = "S3TASK_TEST_FAULTS"
LOG_ENV = "S3TASK_TEST_FAULTS_LOG"


class FaultyStore:
    """An ObjectStore that injects faults into ``inner``'s calls (see the module docstring)."""

    def __init__(
        self,
        inner: Any,
        *,
        seed: int = 0,
        rates: dict[str, float] | None = None,
        delay: tuple[float, float] = (0.02, 0.25),
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        unknown = set(rates or {}) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}")
        self.inner = inner
        self.rates = dict(rates or {})
        self.delay = delay
        self.enabled = True
        self.counts: Counter[str] = Counter()
        self.calls = 0
        #: status.json writes that landed: key -> [(old etag or None, new etag, revision, status, complete events)]
        self.audit: dict[str, list[tuple[str | None, str, int, str, int]]] = {}
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._log_path = str(log_path) if log_path else None
        self.description = f"faulty {inner.description}"

    # --- deciding and counting ------------------------------------------------

    def _pick(self, *, write: bool, update: bool) -> str | None:
        with self._lock:
            self.calls += 1
            if not self.enabled:
                return None
            draws = {kind: self._rng.random() for kind in KINDS}
            delay = self._rng.uniform(*self.delay)
        for kind in KINDS:
            if kind == "conflict" and not update:
                continue
            if kind == "lost" and not write:
                continue
            if draws[kind] < self.rates.get(kind, 0.0):
                self._count(kind)
                if kind in ("timeout", "slow"):
                    time.sleep(delay)
                return kind
        return None

    def _count(self, kind: str) -> None:
        with self._lock:
            self.counts[kind] += 1
        self._log({"fault": kind})

    def _log(self, entry: dict[str, Any]) -> None:
        if self._log_path is None:
            return
        line = (json.dumps({**entry, "pid": os.getpid()}) + "\n").encode()
        fd = os.open(self._log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)  # one small O_APPEND write: whole lines even from many processes
        finally:
            os.close(fd)

    @staticmethod
    def _fail_before(kind: str | None, key: str) -> None:
        if kind == "error500":
            raise StoreUnavailable(f"the store failed on {key} (500 InternalError, injected)")
        if kind == "error503":
            raise StoreUnavailable(f"the store failed on {key} (503 SlowDown, injected)")
        if kind == "timeout":
            raise StoreUnavailable(f"the store did not answer for {key}: read timeout (injected)")

    def _lost(self, key: str, mode: PutMode | None) -> Exception:
        """What the caller of a landed write sees when the response was lost."""
        if self._rng.random() < 0.5 or mode is None or mode.kind == "overwrite":
            return StoreUnavailable(f"the store did not answer for {key}: connection reset (injected, write landed)")
        if mode.kind == "create":
            return AlreadyExists(f"{key} already exists (injected: a retry of a create that landed)")
        return PreconditionFailed(f"{key} changed since it was read (injected: a retry of an update that landed)")

    def _audit(self, key: str, body: bytes, mode: PutMode, etag: str) -> None:
        if not key.endswith("/status.json"):
            return
        try:
            data = json.loads(body)
            revision, status = int(data.get("revision", -1)), str(data.get("status"))
            completes = sum(1 for h in data.get("history", []) if h.get("event") == "complete")
        except (ValueError, TypeError, AttributeError):
            return
        entry = (mode.etag if mode.kind == "update" else None, etag, revision, status, completes)
        with self._lock:
            self.audit.setdefault(key, []).append(entry)
        self._log({"audit": key, "old": entry[0], "new": etag, "revision": revision, "status": status})

    # --- reads ------------------------------------------------------------------

    def get(self, key: str, *, if_match: str | None = None):
        self._fail_before(self._pick(write=False, update=False), key)
        return self.inner.get(key, if_match=if_match)

    def head(self, key: str):
        self._fail_before(self._pick(write=False, update=False), key)
        return self.inner.head(key)

    def get_start(self, key: str, size: int):
        self._fail_before(self._pick(write=False, update=False), key)
        return self.inner.get_start(key, size)

    def list_keys(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        self._fail_before(self._pick(write=False, update=False), prefix)
        return self.inner.list_keys(prefix, start_after=start_after, limit=limit)

    def list_prefixes(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        self._fail_before(self._pick(write=False, update=False), prefix)
        return self.inner.list_prefixes(prefix, start_after=start_after, limit=limit)

    def open_read(self, key: str, *, if_match: str | None = None):
        self._fail_before(self._pick(write=False, update=False), key)
        return self.inner.open_read(key, if_match=if_match)

    # --- writes -----------------------------------------------------------------

    def put(
        self,
        key: str,
        body: bytes,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> str:
        kind = self._pick(write=True, update=mode.kind == "update")
        self._fail_before(kind, key)
        if kind == "conflict":
            raise Conflict(f"{key}: a concurrent conditional write is in progress (409, injected)")
        etag = self.inner.put(key, body, mode, content_type=content_type, metadata=metadata)
        self._audit(key, body, mode, etag)
        if kind == "lost":
            raise self._lost(key, mode)
        return etag

    @contextlib.contextmanager
    def open_write(
        self,
        key: str,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Iterator[Any]:
        kind = self._pick(write=True, update=mode.kind == "update")
        with self.inner.open_write(key, mode, content_type=content_type, metadata=metadata) as writer:
            yield writer
            # Failing inside the inner block makes the backend discard (or abort) the upload.
            self._fail_before(kind, key)
            if kind == "conflict":
                raise Conflict(f"{key}: a concurrent conditional write is in progress (409, injected)")
        if kind == "lost":
            raise self._lost(key, mode)

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        kind = self._pick(write=True, update=if_match is not None)
        self._fail_before(kind, key)
        if kind == "conflict":
            raise Conflict(f"{key}: a concurrent conditional write is in progress (409, injected)")
        self.inner.delete(key, if_match=if_match)
        if kind == "lost":
            raise StoreUnavailable(f"the store did not answer for {key}: connection reset (injected, delete landed)")

    # --- no faults: URLs are made locally, the clock is the store's -------------------

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str | None:
        return self.inner.presign_get(key, expires=expires, filename=filename)

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str | None:
        return self.inner.presign_put(key, expires=expires, content_type=content_type)

    def now(self) -> datetime:
        return self.inner.now()

    def __getattr__(self, name: str) -> Any:  # e.g. LocalStore.root for the app's download fallback
        return getattr(self.inner, name)


# --- the audit: one winner per version, revisions only grow ------------------------------


def check_audit(audit: dict[str, list[tuple[str | None, str, int, str, int]]]) -> int:
    """Check the landed status.json writes; returns how many were checked.

    Each write names the version it replaced (its If-Match ETag). Two landed
    writes replacing the same version would mean two compare-and-sets both
    won; a write whose revision is not above the one it replaced would mean
    the record went backwards.
    """
    checked = 0
    for key, writes in audit.items():
        revision_of: dict[str, int] = {}
        replaced: dict[str, str] = {}
        for old, new, revision, _status, completes in writes:
            revision_of[new] = revision
            assert completes <= 1, f"{key}: a record with {completes} 'complete' events was written"
            if old is not None:
                assert old not in replaced, f"{key}: two writes both replaced version {old} (a CAS with two winners)"
                replaced[old] = new
        for old, new in replaced.items():
            if old in revision_of:
                assert revision_of[new] > revision_of[old], f"{key}: revision went from {revision_of[old]} to " + str(
                    revision_of[new]
                )
        checked += len(writes)
    return checked


def read_fault_log(path: str | os.PathLike[str]) -> tuple[Counter[str], dict[str, list]]:
    """Fault counts and the status.json audit from a log written by worker processes."""
    counts: Counter[str] = Counter()
    audit: dict[str, list] = {}
    if not Path(path).exists():
        return counts, audit
    for line in Path(path).read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line cut short by SIGKILL
        if "fault" in entry:
            counts[entry["fault"]] += 1
        elif "audit" in entry:
            audit.setdefault(entry["audit"], []).append(
                (entry["old"], entry["new"], entry["revision"], entry["status"], 0)
            )
    return counts, audit


# --- invariants --------------------------------------------------------------------------


@dataclass
class Expect:
    """What a submitted task must end as."""

    rows: int | None = None  # completed with this many output rows
    error: str | None = None  # failed for good, last_error containing this
    may_abandon: bool = False  # cancelled by the test: abandoned is fine too
    may_fail: bool = False  # its workers were killed again and again: failed for good (with a message) is fine


@dataclass
class Verdict:
    completed: int = 0
    failed: int = 0
    abandoned: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.wrong)

    def as_dict(self) -> dict[str, Any]:
        return {
            "completed": self.completed,
            "failed": self.failed,
            "abandoned": self.abandoned,
            "lost": len(self.lost),
            "duplicated": len(self.duplicated),
            "wrong": len(self.wrong),
        }


def check_invariants(store: Any, layout: Any, expected: dict[str, Expect], *, poll: bool = True) -> Verdict:
    """The issue's invariants, on a store at rest (no faults, no worker running).

    - every submitted task is completed (or failed for good with the expected
      message, or abandoned if the test cancelled it): anything else is *lost*;
    - each completed task names the output of its own last attempt, complete,
      with the expected number of rows, and completed exactly once: else *duplicated*;
    - after one more poll, no ``active/`` marker is left on a finished task, and
      every unfinished task still has one (a task without a marker is never polled).

    ``poll`` runs that one more poll with a fresh in-process worker.
    """
    import io

    import pandas as pd

    from s3task.errors import S3TaskError
    from s3task.records import read_record

    if poll:
        one_more_poll(store, layout)
    verdict = Verdict()
    markers = {layout.task_id_of(k) for k in store.list_keys(layout.active_root)}
    for task_id, want in expected.items():
        try:
            record, _ = read_record(store, layout, task_id)
        except S3TaskError as e:
            verdict.lost.append(f"{task_id}: {e}")
            continue
        if not record.is_terminal:
            verdict.lost.append(f"{task_id}: still {record.status} ({record.last_error})")
            continue
        if task_id in markers:
            verdict.wrong.append(f"{task_id}: {record.status} but its active/ marker is still there")
        completes = sum(1 for h in record.history if h.get("event") == "complete")
        if completes > 1:
            verdict.duplicated.append(f"{task_id}: completed {completes} times")
        if record.status == "abandoned":
            verdict.abandoned += 1
            if not want.may_abandon:
                verdict.lost.append(f"{task_id}: abandoned, nobody cancelled it")
            continue
        if record.status == "failed":
            verdict.failed += 1
            if want.may_fail and record.last_error:
                continue
            if want.error is None or want.error not in (record.last_error or ""):
                verdict.lost.append(f"{task_id}: failed: {record.last_error}")
            continue
        verdict.completed += 1
        if want.error is not None:
            verdict.wrong.append(f"{task_id}: completed, but its input should have failed ({want.error})")
            continue
        if record.output_object_path != layout.output_key(task_id, record.attempt_id):
            verdict.duplicated.append(
                f"{task_id}: output {record.output_object_path} is not attempt {record.attempt_id}'s"
            )
            continue
        try:
            body = store.get(record.output_object_path).body
        except S3TaskError as e:
            verdict.lost.append(f"{task_id}: completed, but its output cannot be read: {e}")
            continue
        rows = len(pd.read_csv(io.BytesIO(body), dtype=str, keep_default_na=False))
        if not (rows == record.row_count == record.processed_count and (want.rows is None or rows == want.rows)):
            verdict.duplicated.append(
                f"{task_id}: output has {rows} rows, record says {record.row_count}, input had {want.rows}"
            )
    for task_id in expected:
        try:
            record, _ = read_record(store, layout, task_id)
        except S3TaskError:
            continue
        if not record.is_terminal and record.status != "created" and task_id not in markers:
            verdict.lost.append(f"{task_id}: {record.status} without an active/ marker: no worker will see it")
    return verdict


def one_more_poll(store: Any, layout: Any) -> None:
    """A poll by a worker that claims nothing: it only tidies (drops stale markers)."""
    from s3task.config import Settings
    from s3task.worker.loop import Worker

    inner = getattr(store, "inner", store)
    worker = Worker(Settings(store="unused", worker_id="invariant-check", concurrency=1), store=inner, layout=layout)
    worker.stop_event.set()  # tidy, never claim
    worker.poll_once()


# --- a task type that takes its time (so that workers die mid-task) -----------------------------


def _register_slow_copy() -> None:  # and the memory hog
    import pandas as pd

    from s3task.handlers import ERROR_COLUMN, Param, TaskType, register

    @register
    class SlowCopy(TaskType):
        name = "test_slow_copy"
        title = "Slow copy (tests)"
        description = "Copies rows, pausing before each block."
        params = (Param("pause", "float", default=0.5),)

        def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
            time.sleep(self.values["pause"])
            out = chunk.copy()
            out[ERROR_COLUMN] = ""
            return out

    @register
    class Hog(TaskType):
        name = "test_hog"
        title = "Eats memory (tests)"
        description = "Allocates (and touches) memory without bound."

        def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
            hoard = []
            while True:
                hoard.append(b"\x01" * (8 << 20))
                time.sleep(0.01)


_register_slow_copy()


# --- process-wide installation (worker processes: --handlers faults) ----------------------


def _install_from_env() -> None:
    """Wrap every store this process opens (worker or attempt child) when ``S3TASK_TEST_FAULTS`` is set.

    Through ``s3task.store.wrap_stores``: every store ``open_store`` gives this
    process from now on comes wrapped, the worker's and each child's. The
    worker's start-up probe runs without faults: it decides whether the store is
    safe at all, and is not what is tested here.
    """
    raw = os.environ.get(ENV)
    if not raw:
        return
    config = json.loads(raw)
    import s3task.store as store_mod

    if any(getattr(w, "_faulty", False) for w in store_mod._WRAPPERS):
        return
    role = "child" if _in_child() else "worker"
    rates = config.get(f"{role}_rates", config.get("rates", {}))
    seed = int(config.get("seed", 0)) * 1_000_003 + os.getpid()
    log_path = os.environ.get(LOG_ENV)
    opened: list[FaultyStore] = []

    def wrap(inner: Any) -> FaultyStore:
        store = FaultyStore(inner, seed=seed + len(opened), rates=rates, log_path=log_path)
        opened.append(store)
        return store

    wrap._faulty = True  # type: ignore[attr-defined]
    store_mod.wrap_stores(wrap)
    loop = sys.modules.get("s3task.worker.loop")
    if loop is not None:  # the probe is the worker's start-up check, not part of the work under faults
        probe = loop.cas_probe

        def quiet_probe(store: Any, prefix: str) -> None:
            store.enabled = False
            try:
                probe(store, prefix)
            finally:
                store.enabled = True

        loop.cas_probe = quiet_probe


def _in_child() -> bool:
    import multiprocessing

    return multiprocessing.parent_process() is not None


_install_from_env()


# --- figures and RELIABILITY.md -------------------------------------------------------------


def save_figures(section: str, data: dict[str, Any]) -> None:
    """Merge one test's figures into tests/artifacts/reliability.json (several tests may write)."""
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    with open(Path(tempfile.gettempdir()) / "s3task-reliability.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            figures = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
        except ValueError:
            figures = {}
        figures[section] = {**data, "at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%SZ")}
        tmp = FIGURES.with_suffix(".tmp")
        tmp.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
        tmp.replace(FIGURES)
        if os.environ.get("S3TASK_WRITE_RELIABILITY"):
            REPORT.write_text(render_report(figures))


COMMANDS = {
    "faults": ".venv/bin/python -m pytest tests/system/test_faults.py",
    "crash_points": ".venv/bin/python -m pytest tests/system/test_crash_points.py",
    "soak": ".venv/bin/python -m pytest tests/system/test_soak.py",
    "soak_long": "S3TASK_SOAK_SECONDS=180 .venv/bin/python -m pytest tests/system/test_soak.py",
    "hostile": ".venv/bin/python -m pytest tests/system/test_hostile.py",
    "access": ".venv/bin/python -m pytest tests/system/test_access.py",
}


def render_report(figures: dict[str, Any]) -> str:
    """RELIABILITY.md from the figures of the last run (tests/artifacts/reliability.json)."""
    out = [
        "# Reliability figures",
        "",
        "Written by `.venv/bin/python tests/faults.py report` from `tests/artifacts/reliability.json`,",
        "which the suites below write at the end of each full run. Each figure says which command",
        "reproduces it (seeds are fixed; thread and process timing is not, so counts vary a little",
        "between runs, the zeros do not).",
        "",
    ]
    out += _summary(figures)
    for section, title in SECTIONS:
        data = figures.get(section)
        if not data:
            continue
        out += [f"## {title}", "", f"Reproduce: `{COMMANDS[section]}` (last run {data.get('at', '?')})", ""]
        out += [f"- {line}" for line in _lines(section, data)]
        out.append("")
    out += render_misuse(figures)
    out += [
        "## Bugs these suites found (fixed, each with the test that found it)",
        "",
        *[f"- {bug}" for bug in BUGS],
        "",
        "## What the suites check",
        "",
        "See the docstrings of tests/system/test_faults.py, tests/system/test_crash_points.py,",
        "tests/system/test_soak.py, tests/system/test_hostile.py and tests/system/test_access.py;",
        "the invariants are `check_invariants` and `check_audit` in tests/faults.py.",
        "",
    ]
    return "\n".join(out)


def _summary(figures: dict[str, Any]) -> list[str]:
    faults = figures.get("faults", {})
    crash = figures.get("crash_points", {})
    soaks = [figures[k] for k in ("soak", "soak_long") if k in figures]
    injected = faults.get("faults_total", 0) + sum(sum(s.get("faults_by_kind", {}).values()) for s in soaks)
    by_kind = Counter(faults.get("faults_by_kind", {}))
    for soak in soaks:
        by_kind.update(soak.get("faults_by_kind", {}))
    tasks = faults.get("tasks", 0) + crash.get("covered", 0) + sum(s.get("submitted", 0) for s in soaks)
    lost = sum(figures.get(k, {}).get("lost", 0) for k in ("faults", "crash_points", "soak", "soak_long"))
    duplicated = sum(figures.get(k, {}).get("duplicated", 0) for k in ("faults", "crash_points", "soak", "soak_long"))
    return [
        "## Summary",
        "",
        f"- store faults injected: {injected} ({', '.join(f'{k} {by_kind[k]}' for k in KINDS)}) — fault runs and soaks",
        f"- crash points covered: {crash.get('covered', 0)}",
        f"- tasks run to their end under faults, crashes or chaos: {tasks}",
        f"- lost: {lost}, duplicated: {duplicated}",
        "",
        "Everything (the default set, short soak): `.venv/bin/python -m pytest tests/system/test_faults.py "
        "tests/system/test_crash_points.py tests/system/test_soak.py tests/system/test_hostile.py "
        "tests/system/test_access.py`, then "
        "`.venv/bin/python tests/faults.py report` (or set `S3TASK_WRITE_RELIABILITY=1` for the run).",
        "",
    ]


BUGS = (
    "A 503 or timeout on the write that completes (fails, releases) an attempt threw the finished attempt "
    "away: the task expired, was charged a failed attempt and ran again. The worker now retries that write "
    "while its lease lasts (s3task/worker/holding.py; test_faults.py, error500/503 runs).",
    "A create whose response was lost (an SDK retry sees 412, or a timeout) was reported as an error, and "
    "the person's retry left a second, never-submitted task. create_record compares write ids "
    "(s3task/records.py; test_faults.py, lost-response run).",
    "When the read that tells whether a write landed failed too, a claim that had landed was given up: "
    "the task expired under a live worker and was charged a failed attempt. That read is retried "
    "(s3task/records.py; test_faults.py::test_a_claim_whose_answer_and_next_read_both_fail_is_still_worked_on).",
    "A poller dropping a failed task's marker while a person retried it, with its check read failing, left the "
    "queued task without a marker: never polled again. The marker now goes back when the record cannot be "
    "read (s3task/markers.py; "
    "test_faults.py::test_a_retry_racing_a_marker_drop_keeps_its_marker_when_the_check_read_fails).",
    "A SIGKILLed worker's attempt process lived on for ever (a hung handler) or finished an output nobody "
    "used: its parent is the fork server, which outlives the worker while a child lives. The child now exits "
    "when the worker's end of its pipe is gone (s3task/worker/child.py; "
    "test_hostile.py::test_a_killed_worker_leaves_no_attempt_process_behind).",
    "A 1.3 MB CSV of 100,000 columns took 1.4 GB and 24 s in the attempt (memory grows with columns whatever "
    "the file size). Headers of more than 16,384 columns are refused with a message naming the count "
    "(s3task/csvio; test_hostile.py, 100,000 columns).",
    "A person's retry (marker, then queued record) racing a poller's drop of the same task's marker (delete, "
    "then re-read) left the task queued with no marker when the re-read fell between the retry's two writes: "
    "never polled again. The retry now re-adds the marker after its write (s3task/tasks.py, s3task/markers.py; "
    "found by test_soak.py, reproduced by test_faults.py::"
    "test_a_retry_whose_marker_is_dropped_before_its_record_is_written_keeps_its_marker).",
    "Finding that a 200 MB line is over the 64 MB row limit held a 128 MB buffer and its parts (486 MB peak); "
    "under a 400 MB cap the attempt was killed for memory before it could say what was wrong. Reads now stop "
    "one byte past the limit: 327 MB (s3task/csvio; test_hostile.py, a single 200 MB line).",
)

#: The misuse table (issue 26): what was tried, what happened before, what is bounded now. A row's
#: figures come from the section of reliability.json its test saves (``misuse_*``); a row whose test
#: did not run in the last full run says so instead, so regenerating never loses a row.
MISUSE = (
    (
        "Development mode (no sign-in, 127.0.0.1) opened through a same-host proxy or tunnel "
        "(`X-Forwarded-For`, `X-Forwarded-Host`, `X-Forwarded-Proto`, `Forwarded`, `X-Real-IP`, each added by a "
        "real nginx in front of the app; a non-loopback `Host`)",
        "every visitor was the operator, the Workers page was served, nothing was logged",
        'refused with the "not configured correctly" page naming what to configure; the first logged',
        "tests/unit/test_dev_mode_forwarded.py, tests/browser/test_dev_mode_tunnel.py",
        None,
    ),
    (
        "45 concurrent `GET /api/tasks/{id}/output?variant=xlsx` on a fresh large output, "
        "another user's `GET /api/tasks?limit=1` timed meanwhile",
        "each waiting request held one of AnyIO's 40 threads for up to 20 s; the other user waited 18.8 s "
        "(0.018 s unloaded)",
        "waiters hold no thread, at most 16 wait, the rest get 503 + `Retry-After` at once",
        "tests/system/test_copy_waits.py",
        "misuse_copy_burst",
    ),
    (
        "1,500 tasks created and cancelled with 60 KB of parameters each, in one service",
        "123 MB kept for good (created records bounded by count, finished ones not at all)",
        "both caches bounded in bytes (4 MB + 16 MB)",
        "tests/unit/test_create_limits.py",
        "misuse_cache",
    ),
    (
        "One user creating tasks as fast as the API answers",
        "3,000 tasks in 26 s, flooding everyone's list",
        "`S3TASK_MAX_CREATES_PER_MINUTE` (60) per user and process: 429 + `Retry-After`; "
        "`S3TASK_MAX_PARAMETERS_KB` (16) per task",
        "tests/system/test_create_limits_api.py",
        "misuse_create_rate",
    ),
    (
        "Task names with `ESC[31m`, CR LF, NUL, C1, right-to-left override, zero-width characters",
        "accepted; `s3task list` / `show` printed them raw (terminal escapes, fake rows)",
        "refused at create (API 400, CLI, app, one message); stored ones printed as `\\uXXXX`",
        "tests/system/test_names_shown.py",
        None,
    ),
    (
        "Tokens file rotated with its old size and mtime (`cp -p`); webhook URL `http://127.0.0.1:99999/`, "
        "`https://[::1`; `smtp://user:password@host`; `s3task-api serve --port 99999`",
        "old token kept working; every event went to `missed`; password sent unencrypted; a traceback",
        "inode and ctime compared; refused at start (one line, exit 2); refused except to localhost; one line, exit 2",
        "tests/unit/test_small_misuse.py, tests/system/test_refused_at_start.py",
        None,
    ),
    (
        "Trusted-header mode on 0.0.0.0; the sign-in header sent twice (a proxy that appends)",
        "no warning; Streamlit took the first header, the client's",
        "warned at start and to operators on every page; a repeated header refused",
        "tests/unit/test_trusted_header_guard.py, tests/system/test_trusted_header_exposed.py",
        None,
    ),
)


def render_misuse(figures: dict[str, Any]) -> list[str]:
    """The "Misuse" section: one row per thing tried, with the last run's figures where it has some."""
    out = [
        "## Misuse",
        "",
        "What an attacker or a careless operator tried (issue 26), what happened before, and what is",
        "bounded now. Figures are from the last run of the named test; rows without figures are checked",
        "by their tests on every run.",
        "",
        "| tried | before | now | measured (last run) | test |",
        "|---|---|---|---|---|",
    ]
    for tried, before, now, test, section in MISUSE:
        measured = _misuse_figures(section, figures.get(section)) if section else "checked (no figure)"
        out.append(f"| {tried} | {before} | {now} | {measured} | {test} |")
    out.append("")
    return out


def _misuse_figures(section: str, data: dict[str, Any] | None) -> str:
    if not data:
        return "not measured in the last run"
    if section == "misuse_copy_burst":
        return (
            f"other user's worst {data['loaded_worst_s']} s under {data['requests']} requests "
            f"(unloaded {data['baseline_s']} s, bound {data['bound_s']} s); {data['answered_at_once']} told "
            f"503 at once; {data['rows']:,} rows"
        )
    if section == "misuse_cache":
        return f"{data['kept_mb']} MB kept after {data['tasks']:,} tasks (bound {data['bound_mb']} MB)"
    if section == "misuse_create_rate":
        return (
            f"{data['tried']} creates in {data['seconds']} s at a limit of {data['limit']}: "
            f"{data['created']} created, {data['refused']} refused with 429"
        )
    return ", ".join(f"{k} {v}" for k, v in data.items() if k != "at")


SECTIONS = (
    ("faults", "Store faults through the whole lifecycle"),
    ("crash_points", "A crash after any store call"),
    ("soak", "Soak (short form, in the default suite)"),
    ("soak_long", "Soak (long form)"),
    ("hostile", "Hostile and bad input"),
    ("access", "Access"),
)


def _lines(section: str, data: dict[str, Any]) -> list[str]:
    if section == "faults":
        kinds = ", ".join(f"{k} {data['faults_by_kind'].get(k, 0)}" for k in KINDS)
        return [
            f"faults injected: {data['faults_total']} ({kinds})",
            f"runs: {data['runs']} (one per kind, one mixed); tasks: {data['tasks']}",
            f"status.json writes audited (one winner per version, revision only grows): "
            f"{data['audited_status_writes']}",
            f"lost: {data['lost']}, duplicated: {data['duplicated']}",
        ]
    if section == "crash_points":
        return [
            f"crash points covered: {data['covered']} "
            f"({data['worker']} in worker processes, real SIGKILL; {data['client']} in the client)",
            *[f"{group}: {', '.join(points)}" for group, points in data["points"].items()],
            f"lost: {data['lost']}, duplicated: {data['duplicated']}",
        ]
    if section in ("soak", "soak_long"):
        keys = ("seconds", "workers", "submitted", "completed", "failed", "abandoned", "lost", "duplicated")
        lines = [", ".join(f"{k} {data[k]}" for k in keys if k in data)]
        if "kills" in data:
            lines.append(
                f"worker kills: {data['kills']}, cancels: {data.get('cancels', 0)}, retries: {data.get('retries', 0)}"
            )
        if "faults_by_kind" in data:
            lines.append("faults injected: " + ", ".join(f"{k} {v}" for k, v in data["faults_by_kind"].items()))
        if data.get("failed_because"):
            because: Counter[str] = Counter()
            for reason, n in data["failed_because"].items():
                because[re.sub(r"^(line|row) [\d,]+( \([^)]*\))?: ", "", reason)] += n
            lines.append("failed for good because: " + "; ".join(f"{r} ({n})" for r, n in because.items()))
        return lines
    if section == "hostile":
        lines = [f"{name}: {outcome}" for name, outcome in data.get("csv_outcomes", {}).items()]
        lines += [
            f"peak RSS of the attempt processes (/proc VmHWM), largest first: {data.get('attempt_peaks_mb')} MB — "
            "the first two are the memory hog's attempts, killed at the 400 MB cap set for the run",
            f"memory hog: {data.get('memory_hog')}; stalled handler: {data.get('stalled_handler')}",
            f"unreadable records skipped, reported and left byte-for-byte: {data.get('unreadable_records_skipped')}",
            f"skewed clocks: {data.get('skewed_clocks')}",
            f"whole hostile run: {data.get('hostile_run_seconds')} s (inputs generated in "
            f"{data.get('input_generation_seconds')} s)",
        ]
        return lines
    if section == "access":
        return [
            f"refusals checked (B acting on A's task: TaskService, CLI --as, HTTP API): {data.get('refusals_checked')}",
            f"log lines searched for credentials, tokens and URL signatures: {data.get('log_lines_checked')} (none)",
        ]
    return [f"{k}: {v}" for k, v in data.items() if k != "at"]


def main(argv: list[str]) -> int:
    if argv[1:] != ["report"]:
        print("usage: python tests/faults.py report", file=sys.stderr)
        return 2
    figures = json.loads(FIGURES.read_text())
    REPORT.write_text(render_report(figures))
    print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
