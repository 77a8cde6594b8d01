"""Shared fixtures: the three stores every contract test runs against, and a moto server.

- ``local``: the local-directory backend in a temp dir;
- ``moto``: the S3 backend against moto's in-process mock (``mock_aws``);
- ``moto_http``: the S3 backend over real HTTP to moto's ``ThreadedMotoServer``
  on 127.0.0.1, reset before each test;
- ``seaweedfs``, ``localstack``: the S3 backend over HTTP to S3 servers no one here wrote, started
  once per run on 127.0.0.1 (tests/realstores.py), a fresh bucket for each test;
- ``azurite``: the Azure Blob backend on Azurite, started the same way, a fresh container for each test;
  ``azurite_oauth``: another Azurite, over HTTPS, that takes bearer tokens (a store signed in with one);
- ``fake_gcs``: the Google Cloud Storage backend on fake-gcs-server, started the same way, a fresh bucket
  for each test.

And the processes a test starts (tests/procs.py): ``procs`` (stopped at the test's end), ``startup``
(a worker process's measured start-up, added to every wait on one) and ``s3_workers`` (worker
processes on a fresh moto bucket over HTTP).

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
import sys
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

STORE_KINDS = ("local", "moto", "moto_http", "seaweedfs", "localstack", "azurite", "fake_gcs")
#: The kinds served over HTTP by a real S3 server no one here wrote (tests/realstores.py).
REAL_STORE_KINDS = ("seaweedfs", "localstack")
#: The kinds served by an Azure Blob server (the Azure backend, s3task/store/azure.py).
AZURE_STORE_KINDS = ("azurite",)
#: The kinds served by a Google Cloud Storage server (the GCS backend, s3task/store/gcs.py).
GCS_STORE_KINDS = ("fake_gcs",)

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


def _share_botocore_data() -> None:
    """One botocore data loader for every session in a test process, not one per session.

    The product makes a session for each store it opens (``S3Store``), and each session's first client parses
    the S3 model, the endpoint rules and the partitions from JSON: 100 ms a store, 4 to 5 s in the development
    loop. The files do not change during a run; within one session botocore already hands the same parsed data
    to every client, so sharing it across sessions changes nothing the tests look at.
    """
    import botocore.session

    create = botocore.session.create_loader
    if getattr(create, "_s3task_shared", False):
        return
    loaders: dict[str | None, object] = {}
    lock = threading.Lock()

    @functools.wraps(create)
    def shared(search_path_string: str | None = None):
        with lock:
            if search_path_string not in loaders:
                loaders[search_path_string] = create(search_path_string)
            return loaders[search_path_string]

    shared._s3task_shared = True  # type: ignore[attr-defined]
    botocore.session.create_loader = shared


_share_botocore_data()
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
    """One headless Chromium per test module (tests/browser/test_browser.py, tests/browser/test_direct_transfer.py)."""
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


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[object]:
    """The processes this test starts (tests/procs.py), each logging under ``tmp_path``; stopped at its end."""
    from procs import Procs

    with Procs(tmp_path) as started:
        yield started


@pytest.fixture(scope="module")
def startup(tmp_path_factory: pytest.TempPathFactory) -> float:
    """Seconds a worker process takes here to start, probe a store, load its fork server, run one tiny
    task and stop (measured once per module, with headroom).

    Machine time is no setting: on a busy 2-core machine a worker's interpreter, its fork server's
    pandas and pyarrow imports and the store probe take from one to twenty seconds. Every wait on a
    worker process is the settings' own time plus this.
    """
    from procs import timed_worker_once

    return 5 * timed_worker_once(tmp_path_factory.mktemp("startup") / "store")


@pytest.fixture
def s3_workers(moto_http_bucket: tuple[str, str], procs, startup: float) -> object:
    """Real ``worker.py`` processes on a fresh moto bucket over HTTP (tests/procs.py ``S3Workers``)."""
    from procs import S3Workers, child_env

    endpoint, bucket = moto_http_bucket
    procs.env = child_env(endpoint=endpoint, S3TASK_LEASE_GRACE_SECONDS="1", S3TASK_RETRY_BACKOFF_SECONDS="0.5")
    return S3Workers(endpoint, bucket, procs, startup)


def _real_store(kind: str, tmp_path_factory: pytest.TempPathFactory):
    """One server of ``kind`` for the whole run; a loud skip naming what is missing, a failure under CI."""
    import realstores

    if reason := realstores.missing(kind.removesuffix("_oauth")):
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI must run the tests on {kind})", pytrace=False)
        pytest.skip(reason)
    server = realstores.STARTERS[kind](tmp_path_factory.mktemp(kind))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory):
    """SeaweedFS (``weed mini``) on 127.0.0.1 for the whole run (tests/realstores.py ``RealStore``)."""
    yield from _real_store("seaweedfs", tmp_path_factory)


@pytest.fixture(scope="session")
def localstack(tmp_path_factory: pytest.TempPathFactory):
    """LocalStack's S3 on 127.0.0.1 for the whole run (tests/realstores.py ``RealStore``)."""
    yield from _real_store("localstack", tmp_path_factory)


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory):
    """Azurite's blob service on 127.0.0.1 for the whole run (tests/realstores.py ``Azurite``)."""
    yield from _real_store("azurite", tmp_path_factory)


