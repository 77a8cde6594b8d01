"""Who sends a state change's notification is decided by whoever builds the service or the worker, never
by the process environment: a TaskService built without a hook sends nothing, whatever S3TASK_* says."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import worker_handlers  # noqa: F401  (registers the test task types here too)
from conftest import wait_for

from s3task import lifecycle, notify
from s3task.config import Settings
from s3task.layout import Layout
from s3task.records import Records
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.worker import Worker

SECRET = "a-shared-secret-of-some-length"
ANN = Actor("ann@example.com")


@dataclass
class Posts:
    """Every request a local webhook receiver took, in order (the event ids)."""

    url: str = ""
    ids: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self) -> list[str]:
        with self.lock:
            return list(self.ids)


@pytest.fixture
def posts() -> Iterator[Posts]:
    got = Posts()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with got.lock:
                got.ids.append(json.loads(body)["id"])
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    got.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield got
    server.shutdown()
    server.server_close()


def test_a_service_built_without_a_hook_sends_nothing_whatever_the_environment_says(
    tmp_path: Path, posts: Posts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S3TASK_WEBHOOK_URLS", posts.url)
    monkeypatch.setenv("S3TASK_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("S3TASK_SMTP_URL", "smtp://127.0.0.1:9")
    monkeypatch.setenv("S3TASK_NOTIFY_BACKOFF_SECONDS", "0.05")
    store, layout = LocalStore(tmp_path / "data"), Layout("batch-tasks")
    quiet = TaskService(store, layout)  # no hook
    silent = []
    for name in ("submitted then cancelled", "cancelled unsubmitted"):
        task_id = quiet.create(ANN, name, "copy").record.task_id
        quiet.upload_input(ANN, task_id, b"a,b\n1,2\n")
        if name.startswith("submitted"):
            quiet.submit(ANN, task_id)
        quiet.cancel(ANN, task_id)
        silent.append(task_id)
    # A worker made from settings that name no channel (the environment is not its settings) is quiet too.
    kept = quiet.create(ANN, "processed", "copy").record.task_id
    quiet.upload_input(ANN, kept, b"a,b\n1,2\n")
    quiet.submit(ANN, kept)
    Worker(Settings(store=str(tmp_path / "data"), handlers=("worker_handlers",)), store, layout).run_once()
    assert quiet.get(ANN, kept).status == "completed"
    silent.append(kept)
    assert not (tmp_path / "data" / "batch-tasks" / "outbox").exists()  # not even an outbox entry was written

    # The same environment, read into Settings by whoever builds the service, does send: to the same
    # receiver, on the same lane, after anything the quiet service could have queued before.
    notifier = notify.from_settings(Settings.load())
    assert notifier is not None
    loud = TaskService(store, layout, hook=notifier)
    told = loud.create(ANN, "told", "copy").record.task_id
    loud.cancel(ANN, told)
    wait_for(lambda: posts.seen(), timeout=30, what="the hooked service's event")
    assert notifier.drain(30)
    assert [i.split(".")[0] for i in posts.seen()] == [told]
    assert not any(i.split(".")[0] in silent for i in posts.seen())


def test_records_tell_their_hook_of_state_changes_only_and_a_failing_hook_fails_no_write(tmp_path: Path) -> None:
    store, layout = LocalStore(tmp_path / "data"), Layout("batch-tasks")
    service = TaskService(store, layout)
    task_id = service.create(ANN, "t", "copy").record.task_id
    service.upload_input(ANN, task_id, b"a,b\n1,2\n")

    class Told:
        def __init__(self) -> None:
            self.changes: list[tuple[str, str, bool]] = []

        def before(self, store: Any, layout: Any, old: Any, new: Any) -> Any:
            hook = self

            class Note:
                def done(self, won: bool) -> None:
                    hook.changes.append((old.status, new.status, won))

            return Note()

    told = Told()
    records = Records(store, layout, told)
    records.update(task_id, lambda r, t: lifecycle.submit(r, t, input_etag='"e"', input_size=8))
    records.update(task_id, lambda r, t: r.replace(updated_at=r.updated_at))  # same state: not a change
    assert told.changes == [("created", "queued", True)]

    class Broken:
        def before(self, *_args: Any) -> Any:
            raise RuntimeError("a hook that cannot even start")

    cancelled = Records(store, layout, Broken()).update(task_id, lambda r, t: lifecycle.cancel(r, t, by="ann"))
    assert cancelled.status == "abandoned" and service.get(ANN, task_id).status == "abandoned"
