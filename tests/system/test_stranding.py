"""Nothing a worker claims or a person queues is stranded.

Whatever escapes after a claim ends that attempt through the lifecycle (the
worker keeps running). (A marker that a retry race needs back, put back through
store errors or on the next poll, in this process: tests/unit/test_markers_kept.py.)

Leases here are long (60 s) and every wait is shorter than half of one, so a
lease expiry can never be what rescues a task: the worker itself must end it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import wait_for

from s3task import lifecycle
from s3task.config import Settings
from s3task.layout import Layout
from s3task.record import TaskRecord
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.worker import attempt as attempt_mod
from s3task.worker.loop import Worker

ALICE = Actor("alice")
SETTINGS = {"poll_interval": 0.05, "lease_seconds": 60.0, "retry_backoff_seconds": 0.1}
WITHIN = SETTINGS["lease_seconds"] / 2  # well before the lease (plus grace) could expire


@pytest.fixture
def env(tmp_path: Path) -> tuple[LocalStore, Layout, TaskService]:
    store, layout = LocalStore(tmp_path / "store"), Layout()
    return store, layout, TaskService(store, layout)


@pytest.fixture
def worker(env, tmp_path: Path) -> Iterator[Worker]:
    store, layout, _ = env
    w = Worker(Settings(store=str(tmp_path / "store"), worker_id="w1", **SETTINGS), store=store, layout=layout)
    thread = threading.Thread(target=w.run_forever, daemon=True)
    thread.start()
    yield w
    w.stop(timeout=20)
    thread.join(20)


def submit(service: TaskService, name: str) -> str:
    task_id = service.create(ALICE, name, "copy").record.task_id
    service.upload_input(ALICE, task_id, b"a,b\n1,2\n")
    service.submit(ALICE, task_id)
    return task_id


def record(env, task_id: str) -> TaskRecord:
    store, layout, _ = env
    return read_record(store, layout, task_id)[0]


def test_an_unexpected_error_in_the_attempt_fails_it_and_the_worker_goes_on(
    env, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = attempt_mod.Attempt._start_child
    broken = threading.Event()
    broken.set()

    def start_child(self):
        if broken.is_set():
            raise RuntimeError("boom after the claim")
        return real(self)

    monkeypatch.setattr(attempt_mod.Attempt, "_start_child", start_child)
    task_id = submit(env[2], "first")
    failed = wait_for(lambda: (r := record(env, task_id)).status == "failed" and r, timeout=WITHIN)
    assert failed.attempt_id == 1 and not failed.final
    assert failed.last_error == "the worker hit an unexpected error: RuntimeError: boom after the claim"
    broken.clear()  # the worker is still there: the automatic retry completes the task
    done = wait_for(lambda: (r := record(env, task_id)).status == "completed" and r, timeout=WITHIN)
    assert (done.attempt_id, done.failed_attempts) == (2, 1)


def test_an_unexpected_error_in_a_heartbeat_fails_the_attempt(
    env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import worker_handlers  # noqa: F401  (the gated task type)

    store, layout, service = env

    def heartbeat(*args, **kwargs):
        raise KeyError("a bug in the heartbeat")

    monkeypatch.setattr(lifecycle, "heartbeat", heartbeat)
    settings = Settings(
        store=str(tmp_path / "store"),
        worker_id="w2",
        handlers=("worker_handlers",),
        **{**SETTINGS, "lease_seconds": 3.0},
    )
    w = Worker(settings, store=store, layout=layout)
    task_id = service.create(ALICE, "held", "test_gated", {"gate": str(tmp_path / "never")}).record.task_id
    service.upload_input(ALICE, task_id, b"a\n1\n")
    service.submit(ALICE, task_id)
    thread = threading.Thread(target=w.run_forever, daemon=True)
    thread.start()
    try:
        # First heartbeat after lease/3 = 1 s; an expiry would need lease + grace = 13 s and say so.
        failed = wait_for(lambda: (r := record(env, task_id)).status == "failed" and r, timeout=WITHIN)
        assert failed.last_error == "the worker hit an unexpected error: KeyError: 'a bug in the heartbeat'"
        wait_for(lambda: not w.task_ids(), timeout=WITHIN, what="the attempt thread gone")
    finally:
        w.stop(timeout=20)
        thread.join(20)


def test_a_claim_whose_attempt_cannot_start_is_ended_at_once(
    env, worker: Worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = attempt_mod.Attempt.__init__
    broken = threading.Event()
    broken.set()

    def init(self, *args, **kwargs):
        if broken.is_set():
            raise TypeError("cannot build the attempt")
        real(self, *args, **kwargs)

    monkeypatch.setattr("s3task.worker.loop.Attempt.__init__", init)
    task_id = submit(env[2], "unstartable")
    failed = wait_for(lambda: (r := record(env, task_id)).status == "failed" and r, timeout=WITHIN)
    assert failed.last_error == "the worker could not start the attempt: TypeError: cannot build the attempt"
    broken.clear()
    wait_for(lambda: record(env, task_id).status == "completed", timeout=WITHIN)


def test_an_error_while_claiming_gives_the_slot_back(env, worker: Worker, monkeypatch: pytest.MonkeyPatch) -> None:
    """An OSError (disk full, EIO) in a claim used to keep the worker's only slot: it polled on, claiming nothing."""
    from s3task.worker.claim import Claims  # the worker's part that claims

    real = Claims._claim
    calls = []

    def claim(self, record, etag):
        calls.append(record.task_id)
        if len(calls) == 1:
            raise OSError(28, "No space left on device")
        return real(self, record, etag)

    monkeypatch.setattr(Claims, "_claim", claim)
    task_id = submit(env[2], "after a bad claim")
    wait_for(lambda: record(env, task_id).status == "completed", timeout=WITHIN, what="the task claimed again")
    assert len(calls) >= 2


