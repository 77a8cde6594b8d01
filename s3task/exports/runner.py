"""Making copies in the background, once per process: each copy once, a few at a time, and where each stands."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import CannotExport, NotFound, OutputPreparing, S3TaskError
from ..store.base import ObjectMeta, ObjectStore

log = logging.getLogger("s3task.exports")

#: Copies made at once in a process (each reads the output and writes a copy; the rest wait).
MAX_AT_ONCE = 2


@dataclass(frozen=True)
class CopyState:
    """Where a copy stands: ``ready`` (with its size), ``preparing``, ``failed`` (with why), ``absent``
    (not asked for yet), or ``refused`` (it cannot be made, with why)."""

    kind: Literal["ready", "preparing", "failed", "absent", "refused"]
    size: int | None = None
    message: str = ""


class Exports:
    """Makes copies in background threads, each copy once, at most ``max_at_once`` at a time, and says
    where each stands."""

    def __init__(self, store: ObjectStore, max_at_once: int = MAX_AT_ONCE) -> None:
        self.store = store
        self.max_at_once = max(1, max_at_once)
        self._lock = threading.Lock()
        #: Copies being made or waiting their turn, the last failure of each, and refusals (kept).
        self._jobs: dict[str, Future[ObjectMeta]] = {}
        #: Copies known to exist (they never change): key -> size.
        self._ready: dict[str, int] = {}
        self._queue: deque[tuple[str, Callable[[], ObjectMeta], Future[ObjectMeta]]] = deque()
        self._threads = 0

    def state(self, key: str) -> CopyState:
        """Where the copy at ``key`` stands; a HEAD only when this process has not seen it made."""
        with self._lock:
            if key in self._ready:
                return CopyState("ready", self._ready[key])
            job = self._jobs.get(key)
        if job is not None:
            if not job.done():
                return CopyState("preparing")  # being made, or waiting its turn
            error = job.exception()
            if isinstance(error, CannotExport):
                return CopyState("refused", message=error.message)
            if error is not None:
                return CopyState("failed", message=_reason(error))
        try:
            size = self.store.head(key).size
        except NotFound:
            return CopyState("absent")
        with self._lock:
            self._ready[key] = size
        return CopyState("ready", size)

    def start(self, key: str, make_copy: Callable[[], ObjectMeta]) -> Future[ObjectMeta]:
        """Queue ``make_copy()`` (which writes ``key``), unless it is queued, running, made here, or refused.

        A copy whose last try failed is tried again; one refused (:class:`CannotExport`) is not: its
        refusal is the answer.
        """
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and (not job.done() or not _retryable(job.exception())):
                return job
            if key in self._ready:  # made already: nothing to do
                made: Future[ObjectMeta] = Future()
                made.set_result(ObjectMeta(key, self._ready[key], ""))
                return made
            job = Future()
            job.set_running_or_notify_cancel()
            self._jobs[key] = job
            self._queue.append((key, make_copy, job))
            spawn = self._threads < self.max_at_once
            if spawn:
                self._threads += 1
        if spawn:
            threading.Thread(target=self._work, name="s3task-export", daemon=True).start()
        return job

    def _work(self) -> None:
        """Make queued copies one after another until none is left."""
        while True:
            with self._lock:
                if not self._queue:
                    self._threads -= 1
                    return
                key, make_copy, job = self._queue.popleft()
            self._run(key, make_copy, job)

    def _run(self, key: str, make_copy: Callable[[], ObjectMeta], job: Future[ObjectMeta]) -> None:
        try:
            meta = make_copy()
            size = meta.size
        except BaseException as e:  # the job carries it to whoever waits; this thread goes on
            if not isinstance(e, S3TaskError):
                log.exception("making %s failed", key)
            job.set_exception(e)
            return
        with self._lock:
            self._ready[key] = size
            self._jobs.pop(key, None)  # made: its size is all this process keeps
        job.set_result(meta)

    def wait(self, key: str, make_copy: Any, timeout: float | None = None) -> ObjectMeta:
        """The copy at ``key``, made now if it is not there yet (waiting for it); raises why it cannot be.

        ``timeout``: wait at most this long, then raise :class:`~s3task.errors.OutputPreparing` (the copy
        goes on being made in the background; ask again later).
        """
        if self.state(key).kind == "ready":
            return self.store.head(key)
        try:
            return self.start(key, make_copy).result(timeout)
        except FutureTimeout:
            raise OutputPreparing(
                f"the copy is still being made; ask again in a few seconds (it was asked for {timeout:g} s ago)"
            ) from None


def _retryable(error: BaseException | None) -> bool:
    """Whether a copy that failed with ``error`` may be made on another try (a refusal stays one)."""
    return error is not None and not isinstance(error, CannotExport)


def _reason(error: BaseException) -> str:
    if isinstance(error, S3TaskError):
        return error.message
    return f"{type(error).__name__}: {error}"
