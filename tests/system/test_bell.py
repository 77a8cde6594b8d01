"""The active-bell: an idle worker HEADs one object instead of listing ``active/``, and misses nothing.

Submit, retry and repair ring the bell (``s3task.markers.ring``) after the marker and record writes
they make; a long-running worker lists ``active/`` only when the bell's ETag changed since its last
listing, while that listing found work in progress, when woken, or every ``idle_list_seconds``.
The races are played out step by step in this process (a store whose hooks run one side in the
middle of the other); the costs and the time-driven events with real ``worker.py`` processes on
moto's S3 server over HTTP, each worker's requests counted by a proxy of its own.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
import worker_handlers  # noqa: F401  (registers the test task types here too)
from conftest import wait_for
from hooked import Hooked
from procs import Proc, Procs, child_env
from s3proxy import RequestLog, counting_proxy
from support import csv_rows

from s3task.config import Settings
from s3task.errors import StoreError
from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.store.s3 import S3Store
from s3task.tasks import Actor, TaskService
from s3task.worker import Worker, start_embedded, stop_embedded, wake_embedded

ALICE = Actor("alice")
LAYOUT = Layout("batch-tasks")
POLL = 0.2
LEASE = 4.0


# --- in this process: the races, step by step -------------------------------------------------


@pytest.fixture
def local(tmp_path: Path) -> Iterator[tuple[LocalStore, Worker, Hooked]]:
    store = LocalStore(tmp_path / "store")
    hooked = Hooked(store, LAYOUT)
    settings = Settings(store=str(tmp_path / "store"), worker_id="bell-w", idle_list_seconds=3600, poll_interval=5)
    worker = Worker(settings, hooked, LAYOUT)  # type: ignore[arg-type]
    yield store, worker, hooked
    worker.stop(30)


def idle(worker: Worker) -> None:
    """Poll until the worker's polls are quiet: it listed, found nothing, and the bell stands still."""
    worker.poll_once(idle_check=True)
    quiet = worker.quiet_polls
    worker.poll_once(idle_check=True)
    assert worker.quiet_polls == quiet + 1, "an idle worker with a silent bell listed again"


def created(service: TaskService) -> str:
    task_id = service.create(ALICE, "bell", "copy").record.task_id
    service.upload_input(ALICE, task_id, csv_rows(3))
    return task_id


def status(store: Any, task_id: str) -> str:
    return read_record(store, LAYOUT, task_id)[0].status


@pytest.mark.parametrize("moment", ["after the marker", "after the record, before the bell"])
@pytest.mark.parametrize("listing", [False, True], ids=["quiet poll", "listing poll"])
def test_a_poll_in_the_middle_of_a_submit_does_not_lose_the_task(local, moment: str, listing: bool) -> None:
    store, worker, hooked = local
    service = TaskService(hooked, LAYOUT)  # type: ignore[arg-type]
    idle(worker)
    task_id = created(service)
    seen: list[int] = []

    def poll() -> None:
        if listing:
            worker.wake()  # this poll lists whatever the bell says
        before = worker.listings
        seen.append(worker.poll_once(idle_check=True))
        assert worker.listings == before + listing

    hooked.before_put[LAYOUT.active_key(task_id) if moment == "after the marker" else LAYOUT.bell_key] = poll
    if moment == "after the marker":  # the hook runs before the marker's PUT: poll after it instead
        hooked.before_put[LAYOUT.status_key(task_id)] = hooked.before_put.pop(LAYOUT.active_key(task_id))
    service.submit(ALICE, task_id)
    if listing and moment != "after the marker":
        assert seen == [1], "a listing after the record write claimed the task"
    else:
        assert seen == [0], "the poll in the middle of the submit started nothing (the task was not queued yet)"
        assert worker.poll_once(idle_check=True) == 1, "the next poll after the ring claimed the task"
    wait_for(lambda: status(store, task_id) == "completed", timeout=60, what="completed")


def test_a_bell_rung_during_a_listing_makes_the_next_poll_list(local) -> None:
    store, worker, hooked = local
    service = TaskService(store, LAYOUT)  # straight to the store: only the worker's listing is hooked
    idle(worker)
    task_id = created(service)
    worker.wake()  # this poll lists; the whole submit (marker, record, bell) lands after its answer
    hooked.after_list = lambda: service.submit(ALICE, task_id)
    assert worker.poll_once(idle_check=True) == 0
    assert status(store, task_id) == "queued"
    assert worker.poll_once(idle_check=True) == 1, "the ring seen after the bell was read made this poll list"
    wait_for(lambda: status(store, task_id) == "completed", timeout=60, what="completed")


