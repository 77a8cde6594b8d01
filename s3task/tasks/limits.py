"""What one user may make a service hold: tasks created per minute, parameter bytes per task, uploads in
parts open at once (counted in the store, s3task.tasks.open_uploads); and the caches of records that a
service keeps, bounded in bytes as well as in count.

A service keeps the records it created (for their submit) and the finished records it read (they never
change, but for the corrections listed on a completed task, which whoever shows them reads fresh).
Bounded by count alone, 500 records of 60 KB parameters each are 30 MB a service never gives back,
and one user creating thousands of tasks a minute floods everyone's list. So:

- :class:`CreateLimits` (``S3TASK_MAX_CREATES_PER_MINUTE``, ``S3TASK_MAX_PARAMETERS_KB``,
  ``S3TASK_MAX_OPEN_UPLOADS``) and :class:`CreateRate`, the per-user count of the last minute's creates in
  this process;
- :class:`SizedCache`, an LRU map that drops its oldest entries past a count or a byte total.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from ..errors import TooManyRequests

if TYPE_CHECKING:
    from ..config import Settings

V = TypeVar("V")

#: The window over which creates are counted, in seconds.
WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class CreateLimits:
    """Per user, per process. ``per_minute`` 0: no limit. The defaults are the settings' defaults; a
    TaskService given none has no per-user limits (a service built in code, a test)."""

    per_minute: int = 60
    params_bytes: int = 16 * 1024
    #: Uploads in parts open at once on one user's tasks, counted in the store (0: no limit).
    open_uploads: int = 10

    @classmethod
    def of(cls, settings: Settings) -> CreateLimits:
        """The limits ``S3TASK_MAX_CREATES_PER_MINUTE``, ``S3TASK_MAX_PARAMETERS_KB`` and
        ``S3TASK_MAX_OPEN_UPLOADS`` set."""
        return cls(settings.max_creates_per_minute, settings.max_parameters_kb * 1024, settings.max_open_uploads)


class CreateRate:
    """Counts each user's creates over the last minute and refuses one past the limit."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, collections.deque[float]] = {}

    def take(self, user: str) -> None:
        """Count one create by ``user``, or raise :class:`TooManyRequests` saying when to try again."""
        if self.per_minute <= 0:
            return
        now = self._clock()
        with self._lock:
            self._forget(now)
            seen = self._seen.setdefault(user, collections.deque())
            if len(seen) >= self.per_minute:
                wait = max(1, int(seen[0] + WINDOW_SECONDS - now + 0.999))
                raise TooManyRequests(
                    f"you have created {len(seen)} tasks in the last minute, the most allowed "
                    f"(S3TASK_MAX_CREATES_PER_MINUTE={self.per_minute}); try again in {wait} s",
                    retry_after=wait,
                )
            seen.append(now)

    def _forget(self, now: float) -> None:
        """Drop creates older than the window, and users with none left (the map stays as small as the
        set of users active in the last minute)."""
        for user in list(self._seen):
            seen = self._seen[user]
            while seen and seen[0] <= now - WINDOW_SECONDS:
                seen.popleft()
            if not seen:
                del self._seen[user]


class SizedCache(Generic[V]):
    """An LRU map bounded by entries and by bytes (each entry's size is given when it is put)."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._items: collections.OrderedDict[str, tuple[V, int]] = collections.OrderedDict()
        self.bytes = 0
        self._lock = threading.Lock()

    def put(self, key: str, value: V, size: int) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            if size > self.max_bytes:
                return  # bigger than the whole cache: not kept
            self._items[key] = (value, size)
            self.bytes += size
            while len(self._items) > self.max_entries or self.bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self.bytes -= dropped

    def get(self, key: str) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def pop(self, key: str) -> V | None:
        with self._lock:
            found = self._items.pop(key, None)
            if found is None:
                return None
            self.bytes -= found[1]
            return found[0]

    def __len__(self) -> int:
        return len(self._items)


def record_bytes(record: object) -> int:
    """About what a record takes in memory: its JSON, the size it has in the store."""
    to_dict = getattr(record, "to_dict", None)
    return len(json.dumps(to_dict() if callable(to_dict) else record, ensure_ascii=False, default=str))
