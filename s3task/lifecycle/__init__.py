"""Task states and the allowed transitions, as data plus pure functions.

```
created  --upload-->  created                      (what continues its upload noted: file, upload id)
created  --submit-->  queued  --claim-->  running  --complete-->  completed
running  --heartbeat-->  running                    (same owner only)
running  --release-->  queued                       (graceful stop; no failed attempt charged)
running  --fail / expire-->  failed                 (a failed attempt)
failed   --retry-->  queued                         (automatic after retry_at while not final;
                                                     an operator or the creator may retry any
                                                     failed task, which grants one more attempt)
running  --fail-->  failed for good               (attempts used up, or bad input)
failed for good  --retry by a person-->  queued     (one more attempt)
created|queued|running|failed  --cancel-->  abandoned
completed  --correct-->  completed                 (a task made of its corrected rows is listed on it)
```

``completed``, ``abandoned`` and failed for good (``failed`` with ``final``)
are terminal; the states are :class:`s3task.states.State`, derived from the
record, and :data:`TRANSITIONS` (:mod:`.table`) is the one table of what may follow what;
:mod:`.by_worker` holds the transitions of a task a worker holds, :mod:`.by_person` the ones people
ask for.
Every function here takes a record and the store's current time and returns
the next record (a new object) or raises :class:`InvalidTransition` with a
sentence a user can act on. They never touch the store: the caller writes
the result with a compare-and-set (:func:`s3task.records.update_record`).
"""

from __future__ import annotations

from ..progress import Progress
from ..states import State, Status
from .by_person import cancel, check_correctable, note_correction, note_upload, retry, retry_due, submit
from .by_worker import (
    BACKOFF_BASE_SECONDS,
    BACKOFF_MAX_SECONDS,
    MAX_RELEASES,
    Lease,
    backoff_seconds,
    check_owner,
    claim,
    complete,
    expire,
    fail,
    heartbeat,
    lease_of,
    release,
)
from .table import TRANSITIONS, allows, describe

__all__ = [  # Progress, State, Status: re-exported for callers
    "BACKOFF_BASE_SECONDS", "BACKOFF_MAX_SECONDS", "MAX_RELEASES", "TRANSITIONS", "Lease", "Progress", "State",
    "Status", "allows", "backoff_seconds", "cancel", "check_correctable", "check_owner", "claim", "complete",
    "describe", "expire", "fail", "heartbeat", "lease_of", "note_correction", "note_upload", "release", "retry",
    "retry_due", "submit",
]  # fmt: skip
