"""The machine's wall clock, as the rest of s3task sees it.

Lease decisions never use it directly: they use the store's clock
(``ObjectStore.now()``), which the S3 backend derives from the HTTP ``Date``
of recent responses by measuring this clock's offset. Tests set
``S3TASK_CLOCK_SKEW_SECONDS`` to give one worker process a wrong clock and
prove that it neither steals nor keeps leases.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

_SKEW = float(os.environ.get("S3TASK_CLOCK_SKEW_SECONDS") or 0.0)


def wall() -> float:
    """Seconds since the epoch by this machine's (possibly wrong) clock."""
    return time.time() + _SKEW


def wall_dt() -> datetime:
    return datetime.fromtimestamp(wall(), tz=UTC)
