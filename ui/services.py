"""Process-wide objects for the app: one TaskService per store, the embedded worker, worker presence.

Each of these is a singleton across reruns, tabs and sessions. The TaskService
keeps finished records in memory (they never change, but for the corrections listed on a completed
task, which its page reads fresh), so an open Tasks page
re-reads only live tasks; it lives in ``ui/server.py`` because the web server's
``/api`` and ``/transfer`` routes share it and are built before any page runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from s3task.config import Settings
from s3task.handlers import ERROR_COLUMN
from s3task.store import open_store
from s3task.tasks import Actor, TaskService

from .server import notifier_for as notifier_for  # re-exported: pages and tests use them from here
from .server import service_for as service_for
from .server import task_service as task_service

log = logging.getLogger("s3task.app")

#: A worker counts as seen this long after its last beat: it beats every minute while it runs a task and
#: every five minutes while idle (s3task.worker.presence.SEEN_WITHIN: two idle beats).
WORKER_WINDOW_SECONDS = 600


@dataclass(frozen=True)
class WorkerStatus:
    """Whether this app runs a worker itself, and what went wrong starting it."""

    embedded: bool
    problem: str | None = None


@st.cache_resource(ttl=60, show_spinner=False)
def _embedded_worker(_settings: Settings) -> WorkerStatus:
    """Start the in-process worker once per process, after the store passed the conditional-write probe.

    ``ensure_embedded`` is idempotent and restarts a worker thread that died, so
    asking it again every minute (the cache's ttl) also revives a crashed one, and
    re-probes a store that failed. It registers its own exit hook, which hands the
    task in hand back to the queue.
    """
    try:
        from s3task.worker import ensure_embedded
    except ImportError as e:
        log.warning("no embedded worker: %s", e)
        return WorkerStatus(False, f"the worker module is not available ({e})")
    problem = ensure_embedded(_settings, notifier_for(_settings))
    if problem is None:
        from s3task.worker import wake_embedded

        # A submit or retry from a page (or from /api, which shares this service) wakes our worker at once.
        service_for(_settings).on_queued = wake_embedded
    return WorkerStatus(problem is None, problem)


def embedded_worker(settings: Settings) -> WorkerStatus:
    if not settings.embedded_worker:
        return WorkerStatus(False)
    return _embedded_worker(settings)


# Short-lived: a worker that has just started must not be reported missing for long.
@st.cache_data(ttl=10, show_spinner=False)
def live_workers(store_url: str, include_stopped: bool = False) -> list[dict[str, Any]] | None:
    """Workers seen recently, or None if presence cannot be read (no worker module yet, store down).

    ``include_stopped``: also workers that stopped within that time (the Workers page shows them).
    """
    try:
        from s3task.worker import live_workers as read_presence
    except ImportError:
        return None
    store, layout = open_store(store_url)
    try:
        return read_presence(store, layout, within_seconds=WORKER_WINDOW_SECONDS, include_stopped=include_stopped)
    except Exception as e:
        log.warning("could not read worker presence: %s", e)
        return None


@st.cache_data(max_entries=32, show_spinner=False)
def output_preview(
    _service: TaskService, _actor: Actor, store_url: str, task_id: str, output_path: str, errors_only: bool
) -> pd.DataFrame:
    """The first 100 output rows, values as they are; cached per output object, which never changes once written.

    The values are the exact ones (without the ``'`` the CSV file has before values a
    spreadsheet would run); the errors-only view has the error column first, so the
    error is read without scrolling past the data. The caller checks access before
    calling: the cache key deliberately leaves out the user, since the rows do not
    depend on who reads them.
    """
    frame = _service.read_output(_actor, task_id, rows=100, errors_only=errors_only, exact=True)
    if errors_only and ERROR_COLUMN in frame.columns:
        frame = frame[[ERROR_COLUMN, *(c for c in frame.columns if c != ERROR_COLUMN)]]
    return frame


@st.cache_data(max_entries=32, show_spinner=False)
def output_columns(_service: TaskService, _actor: Actor, store_url: str, task_id: str, output_path: str) -> list[str]:
    """The output's column names as written (not the preview's pandas names: an empty name, a repeated one, a
    name a spreadsheet would run); cached per output object, which never changes. The caller checks access."""
    return _service.output_columns(_actor, task_id)
