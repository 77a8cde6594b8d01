"""End to end on Azurite 3.37.0 signed in with a token: the CLI and a worker process reach the store as an
operator's on Azure would with a managed identity: ``S3TASK_STORE=az://<container>/<prefix>``,
``AZURE_STORAGE_ACCOUNT_URL`` and no connection string, so azure-identity's ``DefaultAzureCredential``
gets tokens from the App Service managed-identity endpoint (``IDENTITY_ENDPOINT``, tests/fake_identity.py
in this process) and Azurite (``--oauth basic``, over HTTPS: ``REQUESTS_CA_BUNDLE`` trusts its certificate)
takes them. No process but this test's own view holds the account key.

``init`` and ``doctor`` pass (doctor also says the identity gets the user delegation key SAS URLs are
signed with); a CSV submitted through the CLI is processed by the worker and downloaded through the CLI,
and its output's SAS URL (signed with a delegation key) downloads it straight from the container.
tests/system/test_azurite_workers.py does the same with the account key.
"""

from __future__ import annotations

import csv
import io
import signal
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import worker_handlers  # noqa: F401  (registers the test task types here too)
from conftest import wait_for
from fake_identity import STORAGE, TokenService, token_service
from procs import Procs, child_env, cli
from support import csv_rows

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store import open_store
from s3task.tasks import Actor, TaskService

#: The worker's lease and poll interval (as tests/system/test_azurite_workers.py's).
LEASE, POLL = 4.0, 0.2


@pytest.fixture
def identity() -> Iterator[TokenService]:
    with token_service() as service:
        yield service


class SignedIn:
    """A fresh container on the OAuth Azurite, the environment of processes signed in with a token, and
    this process's view with the account key (``store``) to check what they did."""

    def __init__(self, server: Any, identity: TokenService, procs: Procs, monkeypatch: pytest.MonkeyPatch) -> None:
        self.server, self.identity, self.procs = server, identity, procs
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(server.cert))  # this process's own clients trust it too
        self.store = server.store(server.new_bucket())
        self.layout = Layout("batch-tasks")
        self.url = f"az://{self.store.container}/batch-tasks"
        env = child_env(S3TASK_STORE=self.url, **server.token_env(identity))
        env.pop("AZURE_STORAGE_CONNECTION_STRING", None)
        procs.env = env

    def cli(self, *args: str) -> Any:
        done = cli(*args, env=self.procs.env)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def done(self, task_id: str) -> Any:
        record = read_record(self.store, self.layout, task_id)[0]
        return record if record.status == "completed" else None


@pytest.fixture
def az(azurite_oauth: Any, identity: TokenService, procs: Procs, monkeypatch: pytest.MonkeyPatch) -> SignedIn:
    return SignedIn(azurite_oauth, identity, procs, monkeypatch)


def test_init_and_doctor_pass_signed_in_with_a_token(az: SignedIn) -> None:
    origin = "http://127.0.0.1:8501"
    init = az.cli("init", "--origin", origin)
    assert f"unchanged: container {az.store.container} exists" in init.stdout
    doctor = az.cli("doctor", "--origin", origin)
    assert f"store: az://{az.store.container} ({az.server.endpoint.rsplit('/', 1)[0]}" in doctor.stdout
    assert "ok: conditional writes are enforced" in doctor.stdout
    assert "ok: browser URLs are signed with a user delegation key" in doctor.stdout
    assert f"ok: the storage account's CORS rule lets browsers at {origin} upload (PUT)" in doctor.stdout
    assert az.identity.issued == [STORAGE, STORAGE]  # each process signed in through the identity endpoint
    assert az.store.list_keys("batch-tasks/") == []  # the probe removed what it wrote


def test_a_csv_submitted_through_the_cli_is_processed_and_downloaded(
    az: SignedIn, startup: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = az.procs.tmp / "in.csv"
    source.write_bytes(csv_rows(25))
    task_id = az.cli("submit", str(source), "--name", "by token").stdout.strip()
    worker = az.procs.worker(az.url, "--poll-interval", str(POLL), "--lease-seconds", str(LEASE), worker_id="tok")
    record = wait_for(lambda: az.done(task_id), timeout=60 + 2 * startup, what=f"{task_id} completed")
    assert record.row_count == record.processed_count == 25
    target = az.procs.tmp / "out.csv"
    assert az.cli("download", task_id, "-o", str(target)).stdout.strip() == str(target)
    assert target.read_bytes() == az.store.get(record.output_object_path).body
    rows = list(csv.reader(io.StringIO(target.read_bytes().decode("utf-8-sig"))))
    assert rows == list(csv.reader(io.StringIO(csv_rows(25).decode())))  # the copy handler's: the rows as sent
    # The app's download link, made by a process signed in with the token: a SAS URL of a delegation key.
    for name, value in az.procs.env.items():
        if name.startswith(("AZURE_", "IDENTITY_")):
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    signed_in, layout = open_store(az.url)
    link = TaskService(signed_in, layout).output_url(Actor(record.created_by), task_id)
    assert link and link.startswith(az.server.endpoint + "/") and "skoid" in parse_qs(urlsplit(link).query)
    got = requests.get(link, timeout=10, verify=str(az.server.cert))
    assert got.status_code == 200 and got.content == target.read_bytes()
    assert len(az.identity.issued) >= 4  # the submit, the worker, the download and this process: each its own
    worker.worker_ready(20 + startup)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(20 + startup) == 0, worker.output()
