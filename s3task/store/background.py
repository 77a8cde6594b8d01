"""A thread that consumes a streaming write's pieces, so the writer does not wait for the network.

The engine writes an attempt's output from a thread that also checks
formulas and encodes CSV. On S3 each 8 MB part is an HTTP upload that takes
about as long as producing the part (S3 takes roughly 50-150 MB/s on one
connection); uploading on a thread of its own, one part queued at most,
overlaps the two. Socket sends release the GIL.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

_STOP = object()


class Background:
    """``consume(item)`` for each item written, in order, on a thread of its own.

    :meth:`write` waits while ``depth`` items are queued. The first exception
    raised by ``consume`` is raised again in the caller by the next
    :meth:`write` and by :meth:`close`; items after it are dropped.
    """

    def __init__(self, consume: Callable[[Any], Any], *, depth: int = 1, name: str = "s3task-store-write") -> None:
        self._consume = consume
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._dropping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if self._error is not None or self._dropping:
                continue
            try:
                self._consume(item)
            except BaseException as e:  # raised again in the caller's thread
                self._error = e

    def write(self, item: Any) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put(item)

    def close(self) -> None:
        """Wait until every item is consumed; raise the first error of ``consume``."""
        self._queue.put(_STOP)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def abort(self) -> None:
        """Drop what is still queued and wait for the item in hand (the write is being abandoned)."""
        self._dropping = True
        self._queue.put(_STOP)
        self._thread.join()
