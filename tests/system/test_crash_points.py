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

Time: every deadline here is derived (see ``Clock``) from the settings the
workers run with (lease, grace, poll interval, backoff, attempts) and from how
long a worker process takes to start on this machine: measured once at the
start, and again by every run's own worker. A busy machine gets longer
deadlines, not failures. Worker runs go two per CPU at a time, at most four.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import figures
import pytest
import worker_handlers  # noqa: F401  (registers the gated task type in this process too)
from conftest import wait_for
from crashhook import CrashStore
from faults import Expect, check_invariants, save_figures
from procs import Proc, child_env, worker_args
from procs import run as run_command
from support import csv_rows, queue_tiny_task

from s3task import lifecycle
from s3task.config import Settings
from s3task.errors import InvalidTransition, S3TaskError
from s3task.layout import Layout
from s3task.lifecycle import Lease
from s3task.records import read_record, update_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.worker.loop import Worker

ROOT = Path(__file__).resolve().parents[2]
ALICE = Actor("alice")
ROWS = 5
_covered: dict[str, list[str]] = {}
#: Every wait in here has a deadline derived from the settings and the machine's measured speed (see
#: Clock); pytest-timeout's flat 300 s per test is only the backstop, so it is set well above those.
pytestmark = pytest.mark.timeout(1200)


# --- time: the settings every worker here runs with, and the deadlines derived from them ----------

LEASE = 2.0  # lease length (renewed every third of it)
GRACE = 0.5  # how long past expiry before a lease counts as lost
BACKOFF = 0.1  # first automatic retry delay (doubles each time)
MAX_ATTEMPTS = 3  # failed attempts before a task fails for good
POLL = 0.1  # the crashing worker's poll interval
RESCUER_POLL = 0.05  # the restarted worker's, and the client tests' worker's


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


#: Worker runs at once. A run is a worker process with its fork server and attempt processes, then
#: a restarted worker in this process; about half of it is CPU (interpreters and imports), the rest
#: timers (the lease running out, polls), so two runs per CPU keep the CPUs busy; at most 4, since
#: every restarted worker and every wait shares this process's GIL.
PARALLEL = max(1, min(4, 2 * _cpus()))
#: How much slower than a lone one a worker starts with PARALLEL of them on the CPUs.
CONTENTION = max(1.0, PARALLEL / _cpus())
#: Headroom over the machine time a run needs. A run, from start to end, takes about twice a
#: measured start-up (times the slowdown) on a steadily loaded machine; this leaves some five
#: times that for load that rises while it runs (other jobs starting beside it).
SLACK = 10


def task_seconds(poll: float = POLL) -> float:
    """The longest a task can take to reach its end on these settings once a worker polls it.

    That is, even if every attempt is lost with its worker: for each attempt a poll to claim it,
    the lease running out (lease + grace) and a poll to see that, the backoff, and a poll to queue
    it again.
    """
    return sum(3 * poll + LEASE + GRACE + lifecycle.backoff_seconds(n, BACKOFF) for n in range(1, MAX_ATTEMPTS + 1))


@dataclass
class Clock:
    """The deadline of every wait in this module: the settings' own times plus machine time.

    Machine time (interpreters starting, pandas and pyarrow imported in each worker and its fork
    server, the store probe: CPU-bound, seconds on a busy 2-core machine) is no setting: the
    ``clock`` fixture measures a worker process, and every run checks the machine's speed again
    by how long its own worker takes to make its first store call (``seen``).
    """

    #: a lone worker process: start, run one tiny task, exit (measured)
    startup: float
    #: the same process: start to its first store call (measured)
    first_call: float
    #: how much slower than at the measurement the machine has been since: at least by the runs'
    #: own contention; it only grows
    slowdown: float = CONTENTION
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def deadline(self) -> float:
        return task_seconds() + SLACK * self.slowdown * self.startup

    def seen(self, first_call: float) -> None:
        """A worker took ``first_call`` seconds from its start to its first store call."""
        with self._lock:
            self.slowdown = max(self.slowdown, first_call / self.first_call)


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
    #: crash points are taken from the reference run only up to the first call of this phase:
    #: calls of ``phases`` after it come from a race, not from the flow the scenario is about
    until: str | None = None


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


