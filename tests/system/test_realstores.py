"""End to end on S3 servers no one here wrote (tests/realstores.py): SeaweedFS and LocalStack.

Per store: tasks submitted through the CLI and two real worker processes racing for them (each task
processed once, outputs exact); a worker SIGKILLed mid-task and its task recovered on attempt 2;
a browser's transfers through presigned URLs — on SeaweedFS, which checks signatures, a tampered
signature or another Content-Type is refused (LocalStack checks none: docs/STORES.md).
"""

from __future__ import annotations

import signal
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
import requests
import worker_handlers  # noqa: F401  (registers the test task types here too)
from conftest import REAL_STORE_KINDS, wait_for
from procs import Proc, Procs, child_env, cli
from support import csv_rows, no_active_markers

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.s3 import _DATA_CONFIG, _RECORD_CONFIG, S3Store
from s3task.tasks import Actor, TaskService

ALICE = Actor("alice")
#: The workers' lease, poll interval and grace (small, so a killed worker's task comes back soon).
LEASE, POLL, GRACE = 4.0, 0.2, 1.0
#: From a worker's death to its task's lease running out and a poll seeing it: every recovery
#: wait is this, plus the rescuer's measured start-up, plus the task's own processing.
RECOVERY = LEASE + GRACE + 2 * POLL


class Real:
    """One fresh bucket on a real server, this process's service on it, and worker processes."""

    def __init__(self, server: Any, procs: Procs, start: float) -> None:
        self.server = server
        bucket = server.new_bucket()
        self.store = S3Store(bucket, client=server.client(_RECORD_CONFIG), data_client=server.client(_DATA_CONFIG))
        self.layout = Layout("batch-tasks")
        self.service = TaskService(self.store, self.layout)
        self.url = f"s3://{bucket}/batch-tasks"
        self.procs = procs
        procs.env = {**child_env(S3TASK_LEASE_GRACE_SECONDS=str(GRACE), S3TASK_RETRY_BACKOFF_SECONDS="0.5")}
        procs.env.update(server.env)
        self.start = start  # a worker process's measured start-up here (the ``startup`` fixture)

    def worker(self, *extra: str, name: str) -> Proc:
        args = ["--poll-interval", str(POLL), "--lease-seconds", str(LEASE), "--handlers", "worker_handlers"]
        return self.procs.worker(self.url, *args, *extra, worker_id=f"{name}-{len(self.procs.all)}")

    def record(self, task_id: str) -> Any:
        return read_record(self.store, self.layout, task_id)[0]

    def done(self, task_id: str, status: str = "completed") -> Any:
        record = self.record(task_id)
        return record if record.status == status else None

    def outputs(self, task_id: str) -> list[str]:
        return [k for k in self.store.list_keys(self.layout.task_prefix(task_id)) if "output-attempt-" in k]


@pytest.fixture(params=REAL_STORE_KINDS)
def real(request: pytest.FixtureRequest, procs: Procs, startup: float) -> Real:
    return Real(request.getfixturevalue(request.param), procs, startup)


def test_cli_submits_and_two_racing_workers_process_each_task_once(real: Real) -> None:
    ids = []
    for n in range(1, 7):
        if n <= 2:  # through the CLI, as an operator would; the rest straight to the store (quicker)
            path = real.procs.tmp / f"in-{n}.csv"
            path.write_bytes(csv_rows(n))
            done = cli("--store", real.url, "submit", str(path), "--name", f"t{n}", env=real.procs.env)
            assert done.returncode == 0, done.stderr
            ids.append(done.stdout.strip())
        else:
            ids.append(real.service.submit_file(ALICE, f"t{n}", "copy", None, csv_rows(n)).task_id)
    workers = [real.worker(name="race") for _ in range(2)]  # both see every task queued: they race
    for task_id in ids:
        wait_for(lambda t=task_id: real.done(t), timeout=60 + 2 * real.start, what=f"{task_id} completed")
    claims = 0
    for n, task_id in enumerate(ids, start=1):
        record = real.record(task_id)
        assert record.attempt_id == 1, (task_id, record.history)
        claims += sum(1 for e in record.history if e["event"] == "claim")
        assert real.outputs(task_id) == [real.layout.output_key(task_id, 1)]
        out = real.store.get(record.output_object_path).body.decode().splitlines()
        assert len(out) - 1 == n == record.row_count == record.processed_count
    assert claims == len(ids)  # the losers of each race claimed nothing
    no_active_markers(real.store, real.layout, 20 + real.start)
    for w in workers:  # a worker that lost every race may still be starting: stop it once it runs
        w.worker_ready(20 + real.start)
        w.send_signal(signal.SIGTERM)
    for w in workers:
        assert w.wait(20 + real.start) == 0, w.output()


def test_sigkill_mid_task_is_recovered_on_attempt_two(real: Real) -> None:
    gate = real.procs.tmp / "gate"
    task_id = real.service.submit_file(ALICE, "held", "test_gated", {"gate": str(gate)}, csv_rows(5)).task_id
    victim = real.worker(name="victim")
    wait_for(lambda: real.done(task_id, "running"), timeout=RECOVERY + real.start, what="claimed")
    victim.kill()
    gate.touch()
    real.worker(name="rescuer")
    record = wait_for(lambda: real.done(task_id), timeout=RECOVERY + 2 * real.start + 30, what="recovered")
    assert (record.attempt_id, record.failed_attempts) == (2, 1)
    assert record.output_object_path == real.layout.output_key(task_id, 2)
    assert real.outputs(task_id) == [real.layout.output_key(task_id, 2)]  # the killed attempt left none
    assert len(real.store.get(record.output_object_path).body.decode().splitlines()) == 6


def _tampered(url: str) -> str:
    """``url`` with the last character of its signature changed."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    sig = query["X-Amz-Signature"]
    query["X-Amz-Signature"] = sig[:-1] + ("0" if sig[-1] != "0" else "1")
    return urlunsplit(parts._replace(query=urlencode(query)))


def test_presigned_upload_and_download(real: Real) -> None:
    body = csv_rows(4)
    created = real.service.create(ALICE, "direct", "copy")
    task_id, url = created.record.task_id, created.upload_url
    assert url and url.startswith(real.server.endpoint + "/")  # straight to the store, not through an app
    csv = {"Content-Type": "text/csv"}
    checks = real.server.kind == "seaweedfs"
    if checks:  # SeaweedFS verifies the signature: a tampered one, or a type it did not sign, is refused
        assert requests.put(_tampered(url), data=b"evil,row\n", headers=csv, timeout=10).status_code == 403
        other = {"Content-Type": "application/octet-stream"}
        assert requests.put(url, data=b"evil,row\n", headers=other, timeout=10).status_code == 403
        assert real.store.list_keys(real.layout.task_prefix(task_id)) == [real.layout.status_key(task_id)]
    assert requests.put(url, data=body, headers=csv, timeout=10).ok
    real.service.submit(ALICE, task_id)
    real.worker("--once", name="once").wait(60 + real.start)
    assert real.done(task_id), real.record(task_id).history
    link = real.service.output_url(ALICE, task_id)
    assert link and link.startswith(real.server.endpoint + "/")
    got = requests.get(link, timeout=10)
    assert got.ok and got.content == real.store.get(real.record(task_id).output_object_path).body
    assert len(got.content.decode().splitlines()) == 5
    if checks:
        assert requests.get(_tampered(link), timeout=10).status_code == 403
