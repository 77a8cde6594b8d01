"""A standing worker's share of watching the recipes' inboxes (s3task.tasks.inbox_sweep).

Between its polls the worker calls :meth:`InboxWatch.maybe`: once every ``inbox_interval`` seconds
(the first at once) it sweeps, if it holds the sweep's lease; otherwise it only looks at the lease (one
GET). A sweep's trouble is logged and never stops the loop. A stopping worker gives the lease up.
"""

from __future__ import annotations

import logging
import time

from ..config import Settings
from ..layout import Layout
from ..records import StateHook
from ..store.base import ObjectStore
from ..tasks import TaskService
from ..tasks.inbox_sweep import InboxSweeper, Swept

log = logging.getLogger("s3task.inbox")


class InboxWatch:
    """The sweeps of one worker, on their own interval (``inbox_interval``; 0: this worker never sweeps)."""

    def __init__(self, store: ObjectStore, layout: Layout, settings: Settings, hook: StateHook | None) -> None:
        self.interval = settings.inbox_interval
        self.sweeper: InboxSweeper | None = None
        if self.interval > 0:
            service = TaskService(store, layout, max_attempts=settings.max_attempts, hook=hook)
            self.sweeper = service.inboxes.sweeper(settings.worker_id, interval=self.interval)
        self._next = time.monotonic()
        #: The sweeps this worker made (held the lease) and looked at the lease only (tests, the benchmark).
        self.sweeps = 0
        self.looks = 0

    def maybe(self) -> Swept | None:
        """Sweep if an interval passed since the last (never raises)."""
        if self.sweeper is None or time.monotonic() < self._next:
            return None
        self._next = time.monotonic() + self.interval
        try:
            swept = self.sweeper.sweep()
        except Exception as e:  # a store failing, or a bug: the worker's loop goes on, the next sweep tries again
            log.warning("inbox sweep failed: %s", e, exc_info=not isinstance(e, OSError))
            return None
        if swept.held:
            self.sweeps += 1
        else:
            self.looks += 1
        return swept

    def stop(self) -> None:
        """Give up the sweep's lease, so that another worker sweeps from its next interval."""
        if self.sweeper is not None:
            self.sweeper.release()
