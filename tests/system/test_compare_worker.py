"""A comparison as a task of its own (the type ``compare``: s3task/handlers/compare.py), run by real ``worker.py``
processes: end to end on a local store and on moto over HTTP (the highlighter, the summary beside it, the
counts in the record), a key repeated failing it for good in the engine's words, a worker SIGKILLed
mid-comparison and another one finishing it on attempt 2 (on both stores), and a cancel mid-comparison that
leaves both compared results as they were. ``compare_gate`` (tests/compare_gate.py) holds a comparison mid-way."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
from pathlib import Path

import pytest
from conftest import wait_for
from procs import RUN_SECONDS, Procs, S3Workers, child_env, run, worker_args
from support import csv_bytes

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ANN = Actor("ann")
OLD = [["id", "name", "price"], ["1", "Ann", "10.0"], ["2", "Ben", "20"], ["3", "Cy", "30"], ["4", "Zoë", "40"]]
NEW = [["id", "name", "price"], ["1", "Ann", "10"], ["2", "Benjamin", "25"], ["4", "Zoë", "40"], ["5", "東京", "50"]]
HIGHLIGHTED = [
    ["@@", "id", "name", "price"],
    ["->", "2", "Ben->Benjamin", "20->25"],
    ["+++", "5", "東京", "50"],
    ["---", "3", "Cy", "30"],
]
#: The workers' lease and poll interval here (short, so a killed worker's task comes back within seconds).
LEASE, POLL, GRACE = 4.0, 0.2, 1.0
RECOVERY = LEASE + GRACE + 2 * POLL


def rows_of(body: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(body.decode("utf-8-sig"), newline="")))


def results_of(service: TaskService, old: list[list[str]] = OLD, new: list[list[str]] = NEW) -> tuple[str, str]:
    """Two copy tasks submitted (a worker completes them)."""
    a = service.submit_file(ANN, "March", "copy", None, csv_bytes(old)).task_id
    b = service.submit_file(ANN, "April", "copy", None, csv_bytes(new)).task_id
    return a, b


def pinned(store, layout: Layout, *task_ids: str) -> dict[str, tuple[str, bytes]]:
    """Each task's result as it is in the store now: its ETag and bytes."""
    found = {}
    for task_id in task_ids:
        key = read_record(store, layout, task_id)[0].output_object_path
        got = store.get(key)
        found[task_id] = (got.etag, got.body)
    return found


def check_answer(store, layout: Layout, record) -> None:
    assert record.status == "completed", (record.last_error, record.history)
    assert rows_of(store.get(record.output_object_path).body) == HIGHLIGHTED
    summary = json.loads(store.get(Layout.summary_key_of(record.output_object_path)).body)
    assert summary["rows"] == {"added": 1, "removed": 1, "changed": 1, "unchanged": 2}
    assert summary["columns_changed"] == {"name": 1, "price": 1} and summary["numeric_columns"] == ["price"]
    assert "compared by id: 1 row added, 1 row removed, 1 row changed, 2 rows unchanged" in summary["lines"]
    # Progress: both results' rows read, the input (the manifest) done, the highlighter's rows written.
    assert record.processed_count == 8 and record.row_count == 3
    assert record.bytes_processed == record.input_size_bytes


@pytest.fixture
def local(tmp_path: Path) -> tuple[Path, TaskService]:
    root = tmp_path / "store"
    return root, TaskService(LocalStore(root), Layout())


def worker_once(root: Path) -> None:
    run(worker_args(str(root), "--once"), env=child_env(), timeout=RUN_SECONDS, check=True)


def test_a_worker_compares_two_results_on_a_local_store(local) -> None:
    root, service = local
    a, b = results_of(service)
    worker_once(root)
    before = pinned(service.store, service.layout, a, b)
    made = service.compares.create(ANN, a, b, ["id"])
    assert made.status == "queued" and made.payload == {"old_task": a, "new_task": b, "keys": "id"}
    assert made.input_size_bytes < 300  # the manifest: nothing of either result copied
    worker_once(root)
    check_answer(service.store, service.layout, service.get(ANN, made.task_id))
    assert pinned(service.store, service.layout, a, b) == before


def test_keys_that_repeat_fail_it_for_good_in_the_engines_words(local) -> None:
    root, service = local
    a, b = results_of(service, new=[*NEW, ["2", "Bea", "21"]])
    worker_once(root)
    made = service.compares.create(ANN, a, b, "id")
    worker_once(root)
    record = service.get(ANN, made.task_id)
    assert record.status == "failed" and record.final and record.attempt_id == 1
    assert "keys repeat in the new result, so its rows cannot be paired: id '2' (2 rows)" in (record.last_error or "")


def test_a_worker_compares_two_results_on_moto_over_http(s3_workers: S3Workers) -> None:
    s3 = s3_workers
    a = s3.submit("March", csv_bytes(OLD))
    b = s3.submit("April", csv_bytes(NEW))
    s3.worker()
    for task_id in (a, b):
        wait_for(lambda t=task_id: s3.done(t), timeout=60 + s3.start, what=f"{task_id} completed")
    made = s3.service.compares.create(Actor("alice"), a, b, "id")
    wait_for(lambda: s3.done(made.task_id), timeout=60 + s3.start, what="the comparison completed")
    check_answer(s3.store, s3.layout, s3.record(made.task_id))


