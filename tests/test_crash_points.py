"""A crash right after any store call: enumerate the calls, kill there, restart, check the invariants.

Worker side (real processes, real SIGKILL): each scenario first runs a
reference ``worker.py`` with ``--handlers crashhook`` tracing its store calls
(see tests/crashhook.py); every call of the phases the scenario is about
(claim, heartbeat, finish, fail, release, the automatic retry and the lease
expiry, the attempt's child) becomes a crash point. For each point a fresh
store gets the same task, a worker is started that SIGKILLs itself right after
that call, and then a worker is started again (in-process, with nothing of
the dead one's state) and must bring every task to its proper end.

Client side (create → upload → submit, cancel, operator retry): the acting
process is the caller of TaskService; it is "killed" by an exception nothing
in s3task catches, raised right after call N, and then the person does what
they would do on the page: look at their task and carry on.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import worker_handlers  # noqa: F401  (registers the gated task type in this process too)
from conftest import wait_for
from crashhook import CrashStore
from faults import Expect, check_invariants, save_figures

from s3task import lifecycle
from s3task.config import Settings
from s3task.errors import InvalidTransition, S3TaskError
from s3task.layout import Layout
from s3task.lifecycle import Lease
from s3task.record import read_record, update_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.worker.loop import Worker

ROOT = Path(__file__).resolve().parent.parent
ALICE = Actor("alice")
LEASE = 2.0
ROWS = 5
PARALLEL = 4
_covered: dict[str, list[str]] = {}


def csv_rows(n: int) -> bytes:
    return ("id,name\n" + "".join(f"{i},name {i}\n" for i in range(n))).encode()


# --- scenarios: a task in some state, and what it must end as ---------------------------------


@dataclass
class Scenario:
    name: str
    #: phases whose calls are crash points (poll and presence: first occurrence only)
    phases: tuple[str, ...]
    setup: Callable[[TaskService, Path], str]
    expect: Expect
    gated: bool = False
    #: the reference run stops the worker (SIGTERM) after its first heartbeat, and so do the
    #: crash runs at points of the release phase
    sigterm: bool = False


def submitted(service: TaskService, data: bytes, task_type: str = "copy", params: dict | None = None) -> str:
    task_id = service.create(ALICE, "crash test", task_type, params).record.task_id
    service.upload_input(ALICE, task_id, data)
    service.submit(ALICE, task_id)
    return task_id


def ghost_claim(service: TaskService, task_id: str, lease_seconds: float) -> Lease:
    """A worker that no longer exists claims the task (its lease may already be over)."""
    holder: dict[str, Lease] = {}

    def change(r, now):
        new, holder["lease"] = lifecycle.claim(r, now, worker_id="ghost", lease_seconds=lease_seconds)
        return new

    update_record(service.store, service.layout, task_id, change)
    return holder["lease"]


def setup_copy(service: TaskService, tmp: Path) -> str:
    return submitted(service, csv_rows(ROWS))


def setup_gated(service: TaskService, tmp: Path) -> str:
    return submitted(service, csv_rows(ROWS), "test_gated", {"gate": str(tmp / "gate")})


def setup_ragged(service: TaskService, tmp: Path) -> str:
    return submitted(service, b"a,b\n1,2\n3,4,5\n")


def setup_expired(service: TaskService, tmp: Path) -> str:
    task_id = submitted(service, csv_rows(ROWS))
    ghost_claim(service, task_id, -60)
    return task_id


RAGGED = "line 3: expected 2 fields, found 3"
SCENARIOS = {
    s.name: s
    for s in (
        Scenario("claim-and-finish", ("poll", "claim", "presence", "child", "finish"), setup_copy, Expect(rows=ROWS)),
        Scenario(
            "heartbeat-release", ("heartbeat", "release"), setup_gated, Expect(rows=ROWS), gated=True, sigterm=True
        ),
        Scenario("fail", ("fail",), setup_ragged, Expect(error=RAGGED)),
        # the expiry (tidy → failed), then the automatic retry of that failure (tidy → queued)
        Scenario("expiry-and-retry", ("tidy",), setup_expired, Expect(rows=ROWS)),
    )
}


# --- running a worker process with the hook ------------------------------------------------------


@dataclass
class Run:
    tmp: Path
    store: LocalStore
    layout: Layout
    service: TaskService
    task_id: str

    @property
    def trace(self) -> Path:
        return self.tmp / "trace.jsonl"

    def points(self) -> list[dict[str, Any]]:
        if not self.trace.exists():
            return []
        return [json.loads(line) for line in self.trace.read_text().splitlines() if line.strip()]

    def record(self):
        return read_record(self.store, self.layout, self.task_id)[0]


def new_run(tmp: Path, scenario: Scenario) -> Run:
    tmp.mkdir(parents=True, exist_ok=True)
    store, layout = LocalStore(tmp / "store"), Layout()
    service = TaskService(store, layout)
    return Run(tmp, store, layout, service, scenario.setup(service, tmp))


def start_worker(run: Run, crash_at: str | None) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)]),
        "S3TASK_LEASE_GRACE_SECONDS": "0.5",
        "S3TASK_RETRY_BACKOFF_SECONDS": "0.1",
        "S3TASK_TEST_CRASH_TRACE": str(run.trace),
        "S3TASK_TEST_CRASH_AT": crash_at or "",
        "S3TASK_TEST_CRASH_ONCE": str(run.tmp / "crashed"),
    }
    cmd = [
        sys.executable, str(ROOT / "worker.py"), "--store", str(run.tmp / "store"), "--poll-interval", "0.1",
        "--lease-seconds", str(LEASE), "--handlers", "worker_handlers", "--handlers", "crashhook",
        "--worker-id", "victim",
    ]  # fmt: skip
    log = open(run.tmp / "worker.log", "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)


@contextlib.contextmanager
def rescuer(run: Run) -> Iterator[Worker]:
    """The restarted worker: a fresh one (in this process) with none of the dead one's state."""
    settings = Settings(
        store=str(run.tmp / "store"),
        worker_id="rescuer",
        handlers=("worker_handlers",),
        poll_interval=0.05,
        lease_seconds=LEASE,
        lease_grace_seconds=0.5,
        retry_backoff_seconds=0.1,
    )
    worker = Worker(settings, store=LocalStore(run.tmp / "store"), layout=run.layout)
    thread = threading.Thread(target=worker.run_forever, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stop(timeout=20)
        thread.join(20)


def terminal(run: Run) -> bool:
    try:
        return run.record().is_terminal
    except S3TaskError:
        return False


def finish(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def reference(tmp: Path, scenario: Scenario) -> list[str]:
    """Run the scenario once without a crash; return its crash points in call order."""
    run = new_run(tmp, scenario)
    proc = start_worker(run, None)
    try:
        if scenario.gated:
            wait_for(lambda: any(p["point"].startswith("heartbeat:put") for p in run.points()), timeout=60)
        if scenario.sigterm:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0
        if scenario.gated:
            (run.tmp / "gate").touch()
        if proc.poll() is not None:
            with rescuer(run):
                wait_for(lambda: terminal(run), timeout=60, what="finished after the release")
        else:
            wait_for(lambda: terminal(run), timeout=60, what=f"{scenario.name} reference run finished")
    finally:
        finish(proc)
    verdict = check_invariants(run.store, run.layout, {run.task_id: scenario.expect})
    assert verdict.ok, verdict
    points: list[str] = []
    for p in run.points():
        phase = p["point"].split(":", 1)[0]
        occurrence = int(p["point"].rsplit("#", 1)[1])
        if phase not in scenario.phases or p["point"] in points:
            continue
        if phase in ("poll", "presence", "heartbeat") and occurrence > 1:
            continue  # the same call again: covered by its first occurrence
        points.append(p["point"])
    return points


def crash_at(tmp: Path, scenario: Scenario, point: str) -> str:
    """Kill a worker right after ``point``, restart, and check; returns how the worker died."""
    run = new_run(tmp, scenario)
    proc = start_worker(run, point)
    try:
        if point.startswith("release:"):
            wait_for(lambda: run.record().status == "running", timeout=60, what="claimed")
            wait_for(lambda: any(p["point"].startswith("heartbeat:put") for p in run.points()), timeout=30)
            proc.send_signal(signal.SIGTERM)
        wait_for(lambda: (run.tmp / "crashed").exists() or proc.poll() is not None, timeout=60, what=point)
        assert (run.tmp / "crashed").exists(), f"{scenario.name}: the worker never made the call {point}"
        crashed = [p for p in run.points() if p["crash"]]
        assert [p["point"] for p in crashed] == [point]
        if scenario.gated:
            (run.tmp / "gate").touch()
        if crashed[0]["role"] == "worker":
            assert proc.wait(30) == -signal.SIGKILL
            with rescuer(run):
                wait_for(lambda: terminal(run), timeout=60, what=f"recovered after a crash at {point}")
        else:  # the attempt's child died: its worker carries on
            wait_for(lambda: terminal(run), timeout=60, what=f"recovered after a child crash at {point}")
    finally:
        finish(proc)
    verdict = check_invariants(run.store, run.layout, {run.task_id: scenario.expect})
    assert verdict.ok, (point, verdict, run.record().history)
    assert verdict.lost == verdict.duplicated == []
    return crashed[0]["role"]


def test_worker_crash_points(tmp_path: Path) -> None:
    """Every scenario's reference run, then every crash point, a few worker processes at a time."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        found = {n: pool.submit(reference, tmp_path / n / "reference", s) for n, s in SCENARIOS.items()}
        points = {n: f.result() for n, f in found.items()}
        for name, scenario in SCENARIOS.items():
            assert points[name], f"{name}: no store call of phases {scenario.phases} was traced"
        runs = {
            (n, p): pool.submit(crash_at, tmp_path / n / f"crash-{i}", SCENARIOS[n], p)
            for n in SCENARIOS
            for i, p in enumerate(points[n])
        }
        roles = {key: f.result() for key, f in runs.items()}
    for name in SCENARIOS:
        _covered[f"worker/{name}"] = [f"{p} ({roles[name, p]})" for p in points[name]]
    core = {"claim:put-update:status#1", "finish:put-update:status#1", "heartbeat:put-update:status#1"}
    assert core <= {p for ps in points.values() for p in ps}


# --- the client: create → upload → submit, cancel, retry ------------------------------------------


class Crash(BaseException):
    """The acting process died here (nothing in s3task catches a BaseException)."""


def client_points(flow: Callable[[TaskService], None], prepare: Callable[[TaskService], Any]) -> list[str]:
    """The store calls ``flow`` makes, as crash points."""
    seen: list[str] = []

    def record_point(point: str, key: str) -> None:
        seen.append(point)

    with temp_store() as (store, layout):
        context = prepare(TaskService(store, layout))
        flow(TaskService(CrashStore(store, record_point), layout), context)
    return seen


@contextlib.contextmanager
def temp_store() -> Iterator[tuple[LocalStore, Layout]]:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        yield LocalStore(Path(d) / "store"), Layout()


def crashing(store: LocalStore, target: str) -> CrashStore:
    def maybe_die(point: str, key: str) -> None:
        if point == target:
            raise Crash(point)

    return CrashStore(store, maybe_die)


def work_off(store: LocalStore, layout: Layout) -> None:
    """A worker (in-process) runs until every active task is finished."""
    settings = Settings(store=str(store.root), worker_id="w", poll_interval=0.05, retry_backoff_seconds=0.1)
    worker = Worker(settings, store=store, layout=layout)
    thread = threading.Thread(target=worker.run_forever, daemon=True)
    thread.start()
    try:

        def settled() -> bool:
            for prefix in store.list_prefixes(layout.root):
                task_id = layout.task_id_of(prefix)
                if task_id is None:
                    continue
                with contextlib.suppress(S3TaskError):
                    record = read_record(store, layout, task_id)[0]
                    if record.status in ("queued", "running") or lifecycle.retry_due(record, store.now()):
                        return False
            return True

        wait_for(settled, timeout=60, what="the worker finished the queue")
    finally:
        worker.stop(timeout=20)
        thread.join(20)


def new_task_flow(service: TaskService, _context: Any) -> None:
    task_id = service.create(ALICE, "new", "copy").record.task_id
    service.upload_input(ALICE, task_id, csv_rows(ROWS))
    service.submit(ALICE, task_id)


def recover_new_task(service: TaskService) -> dict[str, Expect]:
    """The person comes back: their unfinished task is on their list; they upload and submit it again."""
    mine = service.list(ALICE, mine=True).tasks
    for record in mine:
        if record.status == "created":
            service.upload_input(ALICE, record.task_id, csv_rows(ROWS))
            service.submit(ALICE, record.task_id)
    if not mine:  # the crash came before the task existed: start over
        new_task_flow(service, None)
        mine = service.list(ALICE, mine=True).tasks
    assert len(mine) == 1, [r.task_id for r in mine]
    return {r.task_id: Expect(rows=ROWS) for r in mine}


def prepare_nothing(service: TaskService) -> None:
    return None


def prepare_queued(service: TaskService) -> str:
    return submitted(service, csv_rows(ROWS))


def cancel_flow(service: TaskService, task_id: str) -> None:
    service.cancel(ALICE, task_id)


def recover_cancel(service: TaskService, task_id: str) -> dict[str, Expect]:
    if service.get(ALICE, task_id).status != "abandoned":
        with contextlib.suppress(InvalidTransition):  # a worker may have finished it meanwhile
            service.cancel(ALICE, task_id)
    return {task_id: Expect(rows=ROWS, may_abandon=True)}


def prepare_failed_for_good(service: TaskService) -> str:
    task_id = submitted(service, csv_rows(ROWS))
    lease = ghost_claim(service, task_id, 60)
    update_record(
        service.store,
        service.layout,
        task_id,
        lambda r, now: lifecycle.fail(r, now, lease=lease, error="broke", permanent=True),
    )
    service.store.delete(service.layout.active_key(task_id))  # as the failing worker does
    return task_id


def retry_flow(service: TaskService, task_id: str) -> None:
    service.retry(ALICE, task_id)


def recover_retry(service: TaskService, task_id: str) -> dict[str, Expect]:
    if service.get(ALICE, task_id).status == "failed":
        service.retry(ALICE, task_id)
    return {task_id: Expect(rows=ROWS)}


CLIENT_FLOWS = {
    "create-upload-submit": (prepare_nothing, new_task_flow, lambda s, _c: recover_new_task(s)),
    "cancel": (prepare_queued, cancel_flow, recover_cancel),
    "operator-retry": (prepare_failed_for_good, retry_flow, recover_retry),
}


@pytest.mark.parametrize("name", list(CLIENT_FLOWS))
def test_client_crash_points(name: str) -> None:
    prepare, flow, recover = CLIENT_FLOWS[name]
    points = client_points(flow, prepare)
    assert len(points) >= 3, points
    for point in points:
        with temp_store() as (store, layout):
            context = prepare(TaskService(store, layout))
            with pytest.raises(Crash):
                flow(TaskService(crashing(store, point), layout), context)
            expected = recover(TaskService(store, layout), context)
            work_off(store, layout)
            verdict = check_invariants(store, layout, expected)
            assert verdict.ok, (point, verdict)
            if name == "create-upload-submit":
                in_store = {layout.task_id_of(p) for p in store.list_prefixes(layout.root)} - {None}
                assert in_store == set(expected), f"after a crash at {point}: tasks left over {in_store}"
    _covered[f"client/{name}"] = points


def test_zz_publish_figures() -> None:
    expected = {f"worker/{n}" for n in SCENARIOS} | {f"client/{n}" for n in CLIENT_FLOWS}
    if set(_covered) != expected:
        pytest.skip("only part of the crash points ran; figures are published from a full run")
    save_figures(
        "crash_points",
        {
            "covered": sum(len(v) for v in _covered.values()),
            "worker": sum(len(v) for k, v in _covered.items() if k.startswith("worker/")),
            "client": sum(len(v) for k, v in _covered.items() if k.startswith("client/")),
            "points": _covered,
            "lost": 0,
            "duplicated": 0,
        },
    )
