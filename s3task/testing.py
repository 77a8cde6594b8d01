"""Helpers for testing task types and code built on s3task, without S3, moto or a worker.

- :func:`run_task_type` runs a task type over a small CSV exactly as a
  worker's attempt does — the same engine (:func:`s3task.processing.run`),
  reading the input from a store with ``open_read`` and writing the output
  with ``open_write`` — but in the calling process, and returns the output
  rows, the counts and the raw bytes::

      from s3task.testing import run_task_type
      from my_company.tasks import Upper

      def test_upper():
          result = run_task_type(Upper, "name\\nann\\n")
          assert result.rows["name"].tolist() == ["ANN"]

- :class:`MemoryStore` is an :class:`~s3task.store.base.ObjectStore` kept in
  a dict, with the local store's semantics (conditional writes, ETags,
  listings, streaming, metadata); it passes the same contract suite as the
  S3 and local backends.

- Importing this module registers the ``memory://NAME[/prefix]`` store URL
  (:func:`s3task.store.open_store`): one NAME is one store for the whole
  *process* — ``open_store("memory://x")`` twice gives the same data —
  and the prefix defaults to ``batch-tasks``, as for ``s3://``.

A memory store lives in one process only. A real worker runs each attempt
in a child process (started from a fork server), which opens the store URL
again: there ``memory://NAME`` is a different, empty store (or no store at
all, if nothing imported this module), so the attempt fails for a missing
input. A ``TaskService`` on a memory store is fine for testing the control
API (create, upload, submit, list, cancel); to process tasks use
:func:`run_task_type`, which needs no child, or run a real worker on a local
directory (a temp dir as ``S3TASK_STORE``).

This module needs neither pytest nor moto.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, BinaryIO
from urllib.parse import urlparse

import pandas as pd

from . import handlers, processing
from .clock import MACHINE, Clock
from .csvio import DEFAULT_BLOCK_SIZE
from .errors import AlreadyExists, NotFound, PreconditionFailed, UnknownTaskType
from .handlers import TaskType
from .layout import CSV_TYPE, DEFAULT_PREFIX, Layout
from .progress import Progress
from .store import register_backend
from .store.base import GetResult, ObjectMeta, ObjectStore, PutMode, check_key
from .store.local_files import ETagHasher

__all__ = ["MemoryStore", "Result", "clear_memory_stores", "memory_store", "run_task_type"]


# --- the store --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Object:
    body: bytes
    etag: str
    last_modified: datetime
    metadata: dict[str, str]
    content_type: str | None

    def meta(self, key: str) -> ObjectMeta:
        return ObjectMeta(
            key=key,
            size=len(self.body),
            etag=self.etag,
            last_modified=self.last_modified,
            metadata=dict(self.metadata),
            content_type=self.content_type,
        )


class MemoryWriter:
    """What :meth:`MemoryStore.open_write` yields: collects the bytes; ``etag`` is set when the block exits."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._hash = ETagHasher()
        self.etag = ""

    def write(self, data: bytes | memoryview) -> int:
        self._hash.update(data)
        before = len(self._buffer)
        self._buffer += data  # a copy: the caller may reuse its buffer
        return len(self._buffer) - before

    def _seal(self) -> tuple[bytes, str]:
        self.etag = self._hash.etag()
        return bytes(self._buffer), self.etag


