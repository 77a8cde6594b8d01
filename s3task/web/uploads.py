"""What an upload through a ``/transfer`` link may take: its link's lifetime, a pace, one at a time.

A signed upload link promises one PUT of at most ``S3TASK_MAX_UPLOAD_MB`` to one key until it
expires. Checking the link when the request starts is not enough to hold that: a body that trickles
in keeps a connection, a staged file and a worker slot for as long as the client likes, and ten
PUTs through one link at once each stage up to the limit. So, while a body arrives:

- the link's expiry still holds: a body still arriving when the link expires is cut off (403);
- no read waits longer than :data:`READ_TIMEOUT_SECONDS`, and once an upload has run that long it
  must have averaged :data:`MIN_BYTES_PER_SECOND` (408);
- one upload per key at a time in this process (409 for a second): what is staged for a key is
  never more than the limit.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator

import anyio

from .errors import HttpError

#: The longest a read of an upload's body may wait for bytes; also the grace before the pace is judged.
READ_TIMEOUT_SECONDS = 30.0
#: The slowest average an upload may keep once it has run :data:`READ_TIMEOUT_SECONDS`: far below any
#: real connection, far above a trickle that only means to hold the connection open.
MIN_BYTES_PER_SECOND = 8 * 1024


class Pace:
    """How slow a body may be: a per-read timeout and a minimum average rate (after that timeout)."""

    def __init__(self, read_timeout: float = READ_TIMEOUT_SECONDS, min_rate: float = MIN_BYTES_PER_SECOND) -> None:
        if read_timeout <= 0 or min_rate < 0:
            raise ValueError("an upload's read timeout must be positive and its minimum rate not negative")
        self.read_timeout, self.min_rate = read_timeout, min_rate


def link_expired() -> HttpError:
    return HttpError(403, "expired", "this transfer link expired before the upload finished; ask for a new one")


def too_slow(pace: Pace) -> HttpError:
    message = (
        f"the upload was too slow (no data for {pace.read_timeout:g} seconds, or less than "
        f"{pace.min_rate / 1024:g} KiB/s on average); try again on a better connection"
    )
    return HttpError(408, "upload_too_slow", message)


async def paced(body: AsyncIterator[bytes], seconds_left: Callable[[], float], pace: Pace) -> AsyncIterator[bytes]:
    """The chunks of ``body``, cut off when the link expires (``seconds_left()`` reaches 0) or the pace drops."""
    started, size = time.monotonic(), 0
    chunks = body.__aiter__()
    while True:
        left = seconds_left()
        if left <= 0:
            raise link_expired()
        try:
            with anyio.fail_after(min(pace.read_timeout, left)):
                chunk = await chunks.__anext__()
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise (link_expired() if seconds_left() <= 0 else too_slow(pace)) from None
        size += len(chunk)
        running = time.monotonic() - started
        if running > pace.read_timeout and size < pace.min_rate * running:
            raise too_slow(pace)
        yield chunk


class OneAtATime:
    """The keys being uploaded to right now, in this process (the server's one event loop)."""

    def __init__(self) -> None:
        self._busy: set[str] = set()

    @contextlib.contextmanager
    def hold(self, key: str) -> Iterator[None]:
        if key in self._busy:
            raise HttpError(
                409, "upload_in_progress", "another upload to this file is still under way; wait for it to finish"
            )
        self._busy.add(key)
        try:
            yield
        finally:
            self._busy.discard(key)
