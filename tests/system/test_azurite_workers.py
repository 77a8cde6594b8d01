"""End to end on Azurite 3.37.0 (tests/realstores.py): the Azure backend under real worker processes.

``init`` and ``doctor`` through the CLI (the probe passes: the account enforces conditions; the CORS rule
init set lets the app's origin in); tasks submitted through
the CLI and two worker processes racing for them (each task processed once, outputs exact); a worker
SIGKILLed mid-task and its task recovered on attempt 2, the killed attempt leaving no output; an output
downloaded through its SAS URL, straight from the container.
Workers reach Azurite as an operator's would: ``az://<container>/<prefix>`` and
``AZURE_STORAGE_CONNECTION_STRING``.
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
#: From a worker's death to its task's lease running out and a poll seeing it: every recovery
#: wait is this, plus the rescuer's measured start-up, plus the task's own processing.
RECOVERY = LEASE + GRACE + 2 * POLL


class OnAzurite:
    """One fresh container on Azurite, this process's service on it, and worker processes."""

    def __init__(self, server: Any, procs: Procs, start: float) -> None:
        self.server = server
        container = server.new_bucket()
        self.store = server.store(container)
        self.layout = Layout("batch-tasks")
        self.service = TaskService(self.store, self.layout)
        self.url = f"az://{container}/batch-tasks"
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
def az(azurite: Any, procs: Procs, startup: float) -> OnAzurite:
    return OnAzurite(azurite, procs, startup)


def test_doctor_and_init_pass_on_azurite(az: OnAzurite) -> None:
    origin = "http://127.0.0.1:8501"
    init = cli("--store", az.url, "init", "--origin", origin, env=az.procs.env)
    assert init.returncode == 0, init.stderr
    assert f"unchanged: container {az.store.container} exists" in init.stdout
    doctor = cli("--store", az.url, "doctor", "--origin", origin, env=az.procs.env)
    assert doctor.returncode == 0, doctor.stderr
    assert "ok: conditional writes are enforced" in doctor.stdout
    assert f"store: az://{az.store.container} (" in doctor.stdout
    # Uploads and downloads are SAS URLs straight to the container: the account's CORS rule must let the app in.
    assert f"ok: the storage account's CORS rule lets browsers at {origin} upload (PUT)" in doctor.stdout
    assert az.store.list_keys("batch-tasks/") == []  # the probe removed what it wrote
    # tests/system/test_azurite_setup.py: init creating a container, and doctor refusing an origin.


def test_cli_submits_and_two_racing_workers_process_each_task_once(az: OnAzurite) -> None:
    ids = []
    for n in range(1, 7):
        if n <= 2:  # through the CLI, as an operator would; the rest straight to the store (quicker)
            path = az.procs.tmp / f"in-{n}.csv"
            path.write_bytes(csv_rows(n))
            done = cli("--store", az.url, "submit", str(path), "--name", f"t{n}", env=az.procs.env)
            assert done.returncode == 0, done.stderr
            ids.append(done.stdout.strip())
        else:
            ids.append(az.service.submit_file(ALICE, f"t{n}", "copy", None, csv_rows(n)).task_id)
    workers = [az.worker(name="race") for _ in range(2)]  # both see every task queued: they race
    for task_id in ids:
        wait_for(lambda t=task_id: az.done(t), timeout=60 + 2 * az.start, what=f"{task_id} completed")
    claims = 0
    for n, task_id in enumerate(ids, start=1):
        record = az.record(task_id)
        assert record.attempt_id == 1, (task_id, record.history)
        claims += sum(1 for e in record.history if e["event"] == "claim")
        assert az.outputs(task_id) == [az.layout.output_key(task_id, 1)]
        out = az.store.get(record.output_object_path).body.decode().splitlines()
        assert len(out) - 1 == n == record.row_count == record.processed_count
    assert claims == len(ids)  # the losers of each race claimed nothing
    link = az.service.output_url(ALICE, ids[2])  # a download straight from the container (a SAS URL)
    assert link and link.startswith(az.server.endpoint + "/")
    got = requests.get(link, timeout=10)
    assert got.ok and got.content == az.store.get(az.record(ids[2]).output_object_path).body
    no_active_markers(az.store, az.layout, 20 + az.start)
    for w in workers:  # a worker that lost every race may still be starting: stop it once it runs
        w.worker_ready(20 + az.start)
        w.send_signal(signal.SIGTERM)
    for w in workers:
        assert w.wait(20 + az.start) == 0, w.output()


def test_sigkill_mid_task_is_recovered_on_attempt_two(az: OnAzurite) -> None:
    gate = az.procs.tmp / "gate"
    task_id = az.service.submit_file(ALICE, "held", "test_gated", {"gate": str(gate)}, csv_rows(5)).task_id
    victim = az.worker(name="victim")
    wait_for(lambda: az.done(task_id, "running"), timeout=RECOVERY + az.start, what="claimed")
    victim.kill()
    gate.touch()
    az.worker(name="rescuer")
    record = wait_for(lambda: az.done(task_id), timeout=RECOVERY + 2 * az.start + 30, what="recovered")
    assert (record.attempt_id, record.failed_attempts) == (2, 1)
    assert record.output_object_path == az.layout.output_key(task_id, 2)
    assert az.outputs(task_id) == [az.layout.output_key(task_id, 2)]  # the killed attempt left none
    assert len(az.store.get(record.output_object_path).body.decode().splitlines()) == 6
