"""Shared fixtures: the three stores every contract test runs against, and a moto server.

- ``local``: the local-directory backend in a temp dir;
- ``moto``: the S3 backend against moto's in-process mock (``mock_aws``);
- ``moto_http``: the S3 backend over real HTTP to moto's ``ThreadedMotoServer``
  on 127.0.0.1, reset before each test.

Moto handles each request in its own thread but does not lock its
conditional checks: two puts with the same If-Match can both succeed, and an
overwrite closes the old object's buffer while another thread is still
answering from it (a ``ValueError`` in-process, a 500 over HTTP). Real S3
applies each request atomically, so we serialise moto's request handling
(:func:`_serialise_moto`); the interleaving of *our* read → compare-and-set
loops across threads is untouched, and that is what the race tests measure.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import boto3
import pytest
import requests

from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.store.s3 import _DATA_CONFIG, _RECORD_CONFIG, S3Store
from s3task.tasks import TaskService

# Credentials for moto only; never real ones.
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.pop("AWS_PROFILE", None)

STORE_KINDS = ("local", "moto", "moto_http")

_MOTO_LOCK = threading.RLock()


def _serialise_moto() -> None:
    """One moto request at a time, in-process and in the server thread (see the module docstring)."""
    from moto.core.botocore_stubber import BotocoreStubber
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    for cls in (BotocoreStubber, DomainDispatcherApplication):
        call = cls.__call__
        if getattr(call, "_s3task_serialised", False):
            continue

        @functools.wraps(call)
        def serialised(*args, _call=call, **kwargs):
            with _MOTO_LOCK:
                return _call(*args, **kwargs)

        serialised._s3task_serialised = True  # type: ignore[attr-defined]
        cls.__call__ = serialised


_serialise_moto()
# moto's server logs every request through werkzeug; a failing test's output should show ours.
logging.getLogger("werkzeug").setLevel(logging.ERROR)

_BOTO_LOCK = threading.RLock()
_boto_session: boto3.session.Session | None = None


def boto_session() -> boto3.session.Session:
    """One boto3 session for the whole run: a client from a warm session takes milliseconds, not 100 ms.

    (``mock_aws`` clears boto3's default session on every start, so ``boto3.client`` would reload
    the service model for every test.) Moto is imported above, so its hook is in this session.
    """
    global _boto_session
    with _BOTO_LOCK:
        if _boto_session is None:
            _boto_session = boto3.session.Session(region_name="us-east-1")
        return _boto_session


def boto_client(endpoint: str | None = None, config=None):
    with _BOTO_LOCK:  # creating clients from one session is not thread-safe
        return boto_session().client("s3", endpoint_url=endpoint, config=config)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Debian's Chromium, which Playwright is pointed at (it cannot download browsers here), and flags that work here.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One headless Chromium per test module (tests/test_browser.py, tests/test_direct_transfer.py)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


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
    return boto_client(endpoint)


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
        # The product's client settings (SigV4 presigned URLs, short record timeouts), as on moto_http.
        return S3Store(
            "s3task-test", client=boto_client(None, _RECORD_CONFIG), data_client=boto_client(None, _DATA_CONFIG)
        )
    if kind == "moto_http":
        endpoint, bucket = request.getfixturevalue("moto_http_bucket")
        return S3Store(
            bucket,
            client=boto_client(endpoint, _RECORD_CONFIG),
            data_client=boto_client(endpoint, _DATA_CONFIG),
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


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Publish the figures the reliability tests gathered (tests/figures.py), after a green run only."""
    if exitstatus == 0:
        import figures

        figures.publish_all()


# --- tiers: what each module exercises, and which are too slow for the development loop -------

#: Module -> tier. ``unit``: pure logic in this process; ``contract``: one contract run against every
#: store (or the API's published document); ``system``: real processes, servers and stores together;
#: ``browser``: a real Chromium. Every test module must be listed (checked at collection).
TIERS = {
    "test_ids": "unit",
    "test_lifecycle": "unit",
    "test_record": "unit",
    "test_processing": "unit",
    "test_handlers": "unit",
    "test_settings": "unit",
    "test_identity": "unit",
    "test_store_registry": "unit",
    "test_store_background": "unit",
    "test_testing": "unit",
    "test_exports": "unit",
    "test_dialect": "unit",
    "test_profile": "unit",
    "test_counts": "unit",
    "test_bench_report": "unit",
    "test_store_contract": "contract",
    "test_store_multipart": "contract",
    "test_store_s3_urls": "contract",
    "test_tasks": "contract",
    "test_transfer": "contract",
    "test_api_contract": "contract",
    "test_stranding": "system",
    "test_worker_embedded": "system",
    "test_worker_badinput": "system",
    "test_worker": "system",
    "test_cli": "system",
    "test_http_api": "system",
    "test_app": "system",
    "test_access": "system",
    "test_faults": "system",
    "test_crash_points": "system",
    "test_soak": "system",
    "test_hostile": "system",
    "test_bench_quick": "system",
    "test_browser": "browser",
    "test_direct_transfer": "browser",
    "test_results_browser": "browser",
    "test_live": "system",
    "test_bell": "system",
    "test_operators": "system",
    "test_metrics": "system",
    "test_notify": "system",
    "test_startup": "system",
    "test_requests": "system",
}
#: Modules left out of the development loop (``./test.sh --fast``), as are the S3 (moto) runs of the
#: store contract; CI runs everything.
SLOW = {
    "test_api_contract",
    "test_app",
    "test_cli",
    "test_worker_badinput",
    "test_worker",
    "test_faults",
    "test_crash_points",
    "test_soak",
    "test_hostile",
    "test_bench_quick",
    "test_browser",
    "test_direct_transfer",
    "test_access",
    "test_http_api",
}


def pytest_configure(config: pytest.Config) -> None:
    for tier in ("unit", "contract", "system"):
        config.addinivalue_line("markers", f"{tier}: test tier (tests/conftest.py TIERS)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unlisted = sorted({item.module.__name__ for item in items if item.module.__name__ not in TIERS})
    if unlisted:
        raise pytest.UsageError(f"tests/conftest.py TIERS does not say which tier these are in: {unlisted}")
    for item in items:
        name = item.module.__name__
        if TIERS[name] != "browser":  # browser modules mark their own browser tests
            item.add_marker(getattr(pytest.mark, TIERS[name]))
        callspec = getattr(item, "callspec", None)
        over_s3 = callspec is not None and callspec.params.get("store") in ("moto", "moto_http")
        if name in SLOW or over_s3:  # the loop runs the contract on the local and in-memory stores
            item.add_marker(pytest.mark.slow)
