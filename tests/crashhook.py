"""Test-only crash hook: SIGKILL this process right after one particular store call.

Loaded into real worker processes with ``--handlers crashhook`` (importing a
handlers module is the one extension point the worker already has, so the
product carries no test hook). It wraps every store the process opens, in the
worker and in each attempt's child, and:

- ``S3TASK_TEST_CRASH_TRACE=<file>`` appends one JSON line per store call:
  ``{"point": "claim:put-update:status#1", "role": "worker", "t": <time.monotonic()>, ...}``;
- ``S3TASK_TEST_CRASH_AT=<point>`` kills the process with SIGKILL right after
  that call returns (or raises) — once: ``S3TASK_TEST_CRASH_ONCE=<file>`` is
  created first, and a process that finds it already there does not crash.
  The order is: that file, then the call's trace line (``"crash": true``), then
  the SIGKILL; so a test that has seen the file may not see the line yet.

A point names the call by what the process was doing (the s3task function on
the stack: claim, heartbeat, finish, fail, release, tidy, poll, presence,
child, …), the operation, the kind of key, and the occurrence of that triple
in this process — stable across runs, unlike a raw call counter that polls
and heartbeats would shift.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from s3task.store.base import PutMode

#: (qualified-name prefix of an s3task function on the stack, phase); the innermost match wins.
PHASES = (
    ("Presence.beat", "presence"),
    ("Holding._heartbeat", "heartbeat"),  # s3task/worker/holding.py
    ("Attempt._finish", "finish"),
    ("Attempt._fail", "fail"),
    ("Attempt._release", "release"),
    ("Claims._claim", "claim"),  # s3task/worker/claim.py
    ("Worker._tidy", "tidy"),
    ("Worker._read_all", "poll"),
    ("Worker.poll_once", "poll"),
    ("cas_probe", "probe"),
    ("_burst", "probe"),
    ("Transitions.create", "create"),  # TaskService's parts (s3task/tasks/)
    ("Inputs.upload_input", "upload"),
    ("_Sender.", "parts"),  # the parts of an upload that can be continued (s3task/tasks/resumable.py)
    ("Transitions.submit", "submit"),
    ("Transitions.cancel", "cancel"),
    ("Transitions.retry", "retry"),
    ("_is_ours", "child"),
    ("_run", "child"),
)


def key_kind(key: str) -> str:
    if "/_probe/" in key:
        return "probe"
    if "/active/" in key or key.endswith("/active/"):
        return "active"
    if "/by-user/" in key:
        return "by-user"
    if "/workers/" in key:
        return "presence"
    if key.endswith("/status.json"):
        return "status"
    if key.endswith("/input.csv"):
        return "input"
    if "/output-attempt-" in key:
        return "output"
    return "other"


def phase_of(depth: int = 1) -> str:
    frame = sys._getframe(depth)
    while frame is not None:
        name = frame.f_code.co_qualname
        for prefix, phase in PHASES:
            if name.startswith(prefix):
                return phase
        frame = frame.f_back
    return "other"


class CrashStore:
    """Wraps a store; calls ``on_call(point)`` after each call (which may end the process)."""

    def __init__(self, inner: Any, on_call: Callable[[str, str], None]) -> None:
        self.inner = inner
        self.on_call = on_call
        self.description = inner.description
        self._seen: Counter[tuple[str, str, str]] = Counter()
        self._lock = threading.Lock()

    def _after(self, op: str, key: str, phase: str) -> None:
        triple = (phase, op, key_kind(key))
        with self._lock:
            self._seen[triple] += 1
            point = f"{triple[0]}:{triple[1]}:{triple[2]}#{self._seen[triple]}"
        self.on_call(point, key)

    @contextlib.contextmanager
    def _call(self, op: str, key: str) -> Iterator[None]:
        phase = phase_of(1)
        try:
            yield
        finally:
            self._after(op, key, phase)

    def get(self, key: str, *, if_match: str | None = None):
        with self._call("get", key):
            return self.inner.get(key, if_match=if_match)

    def head(self, key: str):
        with self._call("head", key):
            return self.inner.head(key)

    def get_start(self, key: str, size: int):
        with self._call("get", key):
            return self.inner.get_start(key, size)

    def list_keys(self, prefix: str, **kwargs: Any) -> list[str]:
        with self._call("list", prefix):
            return self.inner.list_keys(prefix, **kwargs)

    def list_prefixes(self, prefix: str, **kwargs: Any) -> list[str]:
        with self._call("list", prefix):
            return self.inner.list_prefixes(prefix, **kwargs)

    def open_read(self, key: str, *, if_match: str | None = None):
        with self._call("read", key):
            return self.inner.open_read(key, if_match=if_match)

    def put(self, key: str, body: bytes, mode: PutMode, **kwargs: Any) -> str:
        with self._call(f"put-{mode.kind}", key):
            return self.inner.put(key, body, mode, **kwargs)

    @contextlib.contextmanager
    def open_write(self, key: str, mode: PutMode, **kwargs: Any) -> Iterator[Any]:
        phase = phase_of(1)
        try:
            with self.inner.open_write(key, mode, **kwargs) as writer:
                yield writer
        finally:
            self._after(f"write-{mode.kind}", key, phase)

    def upload_part(self, key: str, upload_id: str, part_number: int, body: bytes) -> str:
        with self._call("put-part", key):
            return self.inner.upload_part(key, upload_id, part_number, body)

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        with self._call("delete-if" if if_match else "delete", key):
            self.inner.delete(key, if_match=if_match)

    def presign_get(self, key: str, **kwargs: Any) -> str | None:
        return self.inner.presign_get(key, **kwargs)

    def presign_put(self, key: str, **kwargs: Any) -> str | None:
        return self.inner.presign_put(key, **kwargs)

    def now(self):
        return self.inner.now()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _role() -> str:
    import multiprocessing

    return "child" if multiprocessing.parent_process() is not None else "worker"


def _on_call_from_env() -> Callable[[str, str], None]:
    trace = os.environ.get("S3TASK_TEST_CRASH_TRACE")
    target = os.environ.get("S3TASK_TEST_CRASH_AT", "")
    once = os.environ.get("S3TASK_TEST_CRASH_ONCE", "")
    role = _role()

    def on_call(point: str, key: str) -> None:
        crash = point == target and _first_time(once)
        if trace:
            line = json.dumps(
                {"point": point, "key": key, "role": role, "pid": os.getpid(), "crash": crash, "t": time.monotonic()}
            )
            fd = os.open(trace, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
        if crash:
            os.kill(os.getpid(), signal.SIGKILL)

    return on_call


def _first_time(path: str) -> bool:
    if not path:
        return True
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        return True
    except FileExistsError:
        return False


def _install() -> None:
    """Wrap every store this process opens from now on (``s3task.store.wrap_stores``)."""
    if not (os.environ.get("S3TASK_TEST_CRASH_TRACE") or os.environ.get("S3TASK_TEST_CRASH_AT")):
        return
    import s3task.store as store_mod

    if any(getattr(w, "_crashhook", False) for w in store_mod._WRAPPERS):
        return
    on_call = _on_call_from_env()

    def wrap(inner: Any) -> CrashStore:
        return CrashStore(inner, on_call)

    wrap._crashhook = True  # type: ignore[attr-defined]
    store_mod.wrap_stores(wrap)


_install()