def gated_worker(procs: Procs, root: Path, name: str, gate: Path | None) -> object:
    args = ["--poll-interval", str(POLL), "--lease-seconds", str(LEASE), "--handlers", "compare_gate"]
    env = {"S3TASK_LEASE_GRACE_SECONDS": str(GRACE), "S3TASK_RETRY_BACKOFF_SECONDS": "0.5"}
    if gate is not None:
        env["COMPARE_GATE"] = str(gate)
    return procs.worker(str(root), *args, worker_id=name, env=env)


def held_comparison(local, procs: Procs, startup: float) -> tuple[TaskService, str, str, str, Path, object]:
    """Two results, and a comparison of them held mid-way by a worker (its progress seen moving)."""
    root, service = local
    a, b = results_of(service)
    worker_once(root)
    made = service.compares.create(ANN, a, b, "id")
    gate = procs.tmp / "gate"
    worker = gated_worker(procs, root, "victim", gate)
    reached = Path(str(gate) + ".reached")
    wait_for(reached.exists, timeout=30 + startup, what="the comparison reached the gate")
    wait_for(
        lambda: service.get(ANN, made.task_id).bytes_processed > 0,
        timeout=LEASE + 2 + startup,
        what="the comparison's progress seen in the record",
    )
    return service, a, b, made.task_id, gate, worker


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_worker_killed_mid_comparison_another_finishes_it(local, procs: Procs, startup: float) -> None:
    service, a, b, task_id, gate, victim = held_comparison(local, procs, startup)
    before = pinned(service.store, service.layout, a, b)
    child = int(Path(str(gate) + ".reached").read_text())
    victim.send_signal(signal.SIGKILL)
    victim.wait(10 + startup)
    wait_for(lambda: gone(child), timeout=10 + startup, what="the killed worker's attempt process gone with it")
    Path(str(gate) + ".open").touch()
    gated_worker(procs, local[0], "rescuer", None)
    done = wait_for(
        lambda: (r := service.get(ANN, task_id, fresh=True)).status == "completed" and r,
        timeout=RECOVERY + 60 + startup,
        what="the comparison completed by the second worker",
    )
    assert done.attempt_id == 2 and done.worker_id == "rescuer", done.history
    check_answer(service.store, service.layout, done)
    keys = service.store.list_keys(service.layout.task_prefix(task_id))
    assert service.layout.output_key(task_id, 1) not in keys  # the killed attempt left no output
    assert pinned(service.store, service.layout, a, b) == before


def test_a_cancel_mid_comparison_stops_it_and_leaves_both_results(local, procs: Procs, startup: float) -> None:
    service, a, b, task_id, gate, worker = held_comparison(local, procs, startup)
    before = pinned(service.store, service.layout, a, b)
    child = int(Path(str(gate) + ".reached").read_text())
    service.cancel(ANN, task_id)
    wait_for(lambda: gone(child), timeout=LEASE + 2 + startup, what="the worker killed the cancelled attempt")
    record = service.get(ANN, task_id, fresh=True)
    assert record.status == "abandoned"
    assert not [k for k in service.store.list_keys(service.layout.task_prefix(task_id)) if "output-attempt" in k]
    assert pinned(service.store, service.layout, a, b) == before
    assert {service.get(ANN, t).status for t in (a, b)} == {"completed"}
    worker.alive()


def test_on_moto_a_worker_killed_mid_comparison_another_finishes_it(s3_workers: S3Workers) -> None:
    s3 = s3_workers
    alice = Actor("alice")
    a = s3.submit("March", csv_bytes(OLD))
    b = s3.submit("April", csv_bytes(NEW))
    first = s3.worker("--handlers", "compare_gate", env={"COMPARE_GATE": str(s3.tmp / "gate")}, name="victim")
    for task_id in (a, b):
        wait_for(lambda t=task_id: s3.done(t), timeout=60 + s3.start, what=f"{task_id} completed")
    before = pinned(s3.store, s3.layout, a, b)
    made = s3.service.compares.create(alice, a, b, "id")
    reached = s3.tmp / "gate.reached"
    wait_for(reached.exists, timeout=30 + s3.start, what="the comparison reached the gate")
    child = int(reached.read_text())
    first.send_signal(signal.SIGKILL)
    first.wait(10 + s3.start)
    wait_for(lambda: gone(child), timeout=10 + s3.start, what="the killed worker's attempt process gone with it")
    (s3.tmp / "gate.open").touch()
    s3.worker("--handlers", "compare_gate", name="rescuer")
    recovery = S3Workers.lease + GRACE + 2 * S3Workers.poll
    done = wait_for(lambda: s3.done(made.task_id), timeout=recovery + 60 + s3.start, what="finished on attempt 2")
    assert done.attempt_id == 2, done.history
    check_answer(s3.store, s3.layout, done)
    written = [k for k in s3.outputs(made.task_id) if k.endswith(".csv")]  # the killed attempt left none
    assert written == [s3.layout.output_key(made.task_id, 2)]
    assert pinned(s3.store, s3.layout, a, b) == before