@pytest.fixture(scope="session")
def azurite_oauth(tmp_path_factory: pytest.TempPathFactory):
    """Azurite over HTTPS taking bearer tokens (``--oauth basic``) for the whole run (tests/realstores.py
    ``AzuriteOAuth``); tests/fake_identity.py issues the tokens."""
    yield from _real_store("azurite_oauth", tmp_path_factory)


@pytest.fixture(scope="session")
def fake_gcs(tmp_path_factory: pytest.TempPathFactory):
    """fake-gcs-server on 127.0.0.1 for the whole run (tests/realstores.py ``FakeGcs``)."""
    yield from _real_store("fake_gcs", tmp_path_factory)


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
    if kind in REAL_STORE_KINDS:
        server = request.getfixturevalue(kind)
        bucket = server.new_bucket()
        return S3Store(bucket, client=server.client(_RECORD_CONFIG), data_client=server.client(_DATA_CONFIG))
    if kind in AZURE_STORE_KINDS or kind in GCS_STORE_KINDS:
        server = request.getfixturevalue(kind)
        return server.store(server.new_bucket())
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


# --- tiers: a test module's tier is the folder it lives in ---------------------------------------

#: ``unit``: pure logic in this process; ``contract``: one contract run against every store;
#: ``system``: real processes, servers and stores together; ``browser``: a real Chromium.
#: The development loop (``./test.sh --fast``) is ``unit`` and ``contract`` on the local and in-memory
#: stores; everything else is marked ``slow``. CI runs everything.
TIERS = ("unit", "contract", "system", "browser")
SLOW_TIERS = ("system", "browser")
TESTS = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    for tier in TIERS:
        config.addinivalue_line("markers", f"{tier}: test tier (the folder under tests/)")


def tier_of(item: pytest.Item) -> str | None:
    try:
        rel = Path(str(item.path)).resolve().relative_to(TESTS)
    except ValueError:
        return None
    return rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in TIERS else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    loose = sorted({str(item.path) for item in items if tier_of(item) is None})
    if loose:
        raise pytest.UsageError(f"test modules must live in a tier folder ({', '.join(TIERS)}) under tests/: {loose}")
    for item in items:
        tier = tier_of(item)
        assert tier is not None
        if tier != "browser":  # browser modules mark their own browser tests
            item.add_marker(getattr(pytest.mark, tier))
        callspec = getattr(item, "callspec", None)
        served = ("moto", "moto_http", *REAL_STORE_KINDS, *AZURE_STORE_KINDS, *GCS_STORE_KINDS)
        # a store parameter (``store``, or ``kind`` where a test makes its own) naming a server
        over_s3 = callspec is not None and any(callspec.params.get(p) in served for p in ("store", "kind"))
        if tier in SLOW_TIERS or over_s3:  # the loop runs the contract on the local and in-memory stores
            item.add_marker(pytest.mark.slow)


# --- each tier's time, at the end of a run (CI prints it with the slowest tests: --durations) ----------

_TIER_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add each test's setup, call and teardown to its tier (on the controller, with pytest-xdist, too)."""
    rel = Path(report.fspath) if report.fspath else None
    tier = rel.parts[1] if rel is not None and len(rel.parts) > 2 and rel.parts[0] == "tests" else None
    if tier in TIERS:
        _TIER_SECONDS[tier] = _TIER_SECONDS.get(tier, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _TIER_SECONDS:
        spent = ", ".join(f"{tier} {_TIER_SECONDS[tier]:,.0f} s" for tier in TIERS if tier in _TIER_SECONDS)
        terminalreporter.write_line(f"time in tests by tier (summed over the workers): {spent}")


@pytest.fixture(autouse=True)
def _main_module_kept() -> Iterator[None]:
    """Put back ``sys.modules["__main__"]`` after each test. Streamlit's AppTest runs a page as ``__main__``
    and leaves it there; a worker started later in the same test process then has its fork server run that
    page's script in every attempt process (multiprocessing re-imports ``__main__`` by its path), and each
    attempt died with exit code 1 (``NameError: name '__args' is not defined``) — seen only when pytest-xdist
    put an AppTest module and a worker test on one worker."""
    main = sys.modules.get("__main__")
    if "streamlit" in sys.modules:
        _scan_components_once()
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main


def _scan_components_once() -> None:
    """Scan the installed packages for Streamlit components once per test process, not once per AppTest.

    Every new AppTest reads the metadata of every installed distribution (about 150 here) looking for
    Streamlit components: 0.15 to 0.4 s each time, 110 times in the development loop. A Streamlit server
    scans once, at its start (``Runtime``); the packages installed do not change during a run, so neither
    does the answer. What a page shows is untouched: each AppTest still registers what was found.
    """
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if getattr(scan, "_s3task_once", False):
        return

    @functools.wraps(scan)
    def once(max_workers: int | None = None) -> list:
        if max_workers not in found:
            found[max_workers] = scan(max_workers)
        return list(found[max_workers])

    found: dict[int | None, list] = {}
    once._s3task_once = True  # type: ignore[attr-defined]
    manifest_scanner.scan_component_manifests = once
