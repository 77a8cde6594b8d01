"""Helpers the test modules share (one copy each)."""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

from s3task.errors import StoreUnavailable
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def four_parts() -> bytes:
    """A CSV of three whole upload parts and 100 bytes more (25 MB), made when a test first asks for it (half a
    second): made at import, it cost every test process that second at collection, the fast loop's too, which
    runs none of the tests that send it."""
    from s3task.tasks.resumable import PART_SIZE

    return b"id,value\n" + b"".join(b"%08d,%08d\n" % (i, i) for i in range((3 * PART_SIZE + 100) // 18))


def csv_rows(n: int) -> bytes:
    """A CSV with a header ``id,name`` and ``n`` rows."""
    return ("id,name\n" + "".join(f"{i},name {i}\n" for i in range(n))).encode()


def csv_bytes(rows: list[list[str]], eol: str = "\n", quote_all: bool = False) -> bytes:
    """RFC 4180 text: a cell is quoted when it holds a comma, a quote, CR or LF (or always, with quote_all)."""

    def cell(value: str) -> str:
        if quote_all or any(c in value for c in ',"\r\n'):
            return '"' + value.replace('"', '""') + '"'
        return value

    return "".join(",".join(map(cell, row)) + eol for row in rows).encode("utf-8")


class CountingStore(LocalStore):
    """The local store, noting each call's kind and key (on S3, each is one request). Not ``head``:
    the local store's own conditional writes call it (on S3 the condition travels with the PUT)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.calls: list[tuple[str, str]] = []

    def put(self, key: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(("put", key))
        return super().put(key, *args, **kwargs)

    def delete(self, key: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(("delete", key))
        return super().delete(key, *args, **kwargs)

    def get(self, key: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(("get", key))
        return super().get(key, *args, **kwargs)

    def get_start(self, key: str, size: int) -> Any:
        self.calls.append(("get", key))
        return super().get_start(key, size)

    def list_keys(self, prefix: str, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(("list", prefix))
        return super().list_keys(prefix, *args, **kwargs)


def queue_tiny_task(store_dir: Path) -> str:
    """A two-row ``copy`` task, queued on the local store in ``store_dir``."""
    service = TaskService(LocalStore(store_dir), Layout())
    return service.submit_file(Actor("startup"), "startup", "copy", None, b"a,b\n1,2\n").task_id


class PartsDropping:
    """A store whose ``upload_part`` fails (as a dropped network does) once ``allowed`` parts are in; every
    other call goes to ``inner``. ``sent``: the part numbers it let through."""

    def __init__(self, inner: Any, allowed: int) -> None:
        self.inner, self.allowed, self.sent = inner, allowed, []
        self.lock = threading.Lock()  # parts are sent from several threads

    def upload_part(self, key: str, upload_id: str, number: int, body: bytes) -> str:
        with self.lock:
            if len(self.sent) >= self.allowed:
                raise StoreUnavailable(f"the store did not answer for {key}: connection reset")
            self.sent.append(number)
        return self.inner.upload_part(key, upload_id, number, body)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def no_active_markers(store: Any, layout: Layout, within: float) -> None:
    """Wait (at most ``within`` seconds) until no task has an ``active/`` marker: a worker drops a task's marker
    right after the task's final record write, so a test that has just seen the record final may look between
    the two."""
    from conftest import wait_for

    wait_for(lambda: store.list_keys(layout.active_root) == [], within, 0.1, "every task's active marker dropped")


def doc_example(doc: str, n: int = 0) -> str:
    """The ``n``-th Python block (from 0) of ``docs/<doc>``, as written there, for a test to run."""
    import re

    text = (Path(__file__).resolve().parents[1] / "docs" / doc).read_text(encoding="utf-8")
    found = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(found) > n, f"docs/{doc} has fewer Python examples"
    return str(found[n])
