"""The control API: everything a user (through the app, the CLI or HTTP) can do to tasks.

:class:`TaskService` is the one object its callers hold; inside, parts with one job each share one
:class:`~s3task.records.Records` (the store's records, and the hook told of state changes):

- :mod:`.access` — who may act on a task (its owner, or an operator); anyone may look;
- :mod:`.transitions` — create, submit, cancel, retry; get and list (healing a lost marker,
  with a running attempt's live counts);
- :mod:`.inputs` — a task's file, streamed through the caller or sent by a browser to the store;
- :mod:`.resumable` — a file the caller holds (the CLI's), sent so that an interrupted upload continues;
- :mod:`.limits` — what one user may make a service hold (creates a minute, parameter bytes), bounded caches;
- :mod:`.outputs` — the output: download URLs, copies (Excel, exact values, errors), a preview.

The API owns state transitions: each call re-reads the record, checks who is asking, and writes
through :mod:`s3task.lifecycle` with a compare-and-set. Clients never decide a transition.
"""

from __future__ import annotations

from .access import Actor
from .inputs import Created
from .limits import CreateLimits
from .looking import _READERS, MARKER_CHECK_AFTER, MAX_LIST, Page
from .service import TaskService
from .step_lists import REFERENCE_READS, reference_name
from .transitions import MAX_NAME, MAX_PAYLOAD_BYTES
from .urls import UrlSigner

__all__ = [
    "MARKER_CHECK_AFTER",
    "MAX_LIST",
    "MAX_NAME",
    "MAX_PAYLOAD_BYTES",
    "REFERENCE_READS",
    "_READERS",
    "Actor",
    "CreateLimits",
    "Created",
    "Page",
    "TaskService",
    "UrlSigner",
    "reference_name",
]
