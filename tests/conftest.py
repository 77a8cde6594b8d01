"""Shared fixtures: the three stores every contract test runs against, and a moto server.

- ``local``: the local-directory backend in a temp dir;
- ``moto``: the S3 backend against moto's in-process mock (``mock_aws``);
- ``moto_http``: the S3 backend over real HTTP to moto's ``ThreadedMotoServer``
  on 127.0.0.1, reset before each test.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import boto3
import pytest
import requests

from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.store.s3 import S3Store
from s3task.tasks import TaskService

# Credentials for moto only; never real ones.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_PROFILE", None)

STORE_KINDS = ("local", "moto", "moto_http")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition: Callable[[], object], timeout: float = 30.0, interval: float = 0.05, what: str = "") -> object:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(interval)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """A real HTTP S3 endpoint (moto) on 127.0.0.1; yields its URL."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: _up(url), timeout=20, what="moto server")
    yield url
    server.stop()


def _up(url: str) -> bool:
    try:
        return requests.get(url + "/moto-api/", timeout=1).status_code < 500
    except requests.RequestException:
        return False


def reset_moto(url: str) -> None:
    requests.post(url + "/moto-api/reset", timeout=5).raise_for_status()


def s3_client(endpoint: str | None = None):
    return boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint)


@pytest.fixture
def moto_http_bucket(moto_server: str) -> Iterator[tuple[str, str]]:
    """A fresh bucket on the moto server: yields (endpoint URL, bucket name)."""
    reset_moto(moto_server)
    bucket = f"t-{uuid.uuid4().hex[:12]}"
    s3_client(moto_server).create_bucket(Bucket=bucket)
    yield moto_server, bucket


def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest):
    if kind == "local":
        return LocalStore(tmp_path / "store")
    if kind == "moto":
        from moto import mock_aws

        mock = mock_aws()
        mock.start()
        request.addfinalizer(mock.stop)
        s3_client().create_bucket(Bucket="s3task-test")
        return S3Store("s3task-test", client=s3_client())
    if kind == "moto_http":
        endpoint, bucket = request.getfixturevalue("moto_http_bucket")
        session = boto3.session.Session(region_name="us-east-1")
        from s3task.store.s3 import _DATA_CONFIG, _RECORD_CONFIG

        return S3Store(
            bucket,
            client=session.client("s3", endpoint_url=endpoint, config=_RECORD_CONFIG),
            data_client=session.client("s3", endpoint_url=endpoint, config=_DATA_CONFIG),
        )
    raise ValueError(kind)


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path):
    """Each test using this runs once per store kind."""
    return make_store(request.param, tmp_path, request)


@pytest.fixture
def local_store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


@pytest.fixture
def layout() -> Layout:
    return Layout("batch-tasks")


@pytest.fixture
def service(store, layout) -> TaskService:
    return TaskService(store, layout)
