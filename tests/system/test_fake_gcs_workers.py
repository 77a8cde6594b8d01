"""End to end on fake-gcs-server 1.54.0 (tests/realstores.py): the GCS backend under real worker processes.

``doctor`` and ``init`` through the CLI (the probe passes: single uploads' preconditions are enforced;
URLs are signed; the emulator keeps no CORS rule, so doctor names that problem even after init set one);
tasks submitted through the CLI and two worker processes racing for them (each task processed once,
outputs exact); a worker SIGKILLed mid-task and its task recovered on attempt 2, the killed attempt
leaving no output; an output downloaded through its signed URL, straight from the bucket. Workers reach
the emulator as an operator's reach GCS: ``gs://<bucket>/<prefix>``, with ``STORAGE_EMULATOR_HOST``
(anonymous requests) and a service-account key file that signs URLs.
"""

from __future__ import annotations

import signal
from typing import Any

import pytest
import requests
import worker_handlers  # noqa: F401  (registers the test task types here too)
from conftest import wait_for
from procs import Proc, Procs, child_env, cli
from support import csv_rows, no_active_markers

from s3task.layout import Layout
from s3task.records import read_record
from s3task.tasks import Actor, TaskService

ALICE = Actor("alice")
#: The workers' lease, poll interval and grace (small, so a killed worker's task comes back soon).
LEASE, POLL, GRACE = 4.0, 0.2, 1.0
#: From a worker's death to its task's lease running out and a poll seeing it.
RECOVERY = LEASE + GRACE + 2 * POLL


class OnFakeGcs:
    """One fresh bucket on fake-gcs-server, this process's service on it, and worker processes."""

    def __init__(self, server: Any, procs: Procs, start: float) -> None:
        self.server = server
        bucket = server.new_bucket()
        self.store = server.store(bucket)
        self.layout = Layout("batch-tasks")
        self.service = TaskService(self.store, self.layout)
        self.url = f"gs://{bucket}/batch-tasks"
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


@pytest.fixture
def gs(fake_gcs: Any, procs: Procs, startup: float) -> OnFakeGcs:
    return OnFakeGcs(fake_gcs, procs, startup)


def test_doctor_and_init_on_fake_gcs(gs: OnFakeGcs) -> None:
    origin = "http://127.0.0.1:8501"
    init = cli("--store", gs.url, "init", "--origin", origin, env=gs.procs.env)
    assert init.returncode == 0, init.stderr
    assert f"added: CORS rule of bucket {gs.store.bucket_name}: {origin}" in init.stdout
    rule = f"lifecycle rule of bucket {gs.store.bucket_name}: delete batch-tasks/parts/* after 7 days"
    assert f"added: {rule}" in init.stdout
    # fake-gcs-server keeps no lifecycle rule, as it keeps no CORS rule: what GCS is asked is checked in
    # tests/contract/test_gcs_parts.py (the request init makes).
    doctor = cli("--store", gs.url, "doctor", "--origin", origin, env=gs.procs.env)
    assert f"store: gs://{gs.store.bucket_name} ({gs.server.endpoint})" in doctor.stdout
    assert "ok: conditional writes are enforced" in doctor.stdout
    assert "ok: listing works" in doctor.stdout
    assert "ok: store clock is " in doctor.stdout
    assert "ok: browser URLs are signed with the credentials' own key" in doctor.stdout
    # fake-gcs-server takes a bucket's CORS rule and keeps none (docs/STORES.md): doctor says what GCS would.
    assert "problem: the bucket has no CORS rule" in doctor.stderr
    assert doctor.returncode == 1
    assert gs.store.list_keys("batch-tasks/") == []  # the probe removed what it wrote


def test_cli_submits_and_two_racing_workers_process_each_task_once(gs: OnFakeGcs) -> None:
    ids = []
    for n in range(1, 7):
        if n <= 2:  # through the CLI, as an operator would; the rest straight to the store (quicker)
            path = gs.procs.tmp / f"in-{n}.csv"
            path.write_bytes(csv_rows(n))
            done = cli("--store", gs.url, "submit", str(path), "--name", f"t{n}", env=gs.procs.env)
            assert done.returncode == 0, done.stderr
            ids.append(done.stdout.strip())
        else:
            ids.append(gs.service.submit_file(ALICE, f"t{n}", "copy", None, csv_rows(n)).task_id)
    workers = [gs.worker(name="race") for _ in range(2)]  # both see every task queued: they race
    for task_id in ids:
        wait_for(lambda t=task_id: gs.done(t), timeout=60 + 2 * gs.start, what=f"{task_id} completed")
    claims = 0
    for n, task_id in enumerate(ids, start=1):
        record = gs.record(task_id)
        assert record.attempt_id == 1, (task_id, record.last_error, record.history)
        claims += sum(1 for e in record.history if e["event"] == "claim")
        assert gs.outputs(task_id) == [gs.layout.output_key(task_id, 1)]
        out = gs.store.get(record.output_object_path).body.decode().splitlines()
        assert len(out) - 1 == n == record.row_count == record.processed_count
    assert claims == len(ids)  # the losers of each race claimed nothing
    link = gs.service.output_url(ALICE, ids[2])  # a download straight from the bucket (a signed URL)
    assert link and link.startswith(f"{gs.server.endpoint}/{gs.store.bucket_name}/")
    got = requests.get(link, timeout=10)
    assert got.ok and got.content == gs.store.get(gs.record(ids[2]).output_object_path).body
    downloaded = gs.procs.tmp / "out.csv"
    done = cli("--store", gs.url, "download", ids[1], "-o", str(downloaded), env=gs.procs.env)
    assert done.returncode == 0, done.stderr
    assert downloaded.read_bytes() == gs.store.get(gs.record(ids[1]).output_object_path).body
    no_active_markers(gs.store, gs.layout, 20 + gs.start)
    for w in workers:  # a worker that lost every race may still be starting: stop it once it runs
        w.worker_ready(20 + gs.start)
        w.send_signal(signal.SIGTERM)
    for w in workers:
        assert w.wait(20 + gs.start) == 0, w.output()


def test_sigkill_mid_task_is_recovered_on_attempt_two(gs: OnFakeGcs) -> None:
    gate = gs.procs.tmp / "gate"
    task_id = gs.service.submit_file(ALICE, "held", "test_gated", {"gate": str(gate)}, csv_rows(5)).task_id
    victim = gs.worker(name="victim")
    wait_for(lambda: gs.done(task_id, "running"), timeout=RECOVERY + gs.start, what="claimed")
    victim.kill()
    gate.touch()
    gs.worker(name="rescuer")
    record = wait_for(lambda: gs.done(task_id), timeout=RECOVERY + 2 * gs.start + 30, what="recovered")
    assert (record.attempt_id, record.failed_attempts) == (2, 1)
    assert record.output_object_path == gs.layout.output_key(task_id, 2)
    assert gs.outputs(task_id) == [gs.layout.output_key(task_id, 2)]  # the killed attempt left none
    assert len(gs.store.get(record.output_object_path).body.decode().splitlines()) == 6
