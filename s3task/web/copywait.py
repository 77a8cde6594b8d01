"""Waiting for a copy of an output (Excel, exact values, rows with errors) without holding a thread.

A copy is made in a background thread of its own (:mod:`s3task.exports`); a request for it waits a
while for it to be made. Waiting in a worker thread (``run_in_threadpool``) would hold one of
AnyIO's 40 for up to :data:`s3task.web.api.PREPARE_WAIT_SECONDS` each, and a few dozen requests
for a large copy would leave none for anyone else's requests. So a request waits on the event
loop instead, woken when the copy's future is done, and at most :data:`MAX_WAITERS` wait at once:
the next is answered 503 ``output_preparing`` with ``Retry-After`` straight away.
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import Future
from typing import Any

from ..errors import OutputPreparing

#: Requests that may wait for copies at once, per process (each holds a connection and a little
#: memory, no thread); more are told to ask again.
MAX_WAITERS = 16


class CopyWaiters:
    """Counts the requests waiting for copies in one process (one event loop)."""

    def __init__(self, limit: int = MAX_WAITERS) -> None:
        self.limit = limit
        self.waiting = 0

    async def wait(self, job: Future[Any], timeout: float) -> None:
        """Return once ``job`` is done (raising what it raised), or raise :class:`OutputPreparing`
        after ``timeout`` seconds, or at once when :attr:`limit` requests are waiting already."""
        if job.done():
            job.result()
            return
        if self.waiting >= self.limit:
            raise OutputPreparing(
                f"the copy is still being made, and {self.waiting} requests are waiting for copies already; "
                "ask again in a few seconds"
            )
        self.waiting += 1  # only ever changed on the event loop's thread: no lock
        try:
            await _done(job, timeout)
        finally:
            self.waiting -= 1
        job.result()


async def _done(job: Future[Any], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    finished = asyncio.Event()

    def wake(_: Future[Any]) -> None:  # runs in the thread that made the copy
        with contextlib.suppress(RuntimeError):  # the loop is closed: the request is gone
            loop.call_soon_threadsafe(finished.set)

    job.add_done_callback(wake)
    try:
        await asyncio.wait_for(finished.wait(), timeout)
    except TimeoutError:
        raise OutputPreparing(
            f"the copy is still being made; ask again in a few seconds (it was asked for {timeout:g} s ago)"
        ) from None