class PresenceFails(LocalStore):
    def put(self, key, body, mode, **kwargs):
        if "/workers/" in key:
            raise IsADirectoryError(21, "Is a directory", key)
        return super().put(key, body, mode, **kwargs)


def test_a_presence_write_that_fails_with_an_os_error_stops_nothing(tmp_path: Path) -> None:
    store, layout = PresenceFails(tmp_path / "s"), Layout()
    service = TaskService(store, layout)
    w = Worker(Settings(store=str(tmp_path / "s"), worker_id="w4", **SETTINGS), store=store, layout=layout)
    thread = threading.Thread(target=w.run_forever, daemon=True)
    thread.start()
    try:
        task_id = submit(service, "worker with a broken presence file")
        wait_for(lambda: read_record(store, layout, task_id)[0].status == "completed", timeout=WITHIN)
        assert thread.is_alive()
    finally:
        w.stop(timeout=20)
        thread.join(20)


def test_a_stop_while_an_attempt_is_being_started_waits_for_it(env, tmp_path: Path) -> None:
    """A stop (SIGTERM, the app shutting down) that drains the attempts while one is being started must
    find it started: before, an attempt listed but not yet started made the stop fail ("cannot join
    thread before it is started") and the task waited for its lease to expire."""
    store, layout, service = env
    w = Worker(Settings(store=str(tmp_path / "store"), worker_id="w1", **SETTINGS), store=store, layout=layout)
    task_id = submit(service, "started while stopping")
    entered, release = threading.Event(), threading.Event()
    beat = w.presence.beat

    def slow_beat(task_ids, **kwargs):  # the presence write made as the attempt is started, held
        if task_ids:
            entered.set()
            release.wait(WITHIN)
        return beat(task_ids, **kwargs)

    w.presence.beat = slow_beat  # type: ignore[method-assign]
    polling = threading.Thread(target=w.poll_once, daemon=True)
    polling.start()
    assert entered.wait(WITHIN), "the claim never started an attempt"
    errors: list[BaseException] = []

    def stop() -> None:
        try:
            w.stop(timeout=WITHIN)
        except BaseException as e:  # what the stop raised before
            errors.append(e)

    stopping = threading.Thread(target=stop, daemon=True)
    stopping.start()
    wait_for(w.stop_event.is_set, timeout=WITHIN, what="the stop to begin")
    release.set()
    stopping.join(WITHIN)
    polling.join(WITHIN)
    assert errors == [] and not stopping.is_alive()
    # The attempt ended through the lifecycle: released by the stop, or completed first (it is tiny).
    assert record(env, task_id).status in ("queued", "completed")