def test_an_embedded_submit_or_retry_wakes_the_worker_at_once(tmp_path: Path) -> None:
    """Poll interval 5 s: a task picked up within a second of its submit was woken, not polled."""
    interval = 5.0
    settings = Settings(store=str(tmp_path / "store"), worker_id="embedded-bell", poll_interval=interval,
                        max_attempts=1, handlers=("worker_handlers",))  # fmt: skip
    embedded = start_embedded(settings)
    worker = embedded.worker
    store, layout = worker.store, worker.layout
    service = TaskService(store, layout, max_attempts=1, on_queued=wake_embedded)

    def just_polled() -> None:
        """Wait for the next quiet poll: without a wake, the one after it is a whole interval away."""
        quiet = worker.quiet_polls
        wait_for(lambda: worker.quiet_polls > quiet, timeout=3 * interval + 30, what="a quiet poll")

    def claimed_within(act: Callable[[], object], task_id: str, attempt: int) -> float:
        """Seconds from the start of ``act`` (a submit, a retry) to the task's claim."""
        started = time.monotonic()
        act()
        wait_for(lambda: read_record(store, layout, task_id)[0].attempt_id >= attempt, timeout=3 * interval,
                 interval=0.01, what=f"attempt {attempt} claimed")  # fmt: skip
        return time.monotonic() - started

    try:
        ok = created(service)
        just_polled()
        submit_to_claim = claimed_within(lambda: service.submit(ALICE, ok), ok, 1)
        wait_for(lambda: status(store, ok) == "completed", timeout=60, what="completed")

        bad = service.submit_file(ALICE, "boom", "test_boom", None, csv_rows(2)).task_id
        wait_for(lambda: status(store, bad) == "failed", timeout=60, what="failed for good")
        just_polled()
        retry_to_claim = claimed_within(lambda: service.retry(ALICE, bad), bad, 2)
    finally:
        stop_embedded()
    assert submit_to_claim < interval / 5, f"submit → claim took {submit_to_claim:.2f} s (poll every {interval} s)"
    assert retry_to_claim < interval / 5, f"retry → claim took {retry_to_claim:.2f} s (poll every {interval} s)"


def test_the_apps_service_wakes_the_apps_embedded_worker(tmp_path: Path) -> None:
    """The pages (and /api, which shares their TaskService) call the embedded worker's wake after a submit."""
    from ui import services

    settings = Settings(store=str(tmp_path / "store"), worker_id="app-embedded")
    services._embedded_worker.clear()  # a cached answer from another test would skip the wiring
    try:
        assert services.embedded_worker(settings).embedded
        assert services.service_for(settings).on_queued is wake_embedded
    finally:
        stop_embedded()
        services._embedded_worker.clear()


# --- real worker processes on moto over HTTP: what an idle worker asks, and time-driven events ---


class Log(RequestLog):
    """The proxy's log, with the listings an idle worker makes."""

    def listings(self, start: float = 0.0) -> list[float]:
        return [t for t, method, path in self.since(start) if method == "GET" and is_listing(path)]


def is_listing(path: str) -> bool:
    return "list-type=" in path or "prefix=" in path


def is_bell(method: str, path: str) -> bool:
    return method == "HEAD" and path.split("?")[0].endswith("/active-bell")


@dataclass
class Env:
    store: S3Store  # straight to moto: the test's own requests are not counted
    service: TaskService
    endpoint: str
    url: str
    procs: Procs
    start: float  # a worker process's measured start-up here, added to every wait
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    @property
    def tmp(self) -> Path:
        return self.procs.tmp

    def worker(self, name: str, **settings: str) -> tuple[Proc, Log]:
        """A ``worker.py`` whose every request goes through a counting proxy of its own."""
        proxy, log = self.stack.enter_context(counting_proxy(self.endpoint, Log()))
        env = {"AWS_ENDPOINT_URL_S3": proxy, **{f"S3TASK_{k.upper()}": v for k, v in settings.items()}}
        args = ["--poll-interval", str(POLL), "--lease-seconds", str(LEASE), "--handlers", "worker_handlers"]
        return self.procs.worker(self.url, *args, worker_id=name, env=env), log

    def record(self, task_id: str):
        return read_record(self.store, LAYOUT, task_id)[0]

    def bell(self) -> str | None:
        try:
            return self.store.head(LAYOUT.bell_key).etag
        except Exception:
            return None

    def idle(self, log: Log) -> float:
        """Wait until the worker's polls are bell HEADs only (it listed and found nothing to do)."""

        def quiet() -> bool:
            recent = log.since(time.monotonic() - 6 * POLL)
            return len(recent) >= 3 and all(is_bell(m, p) for _, m, p in recent)

        wait_for(quiet, timeout=30 + self.start, what="the worker idle: bell HEADs only")
        return time.monotonic()


