"""AppTest helpers for the app's pages (tests/system/test_app.py, test_operators.py, tests/unit/test_profile.py).

The fixtures run ``app.py`` on a fresh local store with the embedded worker off, so a task stays where
the test put it; users are told apart through a trusted proxy header (Streamlit's
``server.trustedUserHeaders``); work a worker would do is done with the core's own lifecycle functions.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # app.py's own helpers (ui/) live next to it, not in the installed package

from s3task import lifecycle  # noqa: E402
from s3task.layout import Layout  # noqa: E402
from s3task.records import update_record  # noqa: E402
from s3task.store.base import PutMode  # noqa: E402
from s3task.store.local import LocalStore  # noqa: E402
from s3task.tasks import Actor, TaskService  # noqa: E402

APP = str(ROOT / "app.py")
CSV = b"name,age\nann,007\nbob,42\n"
HEADER = {"X-Remote-User": "user"}


@pytest.fixture
def options() -> Iterator[Callable[..., None]]:
    """Set Streamlit config options for one test (restored afterwards)."""
    saved: dict[str, object] = {}

    def set_(**values: object) -> None:
        for name, value in values.items():
            key = "server." + name
            saved.setdefault(key, st_config.get_option(key))
            st_config.set_option(key, value)

    set_(address="127.0.0.1")
    yield set_
    for key, value in saved.items():
        st_config.set_option(key, value)


@pytest.fixture
def store_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "store"
    monkeypatch.setenv("S3TASK_STORE", str(path))
    monkeypatch.setenv("S3TASK_EMBEDDED_WORKER", "0")
    monkeypatch.setenv("S3TASK_OPERATORS", "boss")
    for name in ("S3TASK_PAGE_SIZE", "S3TASK_DOWNLOAD_CAP_MB"):
        monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture
def service(store_dir: Path) -> TaskService:
    """The test's own view of the store (the app has its own cached service)."""
    return TaskService(LocalStore(store_dir), Layout())


@pytest.fixture
def app(store_dir: Path, options: Callable[..., None]) -> Callable[..., AppTest]:
    """``app(user)`` → an AppTest for that user (via the trusted header), or the dev user if None."""

    def make(user: str | None = None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=15)
        if user is not None:
            options(trustedUserHeaders=HEADER)
            at.user = {"user": user}
        return at

    return make


def goto(at: AppTest, page: str) -> AppTest:
    """Open a page the way the app does: the entrypoint runs first and registers the pages."""
    if not at._registered_pages:
        at.run()
    return at.switch_page(page).run()


def submitted(service: TaskService, user: str, name: str, data: bytes = CSV) -> str:
    return service.submit_file(Actor(user), name, "copy", None, data).task_id


def run_as_worker(
    service: TaskService,
    task_id: str,
    output: bytes | None = None,
    error: str | None = None,
    *,
    permanent: bool = True,
) -> None:
    """Do what a worker does: claim, then complete with ``output`` or fail with ``error`` (``permanent``: bad input)."""
    store, layout = service.store, service.layout
    update_record(store, layout, task_id, lambda r, now: lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)[0])
    record = service.get(Actor("w"), task_id)
    lease = lifecycle.Lease(record.attempt_id, record.lease_token or "", "w1")
    if error is not None:
        update_record(
            store, layout, task_id, lambda r, now: lifecycle.fail(r, now, lease=lease, error=error, permanent=permanent)
        )
        return
    key = layout.output_key(task_id, record.attempt_id)
    store.put(key, output or b"", PutMode.CREATE)
    rows = pd.read_csv(io.BytesIO(output or b""), dtype=str, keep_default_na=False)
    errors = int((rows.get("error", pd.Series(dtype=str)) != "").sum())
    progress = lifecycle.Progress(len(rows), len(rows) - errors, errors, record.input_size_bytes or 0)
    update_record(
        store,
        layout,
        task_id,
        lambda r, now: lifecycle.complete(r, now, lease=lease, output_path=key, progress=progress, row_count=len(rows)),
    )


def texts(node) -> str:
    """Everything a page (or its sidebar) says, as one string, Markdown escapes removed."""
    parts = []
    for kind in ("title", "markdown", "caption", "info", "warning", "error", "success", "text", "subheader"):
        parts += [str(e.value) for e in getattr(node, kind)]
    return "\n".join(parts).replace("\\", "").replace("\u2060", "")


def listed(at: AppTest) -> list[str]:
    return at.dataframe[0].value["name"].tolist() if at.dataframe else []


def page_links(at: AppTest) -> dict[str, str]:
    return {e.proto.label: f"{e.proto.page}?{e.proto.query_string}" for e in at.get("page_link")}


def workers_page(at: AppTest) -> AppTest:
    from ui import services

    services.live_workers.clear()  # the page's 10-second cache of the presence objects
    return goto(at, "pages/workers.py")