def failed_for_good(service: TaskService) -> str:
    """A task failed for good by a worker that died before it dropped the task's marker."""
    task_id = submitted(service, csv_rows(ROWS))
    lease = ghost_claim(service, task_id, 60)
    update_record(
        service.store,
        service.layout,
        task_id,
        lambda r, now: lifecycle.fail(r, now, lease=lease, error=BROKE, permanent=True),
    )
    return task_id


def setup_stale_marker(service: TaskService, tmp: Path) -> str:
    return failed_for_good(service)


RAGGED = "row 3 (a 3): 3 values where the header has 2 columns"
BROKE = "broke"
SCENARIOS = {
    s.name: s
    for s in (
        Scenario("claim-and-finish", ("poll", "claim", "presence", "child", "finish"), setup_copy, Expect(rows=ROWS)),
        Scenario(
            "heartbeat-release", ("heartbeat", "release"), setup_gated, Expect(rows=ROWS), gated=True, sigterm=True
        ),
        Scenario("fail", ("fail",), setup_ragged, Expect(error=RAGGED)),
        # the expiry (tidy → failed), then the automatic retry of that failure (tidy → queued); a
        # poll may also find the task completed before its attempt has dropped the marker and drop
        # it itself (tidy:delete:active), but only in a run whose threads happen to meet there (a
        # busy machine makes that likelier): a point a crash run could wait for in vain, so tidy
        # calls after the claim are not taken; stale-marker covers that drop on every run
        Scenario("expiry-and-retry", ("tidy",), setup_expired, Expect(rows=ROWS), until="claim"),
        # a task failed for good whose worker died before dropping its marker: the poll drops it
        Scenario("stale-marker", ("tidy",), setup_stale_marker, Expect(error=BROKE)),
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
        """The calls traced so far (a line still being written, with no newline yet, is left for later)."""
        if not self.trace.exists():
            return []
        return [json.loads(line) for line in self.trace.read_text().split("\n")[:-1] if line.strip()]

    def called(self, prefix: str) -> bool:
        return any(p["point"].startswith(prefix) for p in self.points())

    def called_crash(self) -> bool:
        return any(p["crash"] for p in self.points())

    def record(self):
        return read_record(self.store, self.layout, self.task_id)[0]

    def wait_started(self, proc: Proc, started: float, clock: Clock) -> None:
        """Wait for the worker's first store call, and tell the clock how long that took."""
        wait_run(self, self.points, clock.deadline, "the worker's first store call", proc)
        clock.seen(self.points()[0]["t"] - started)

    def settled(self) -> bool:
        """At its end: terminal, and its ``active/`` marker gone."""
        marked = {self.layout.task_id_of(k) for k in self.store.list_keys(self.layout.active_root)}
        return terminal(self) and self.task_id not in marked

    def log(self) -> str:
        path = self.tmp / "worker.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return f"--- {path} (end) ---\n{text[-3000:]}"


def new_run(tmp: Path, scenario: Scenario) -> Run:
    tmp.mkdir(parents=True, exist_ok=True)
    store, layout = LocalStore(tmp / "store"), Layout()
    service = TaskService(store, layout)
    return Run(tmp, store, layout, service, scenario.setup(service, tmp))


def worker_process(tmp: Path, crash_at: str | None, *more: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a worker process with the hook, on the store in ``tmp``."""
    env = child_env(
        S3TASK_LEASE_GRACE_SECONDS=str(GRACE),
        S3TASK_RETRY_BACKOFF_SECONDS=str(BACKOFF),
        S3TASK_TEST_CRASH_TRACE=str(tmp / "trace.jsonl"),
        S3TASK_TEST_CRASH_AT=crash_at or "",
        S3TASK_TEST_CRASH_ONCE=str(tmp / "crashed"),
        # No inbox sweeps: their lease's calls (its release at a graceful stop among them) are no task's,
        # and a crash at each of a sweep's writes is tests/contract/test_inboxes.py's.
        S3TASK_INBOX_INTERVAL="0",
    )
    args = ["--poll-interval", str(POLL), "--lease-seconds", str(LEASE), "--max-attempts", str(MAX_ATTEMPTS)]
    args += ["--handlers", "worker_handlers", "--handlers", "crashhook", *more]
    return worker_args(str(tmp / "store"), *args, worker_id="victim"), env


def start_worker(run: Run, crash_at: str | None) -> Proc:
    cmd, env = worker_process(run.tmp, crash_at)
    return Proc(cmd, env=env, log=run.tmp / "worker.log", name="victim")


@pytest.fixture(scope="module")
def clock(tmp_path_factory: pytest.TempPathFactory) -> Clock:
    """Measure, right now, how long one worker process takes to start, load its fork server, run one
    tiny task and exit.

    A measurement, not a wait for a condition: the process ends by itself (``--once``); a hang
    would be caught by the suite's per-test timeout.
    """
    tmp = tmp_path_factory.mktemp("startup")
    queue_tiny_task(tmp / "store")
    cmd, env = worker_process(tmp, None, "--once")
    started = time.monotonic()
    done = run_command(cmd, env=env, timeout=None)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    first = json.loads((tmp / "trace.jsonl").read_text().splitlines()[0])
    return Clock(startup=elapsed, first_call=first["t"] - started)


def wait_run(run: Run, condition: Callable[[], object], timeout: float, what: str, proc: Proc | None = None) -> None:
    """``wait_for``, failing with the worker's log; with ``proc``, that worker exiting fails the wait at once."""

    def check() -> object:
        if condition():
            return True
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the worker exited ({proc.returncode}) before: {what}")
        return False

    try:
        wait_for(check, timeout=timeout, what=what)
    except AssertionError as e:
        raise AssertionError(f"{run.tmp}: {e}\n{run.log()}") from None


def worker_settings(store: Path, worker_id: str, **more: Any) -> Settings:
    """An in-process worker with the settings the deadlines are derived from."""
    return Settings(
        store=str(store),
        worker_id=worker_id,
        poll_interval=RESCUER_POLL,
        lease_seconds=LEASE,
        lease_grace_seconds=GRACE,
        retry_backoff_seconds=BACKOFF,
        max_attempts=MAX_ATTEMPTS,
        **more,
    )


@contextlib.contextmanager
def rescuer(run: Run, clock: Clock) -> Iterator[Worker]:
    """The restarted worker: a fresh one (in this process) with none of the dead one's state."""
    settings = worker_settings(run.tmp / "store", "rescuer", handlers=("worker_handlers",))
    worker = Worker(settings, store=LocalStore(run.tmp / "store"), layout=run.layout)
    thread = threading.Thread(target=worker.run_forever, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stop(timeout=clock.deadline)
        thread.join(clock.deadline)


def terminal(run: Run) -> bool:
    try:
        return run.record().is_terminal
    except S3TaskError:
        return False


def finish(proc: Proc, clock: Clock) -> None:
    proc.stop(clock.deadline)


def reference(tmp: Path, scenario: Scenario, clock: Clock) -> list[str]:
    """Run the scenario once without a crash; return its crash points in call order."""
    run = new_run(tmp, scenario)
    started = time.monotonic()
    proc = start_worker(run, None)
    try:
        run.wait_started(proc, started, clock)
        if scenario.gated:
            wait_run(run, lambda: run.called("heartbeat:put"), clock.deadline, "the first heartbeat", proc)
        if scenario.sigterm:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(clock.deadline) == 0, run.log()
        if scenario.gated:
            (run.tmp / "gate").touch()
        if scenario.sigterm:
            with rescuer(run, clock):
                wait_run(run, run.settled, clock.deadline, "finished after the release")
        else:
            wait_run(run, run.settled, clock.deadline, f"{scenario.name} reference run finished", proc)
    finally:
        finish(proc, clock)
    verdict = check_invariants(run.store, run.layout, {run.task_id: scenario.expect})
    assert verdict.ok, verdict
    points: list[str] = []
    for p in run.points():
        phase = p["point"].split(":", 1)[0]
        occurrence = int(p["point"].rsplit("#", 1)[1])
        if phase == scenario.until:
            break
        if phase not in scenario.phases or p["point"] in points:
            continue
        if phase in ("poll", "presence", "heartbeat") and occurrence > 1:
            continue  # the same call again: covered by its first occurrence
        points.append(p["point"])
    return points


def crash_at(tmp: Path, scenario: Scenario, point: str, clock: Clock) -> str:
    """Kill a worker right after ``point``, restart, and check; returns how the worker died."""
    run = new_run(tmp, scenario)
    started = time.monotonic()
    proc = start_worker(run, point)
    try:
        run.wait_started(proc, started, clock)
        if point.startswith("release:"):
            wait_run(run, lambda: run.record().status == "running", clock.deadline, "claimed", proc)
            wait_run(run, lambda: run.called("heartbeat:put"), clock.deadline, "the first heartbeat", proc)
            proc.send_signal(signal.SIGTERM)
        # the hook creates the "crashed" file, then traces the call, then kills: wait for the trace
        wait_run(run, lambda: run.called_crash() or proc.poll() is not None, clock.deadline, point)
        assert (run.tmp / "crashed").exists(), f"{scenario.name}: the worker never made the call {point}\n{run.log()}"
        crashed = [p for p in run.points() if p["crash"]]
        assert [p["point"] for p in crashed] == [point]
        if scenario.gated:
            (run.tmp / "gate").touch()
        if crashed[0]["role"] == "worker":
            assert proc.wait(clock.deadline) == -signal.SIGKILL
            with rescuer(run, clock):
                wait_run(run, lambda: terminal(run), clock.deadline, f"recovered after a crash at {point}")
        else:  # the attempt's child died: its worker carries on
            wait_run(run, lambda: terminal(run), clock.deadline, f"recovered after a child crash at {point}", proc)
    finally:
        finish(proc, clock)
    verdict = check_invariants(run.store, run.layout, {run.task_id: scenario.expect})
    assert verdict.ok, (point, verdict, run.record().history)
    assert verdict.lost == verdict.duplicated == []
    return crashed[0]["role"]


def test_worker_crash_points(tmp_path: Path, clock: Clock) -> None:
    """Every scenario's reference run, then every crash point, a few worker processes at a time.

    A scenario's crash points are queued as soon as its reference run is done.
    """
    points: dict[str, list[str]] = {}
    runs: dict[tuple[str, str], Future[str]] = {}
    with ThreadPoolExecutor(PARALLEL) as pool:
        try:
            found = {pool.submit(reference, tmp_path / n / "reference", s, clock): n for n, s in SCENARIOS.items()}
            for future in as_completed(found):
                name = found[future]
                points[name] = future.result()
                assert points[name], f"{name}: no store call of phases {SCENARIOS[name].phases} was traced"
                for i, p in enumerate(points[name]):
                    runs[name, p] = pool.submit(crash_at, tmp_path / name / f"crash-{i}", SCENARIOS[name], p, clock)
            roles = {key: f.result() for key, f in runs.items()}
        except BaseException:
            pool.shutdown(cancel_futures=True)  # the first failure is enough: do not start the rest
            raise
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


def work_off(store: LocalStore, layout: Layout, clock: Clock) -> None:
    """A worker (in-process) runs until every active task is finished."""
    settings = worker_settings(store.root, "w")
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

        wait_for(settled, timeout=clock.deadline, what="the worker finished the queue")
    finally:
        worker.stop(timeout=clock.deadline)
        thread.join(clock.deadline)


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
    task_id = failed_for_good(service)
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
def test_client_crash_points(name: str, clock: Clock) -> None:
    prepare, flow, recover = CLIENT_FLOWS[name]
    points = client_points(flow, prepare)
    assert len(points) >= 3, points
    for point in points:
        with temp_store() as (store, layout):
            context = prepare(TaskService(store, layout))
            with pytest.raises(Crash):
                flow(TaskService(crashing(store, point), layout), context)
            expected = recover(TaskService(store, layout), context)
            work_off(store, layout, clock)
            verdict = check_invariants(store, layout, expected)
            assert verdict.ok, (point, verdict)
            if name == "create-upload-submit":
                in_store = {layout.task_id_of(p) for p in store.list_prefixes(layout.root)} - {None}
                assert in_store == set(expected), f"after a crash at {point}: tasks left over {in_store}"
    _covered[f"client/{name}"] = points


@figures.at_end
def _publish() -> None:
    expected = {f"worker/{n}" for n in SCENARIOS} | {f"client/{n}" for n in CLIENT_FLOWS}
    if set(_covered) != expected:
        return  # only part of the crash points ran; figures are published from a full run
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