class MemoryStore:
    """An :class:`~s3task.store.base.ObjectStore` in a dict, for tests; see the module docstring.

    The same semantics as the local store: a create (If-None-Match ``*``)
    fails with :class:`~s3task.errors.AlreadyExists` if the key exists; an
    update and a conditional delete compare the current ETag under one lock
    (so a compare-and-set is atomic across threads) and fail with
    :class:`~s3task.errors.PreconditionFailed`; ETags are the quoted MD5 of
    the content up to 8 MiB and the local store's multipart-style ETag above
    (:class:`~s3task.store.local_files.ETagHasher`). Listings are in key order
    (code point order, which is UTF-8 byte order, as S3 lists). Objects keep
    user metadata and a content type; ``presign_*`` return None, as on the
    local store; ``now()`` is the machine's clock (``clock``). Not shared between
    processes.
    """

    def __init__(self, name: str = "", *, clock: Clock = MACHINE) -> None:
        self.name = name
        self.clock = clock
        self.description = f"in-memory store {name!r} (this process only)" if name else "in-memory store"
        self._objects: dict[str, _Object] = {}
        self._lock = threading.Lock()

    # --- reads -----------------------------------------------------------

    def _current(self, key: str, if_match: str | None) -> _Object:
        check_key(key)
        with self._lock:
            found = self._objects.get(key)
        if found is None:
            raise NotFound(f"{key} not found")
        if if_match is not None and found.etag != if_match:
            raise PreconditionFailed(f"{key} changed (ETag {found.etag}, expected {if_match})")
        return found

    def get(self, key: str, *, if_match: str | None = None) -> GetResult:
        found = self._current(key, if_match)
        return GetResult(found.body, found.meta(key))

    def head(self, key: str) -> ObjectMeta:
        return self._current(key, None).meta(key)

    def get_start(self, key: str, size: int) -> GetResult:
        found = self._current(key, None)
        return GetResult(found.body[:size], found.meta(key))

    @contextlib.contextmanager
    def open_read(self, key: str, *, if_match: str | None = None) -> Iterator[BinaryIO]:
        with io.BytesIO(self._current(key, if_match).body) as f:
            yield f

    def list_keys(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        check_key(prefix + "x")
        with self._lock:
            keys = sorted(k for k in self._objects if k.startswith(prefix))
        return _page(keys, start_after, limit)

    def list_prefixes(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        if prefix and not prefix.endswith("/"):
            raise ValueError("list_prefixes needs a prefix ending in '/'")
        with self._lock:
            keys = [k for k in self._objects if k.startswith(prefix)]
        found = {prefix + rest.split("/", 1)[0] + "/" for k in keys if "/" in (rest := k[len(prefix) :])}
        return _page(sorted(found), start_after, limit)

    # --- writes ----------------------------------------------------------

    def put(
        self,
        key: str,
        body: bytes,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> str:
        with self.open_write(key, mode, content_type=content_type, metadata=metadata) as w:
            w.write(body)
        return w.etag

    @contextlib.contextmanager
    def open_write(
        self,
        key: str,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Iterator[MemoryWriter]:
        check_key(key)
        writer = MemoryWriter()
        yield writer  # an exception in the block leaves nothing behind: nothing was stored yet
        body, etag = writer._seal()
        obj = _Object(body, etag, self.clock.wall_dt(), dict(metadata or {}), content_type)
        with self._lock:
            current = self._objects.get(key)
            if mode.kind == "create" and current is not None:
                raise AlreadyExists(f"{key} already exists")
            if mode.kind == "update":
                _check_etag(key, current, mode.etag)
            self._objects[key] = obj

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        check_key(key)
        with self._lock:
            if if_match is not None:
                _check_etag(key, self._objects.get(key), if_match)
            self._objects.pop(key, None)

    # --- URLs and clock ---------------------------------------------------

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str | None:
        return None

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str | None:
        return None

    def now(self) -> datetime:
        return self.clock.wall_dt()


def _check_etag(key: str, current: _Object | None, expected: str | None) -> None:
    if current is None:
        raise PreconditionFailed(f"{key} no longer exists")
    if current.etag != expected:
        raise PreconditionFailed(f"{key} changed (ETag {current.etag}, expected {expected})")


def _page(items: list[str], start_after: str | None, limit: int | None) -> list[str]:
    if start_after is not None:
        items = [k for k in items if k > start_after]
    return items if limit is None else items[:limit]


# --- memory://NAME ------------------------------------------------------------------------------

_NAMED: dict[str, MemoryStore] = {}
_NAMED_LOCK = threading.Lock()


def memory_store(name: str, clock: Clock = MACHINE) -> MemoryStore:
    """The process-wide store that ``memory://NAME`` opens (made empty, with ``clock``, on first use).

    It is one object for the whole process, so it keeps the clock it was first opened with.
    """
    with _NAMED_LOCK:
        store = _NAMED.get(name)
        if store is None:
            store = _NAMED[name] = MemoryStore(name, clock=clock)
        return store


def clear_memory_stores() -> None:
    """Forget every ``memory://`` store: the next ``open_store`` of a name starts empty (call between tests)."""
    with _NAMED_LOCK:
        _NAMED.clear()


def _open_memory(url: str, clock: Clock) -> tuple[ObjectStore, Layout]:
    parsed = urlparse(url)
    if not parsed.netloc:
        raise ValueError(f"{url!r} names no store (expected memory://NAME or memory://NAME/prefix)")
    return memory_store(parsed.netloc, clock), Layout(parsed.path.strip("/") or DEFAULT_PREFIX)


register_backend("memory", _open_memory)


# --- running a task type ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # no ==: comparing DataFrames needs .equals
class Result:
    """What :func:`run_task_type` returns."""

    #: The output as the app reads it: every column text, an empty cell ``""`` (formula cells keep their ``'``).
    rows: pd.DataFrame
    #: The attempt's final counts, as the worker writes them into the record.
    progress: Progress
    #: The output file byte for byte (UTF-8, CRLF, every text cell quoted).
    output: bytes = field(repr=False)


_TEST_ID = "0" * 26  # a valid task id, for the same keys a worker's attempt uses
_REGISTERING = threading.RLock()


def run_task_type(
    task_type: str | type[TaskType],
    csv: str | bytes,
    params: dict[str, Any] | None = None,
    *,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> Result:
    """Run ``task_type`` over ``csv`` as a worker's attempt does, in this process; return what it wrote.

    ``task_type`` is a registered name or a :class:`~s3task.handlers.TaskType`
    subclass (registered for the call if it is not, and unregistered after).
    ``params`` are checked and completed with defaults as on submit. The
    input goes through the worker's engine (``s3task.processing.run``) with
    the store's streaming reader and writer, in blocks of ``block_size``
    bytes (the worker's default; pass a small one to see a handler fed more
    than one block). :class:`~s3task.errors.InvalidInput` — from the
    handler, the parameters or an unreadable CSV, with the message the task
    would fail with — and any other exception the handler raises reach the
    caller unchanged.
    """
    data = csv.encode() if isinstance(csv, str) else bytes(csv)
    with _registered(task_type) as name:
        checked = handlers.get(name).validate(params)
        store, layout = MemoryStore("run_task_type"), Layout()
        input_key, output_key = layout.input_key(_TEST_ID), layout.output_key(_TEST_ID, 1)
        etag = store.put(input_key, data, PutMode.CREATE, content_type=CSV_TYPE)
        with (
            store.open_read(input_key, if_match=etag) as source,
            store.open_write(output_key, PutMode.CREATE, content_type=CSV_TYPE) as sink,
        ):
            counts = processing.run(name, checked, source, sink, lambda _counts: None, block_size=block_size)
    output = store.get(output_key).body
    return Result(rows=_read_output(output), progress=counts, output=output)


@contextlib.contextmanager
def _registered(task_type: str | type[TaskType]) -> Iterator[str]:
    """The name to run ``task_type`` by, registering a class that is not registered for the duration."""
    if isinstance(task_type, str):
        handlers.get(task_type)  # an unknown name: UnknownTaskType, listing the known ones
        yield task_type
        return
    if not (isinstance(task_type, type) and issubclass(task_type, TaskType)):
        raise TypeError(f"expected a task type name or a TaskType subclass, not {task_type!r}")
    name = getattr(task_type, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{task_type.__qualname__} has no name: set the class attribute `name`")
    with _REGISTERING:  # calls that swap the registry take turns
        try:
            before: type[TaskType] | None = handlers.get(name)
        except UnknownTaskType:
            before = None
        if before is task_type:
            yield name
            return
        handlers.register(task_type)
        try:
            yield name
        finally:
            if before is None:
                handlers._REGISTRY.pop(name, None)
            else:
                handlers.register(before)


def _read_output(output: bytes) -> pd.DataFrame:
    if not output:  # no columns at all: the handler returned nothing, not even a header
        return pd.DataFrame()
    return pd.read_csv(io.BytesIO(output), dtype=str, keep_default_na=False, na_filter=False)
