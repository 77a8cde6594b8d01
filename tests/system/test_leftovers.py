"""Nothing left behind: what cancelled, memory-killed and killed writers leave is dropped by s3task itself.

On the local store: the staged files (``.s3task-meta/tmp/stage-*``) of a cancelled attempt, of a
memory-killed one and of an app process killed mid-upload are swept by the worker once no writer holds
them and they are a lease old (s3task.worker.leftovers); a file still being written is left alone. On
S3 (moto over HTTP): a cancelled attempt's multipart upload is aborted by the worker, not left to the
bucket's lifecycle rule.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import faults  # noqa: F401  (registers test_hog in this process too)
import leftover_handlers  # noqa: F401  (test_write_then_hang)
import worker_handlers  # noqa: F401  (test_gated)
from conftest import wait_for
from procs import PYTHON, Procs, child_env, run

from s3task.layout import Layout
from s3task.store.base import PutMode
from s3task.store.local import META_DIR, LocalStore
from s3task.tasks import Actor, TaskService

ALICE = Actor("alice")
LEASE = 2.0  # the sweep's grace is one lease


def _staged(store: Path) -> list[Path]:
    return sorted((store / META_DIR / "tmp").glob("stage-*"))


def _killed_mid_upload(store: Path) -> None:
    """A process that dies (SIGKILL) while writing an input, as an app killed mid-upload would."""
    script = textwrap.dedent(f"""
        import os, signal
        from s3task.store.base import PutMode
        from s3task.store.local import LocalStore
        with LocalStore({str(store)!r}).open_write("batch-tasks/x/input.csv", PutMode.OVERWRITE) as w:
            w.write(b"a,b\\n" * 1000)
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = run([PYTHON, "-c", script])
    assert done.returncode == -9, done.stderr


def test_staged_files_of_cancelled_and_killed_writers_are_swept(tmp_path: Path, procs: Procs, startup: float) -> None:
    root = tmp_path / "store"
    store, layout = LocalStore(root), Layout()
    service = TaskService(store, layout, max_attempts=1)
    _killed_mid_upload(root)
    assert len(_staged(root)) == 1
    gated = service.submit_file(ALICE, "cancelled", "test_gated", {"gate": str(tmp_path / "never")}, b"a,b\n1,2\n")
    hog = service.submit_file(ALICE, "memory-killed", "test_hog", None, b"a,b\n1,2\n").task_id
    env = child_env(S3TASK_MAX_CHILD_MEMORY_MB="400", S3TASK_LEASE_SECONDS=str(LEASE), S3TASK_MAX_ATTEMPTS="1")
    args = ["--poll-interval", "0.2", "--concurrency", "2", "--handlers", "worker_handlers", "--handlers", "faults"]
    worker = procs.worker(str(root), *args, worker_id="w1", env=env)
    gated_id = gated.task_id
    worker.wait_until(lambda: service.get(ALICE, gated_id).status == "running", startup + 30, "the gated task running")
    with store.open_write("batch-tasks/y/input.csv", PutMode.OVERWRITE) as alive:  # a writer that is alive
        alive.write(b"a,b\n")
        service.cancel(ALICE, gated_id)
        ended = (f"stopped {gated_id}: it was cancelled", f"lost lease on {gated_id}")  # by a poll or a heartbeat
        worker.wait_until(lambda: any(line in worker.output() for line in ended), 15, "the cancel noticed")
        worker.wait_until(lambda: service.get(ALICE, hog).status == "failed", startup + 60, "the hog memory-killed")
        assert "MB of memory" in (service.get(ALICE, hog).last_error or "")
        # Two leases at most (a sweep every lease, of files a lease old), plus a poll.
        wait_for(lambda: len(_staged(root)) == 1, timeout=2 * LEASE + 10, what=f"the sweep, not {_staged(root)}")
        assert _staged(root)[0] == Path(alive.path)  # still being written: left alone
        alive.write(b"1,2\n")
    assert store.get("batch-tasks/y/input.csv").body == b"a,b\n1,2\n"
    assert _staged(root) == []
    assert "removed" in worker.output() and "staged file" in worker.output()


def test_a_cancelled_attempts_multipart_upload_is_aborted_on_s3(s3_workers) -> None:
    rows = b"n,text\n" + b"".join(f"{i},{'x' * 60}\n".encode() for i in range(45_000))  # about 3 MB: 12 MB out
    task_id = s3_workers.submit("cancelled mid-upload", rows, "test_write_then_hang")
    worker = s3_workers.worker("--handlers", "leftover_handlers")
    client, bucket = s3_workers.store.client, s3_workers.store.bucket

    def uploads() -> list[str]:
        return [u["Key"] for u in client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]

    worker.wait_until(uploads, s3_workers.start + 60, "the attempt's output upload to start")
    s3_workers.service.cancel(ALICE, task_id)
    # Noticed at the next heartbeat, poll or progress save (each within the lease), on a busy machine.
    worker.wait_for_output(f"stopped {task_id}: it was cancelled", s3_workers.start + s3_workers.lease)
    worker.wait_until(lambda: uploads() == [], s3_workers.start, "the unfinished upload to be aborted")
    assert "aborted 1 unfinished upload(s)" in worker.output()
