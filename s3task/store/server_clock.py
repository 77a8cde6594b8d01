"""The store's clock as its answers show it: the HTTP ``Date`` of the last response, held as an offset from
this machine's clock, so that leases are judged by one clock whichever worker reads it (S3, Azure, GCS)."""

from __future__ import annotations

import email.utils
import threading
from datetime import UTC, datetime

from ..clock import Clock


class ServerClock:
    """``now()``: this machine's clock plus the offset the last ``Date`` header showed (none seen: no offset)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._offset = 0.0  # the store's clock minus ours
        self._lock = threading.Lock()

    def note(self, header: str | None) -> None:
        """Take a response's ``Date`` header (None, or one that does not parse: nothing changes)."""
        if not header:
            return
        try:
            server = email.utils.parsedate_to_datetime(header).timestamp()
        except (TypeError, ValueError):
            return
        with self._lock:  # Date has one-second resolution; +0.5 centres the error
            self._offset = server + 0.5 - self._clock.wall()

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.wall() + self._offset, tz=UTC)
