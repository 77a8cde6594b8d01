"""The machine's wall clock, as the rest of s3task sees it.

Lease decisions never use it directly: they use the store's clock
(``ObjectStore.now()``), which the S3 backend derives from the HTTP ``Date``
of recent responses by measuring this clock's offset. A :class:`Clock` is
handed to a store when it is opened; whoever opens it from settings passes
``Settings.clock``, which is ``S3TASK_CLOCK_SKEW_SECONDS`` off the machine's
clock. Tests set that variable to give one worker process a wrong clock and
prove that it neither steals nor keeps leases.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class Clock:
    """This machine's clock, ``skew`` seconds off (0: as it is)."""

    skew: float = 0.0

    def wall(self) -> float:
        """Seconds since the epoch by this (possibly wrong) clock."""
        return time.time() + self.skew

    def wall_dt(self) -> datetime:
        return datetime.fromtimestamp(self.wall(), tz=UTC)


#: The machine's clock as it is: what a store keeps when nobody hands it another.
MACHINE = Clock()
