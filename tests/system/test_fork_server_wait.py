"""A worker whose fork server never becomes ready: a claimed task does not stay "running" for ever,
and a cancel is noticed while the attempt waits (tests/never_ready.py makes such a fork server)."""

from __future__ import annotations

from pathlib import Path

from procs import Procs

from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ALICE = Actor("alice")


def _service(store_dir: Path) -> TaskService:
    return TaskService(LocalStore(store_dir), Layout())


def _running(procs: Procs, service: TaskService, task_id: str, timeout: float) -> None:
    worker = procs.all[-1]
    worker.wait_until(lambda: service.get(ALICE, task_id).status == "running", timeout, f"{task_id} claimed")


def test_a_cancel_is_noticed_while_the_fork_server_loads(tmp_path: Path, procs: Procs, startup: float) -> None:
    store = tmp_path / "store"
    service = _service(store)
    task_id = service.submit_file(ALICE, "waits", "copy", None, b"a,b\n1,2\n").task_id
    # A lease of a minute: its renewal (every 20 s) would notice the cancel too, but only much later.
    env = {"S3TASK_LEASE_SECONDS": "60", "S3TASK_STALL_TIMEOUT": "600", "S3TASK_POLL_INTERVAL": "0.2"}
    worker = procs.worker(str(store), "--handlers", "never_ready", worker_id="w1", env=env)
    _running(procs, service, task_id, startup + 30)
    service.cancel(ALICE, task_id)
    worker.wait_for_output(f"stopped {task_id}: it was cancelled", 10)
    assert service.get(ALICE, task_id).status == "abandoned"


def test_a_fork_server_that_never_loads_fails_the_attempt_in_time(tmp_path: Path, procs: Procs, startup: float) -> None:
    store = tmp_path / "store"
    service = _service(store)
    task_id = service.submit_file(ALICE, "waits", "copy", None, b"a,b\n1,2\n").task_id
    env = {"S3TASK_LEASE_SECONDS": "60", "S3TASK_STALL_TIMEOUT": "3", "S3TASK_POLL_INTERVAL": "0.2"}
    worker = procs.worker(str(store), "--handlers", "never_ready", worker_id="w1", env=env)
    _running(procs, service, task_id, startup + 30)

    def failed() -> bool:
        return service.get(ALICE, task_id).status == "failed"

    worker.wait_until(failed, 3 + 10, f"{task_id} failed after the 3 s stall timeout")
    record = service.get(ALICE, task_id)
    assert record.last_error == "the worker's process for tasks was not ready after 3 seconds"
    assert not record.final  # the worker's trouble, not the task's: it is retried