@pytest.fixture
def s3(moto_http_bucket, procs: Procs, startup: float) -> Iterator[Env]:
    endpoint, bucket = moto_http_bucket
    procs.env = child_env(
        endpoint=endpoint,
        S3TASK_LEASE_GRACE_SECONDS="1",
        S3TASK_RETRY_BACKOFF_SECONDS="0.5",
        S3TASK_IDLE_LIST_SECONDS="3600",  # no safety-net listing unless a test asks for one
    )
    store = S3Store(bucket, client=boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1"))
    e = Env(store, TaskService(store, LAYOUT), endpoint, f"s3://{bucket}/batch-tasks", procs, startup)
    with e.stack:
        yield e
        procs.close()  # while their proxies still answer


def submit(e: Env, service: TaskService, task_type: str = "copy", params: dict | None = None) -> str:
    return service.submit_file(ALICE, task_type, task_type, params, csv_rows(3)).task_id


def test_an_idle_worker_heads_the_bell_each_poll_and_lists_only_after_a_ring(s3: Env) -> None:
    _, log = s3.worker("idle-1")
    since = s3.idle(log)
    polls = 20
    wait_for(lambda: len(log.since(since)) >= polls, timeout=10 * polls * POLL, what=f"{polls} idle polls")
    asked = log.since(since)
    others = [(m, p) for _, m, p in asked if not is_bell(m, p)]
    assert not others, f"an idle worker asked for nothing but the bell: {others}"
    seconds = asked[-1][0] - asked[0][0]
    assert seconds >= (len(asked) - 1) * POLL * 0.8, f"{len(asked)} HEADs in {seconds:.2f} s: one per poll at most"

    submitted = time.monotonic()
    task_id = submit(s3, s3.service)
    wait_for(lambda: s3.record(task_id).status == "completed", timeout=30 + s3.start, what="completed")
    first = min(log.listings(submitted))
    assert first - submitted <= 2 * POLL + 1, f"the ring was heard {first - submitted:.2f} s after the submit"
    s3.idle(log)  # and back to HEADs only once the task is done


def test_a_failed_ring_is_caught_by_the_safety_net(s3: Env) -> None:
    net = 2.0
    _, log = s3.worker("net-1", idle_list_seconds=str(net))
    since = s3.idle(log)
    listed = wait_for(lambda: (ts := log.listings(since))[2:] and ts, timeout=4 * net + 10, what="net listings")
    gaps = [b - a for a, b in itertools.pairwise(listed)]
    assert all(net - 2 * POLL <= g <= net + 4 * POLL for g in gaps), f"idle listings {gaps} s apart, not every {net} s"
    hooked = Hooked(s3.store, LAYOUT)

    def refuse() -> None:
        raise StoreError("the store refused the bell")

    hooked.before_put[LAYOUT.bell_key] = refuse
    rung = s3.bell()
    submitted = time.monotonic()
    task_id = submit(s3, TaskService(hooked, LAYOUT))  # type: ignore[arg-type]
    assert s3.bell() == rung, "the bell did not ring"
    wait_for(lambda: s3.record(task_id).attempt_id >= 1, timeout=net + 10 * POLL + 5, what="claimed by the net")
    assert time.monotonic() - submitted <= net + 10 * POLL + 5


def test_a_retry_that_comes_due_with_nothing_else_happening(s3: Env) -> None:
    backoff = 2.0
    _, log = s3.worker("retry-1", retry_backoff_seconds=str(backoff), max_attempts="2")
    s3.idle(log)
    task_id = submit(s3, TaskService(s3.store, LAYOUT, max_attempts=2), "test_boom")
    wait_for(lambda: s3.record(task_id).status == "failed", timeout=30 + s3.start, what="attempt 1 failed")
    rung = s3.bell()
    waiting = time.monotonic()
    record = wait_for(
        lambda: (r := s3.record(task_id)).final and r, timeout=backoff + 30 + s3.start, what="attempt 2, final"
    )
    assert record.attempt_id == 2 and record.failed_attempts == 2
    assert s3.bell() == rung, "nothing rang the bell: the failed task's marker kept the worker listing"
    listed = log.listings(waiting)
    assert len(listed) >= backoff / POLL / 2, f"{len(listed)} listings while the retry was waiting"


def test_a_lease_that_runs_out_is_noticed_by_a_worker_with_nothing_to_do(s3: Env) -> None:
    gate = s3.tmp / "gate"
    task_id = submit(s3, s3.service, "test_gated", {"gate": str(gate)})
    victim, _ = s3.worker("victim")
    wait_for(lambda: s3.record(task_id).status == "running", timeout=30 + s3.start, what="claimed by the victim")
    _, log = s3.worker("rescuer")
    wait_for(lambda: len(log.listings()) >= 2, timeout=30 + s3.start, what="the rescuer listing")
    rung = s3.bell()
    victim.kill()
    victim.wait(10)
    killed = time.monotonic()
    gate.touch()
    record = wait_for(
        lambda: (r := s3.record(task_id)).status == "completed" and r, timeout=LEASE + 30 + s3.start, what="rescued"
    )
    assert record.attempt_id == 2 and record.worker_id == "rescuer"
    assert s3.bell() == rung, "no ring: the running task's marker kept the rescuer listing until the lease ran out"
    assert len(log.listings(killed)) >= LEASE / POLL / 2


def test_the_app_server_wires_the_wake_before_any_page_runs(tmp_path: Path, monkeypatch) -> None:
    """An /api submit right after the app starts (no page has run yet) still wakes the app's worker."""
    from ui import server

    monkeypatch.setenv("S3TASK_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("S3TASK_WORKER_ID", "app-embedded")
    try:
        server._start_worker()  # what the app's server does on start-up (its lifespan)
        assert server.service_for(Settings.load()).on_queued is wake_embedded
    finally:
        stop_embedded()
