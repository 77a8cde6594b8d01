"""What attempts killed mid-write leave behind, dropped by the worker itself.

A cancelled, stalled or memory-killed attempt's process is killed, so its own clean-up never runs:
on S3 its output's multipart upload stays open (parts billed until aborted), on the local directory
its staged file stays in ``.s3task-meta/tmp``. The worker aborts the upload of the attempt it killed
at once (:func:`drop_partial_output`), and sweeps staged files no live writer holds once they are a
grace period old (:class:`Sweeper`) — which also takes those of uploads and app processes that died.
"""

from __future__ import annotations

import logging
import time

from ..config import Settings
from ..errors import S3TaskError
from ..store.base import Leftovers, ObjectStore

log = logging.getLogger("s3task.worker")


def sweep_grace(settings: Settings) -> float:
    """How old a staged file nobody holds must be before the sweep removes it: one lease."""
    return settings.lease_seconds


def drop_partial_output(store: ObjectStore, key: str) -> None:
    """Abort what a killed attempt's write of ``key`` left open; never raises."""
    if not isinstance(store, Leftovers):
        return
    try:
        dropped = store.drop_unfinished(key)
    except S3TaskError as e:  # the bucket's lifecycle rule is the backstop
        log.warning("could not abort the unfinished upload of %s: %s", key, e)
        return
    if dropped:
        log.info("aborted %d unfinished upload(s) of %s", dropped, key)


class Sweeper:
    """Sweeps staged files at most once per grace period (a directory listing; no store request)."""

    def __init__(self, store: ObjectStore, settings: Settings) -> None:
        self.store, self.grace = store, sweep_grace(settings)
        self._next = 0.0

    def maybe(self) -> int:
        now = time.monotonic()
        if now < self._next or not isinstance(self.store, Leftovers):
            return 0
        self._next = now + self.grace
        try:
            swept = self.store.sweep_unfinished(self.grace)
        except (OSError, S3TaskError) as e:
            log.warning("could not sweep staged files: %s", e)
            return 0
        if swept:
            log.info("removed %d staged file(s) left by writers that stopped", swept)
        return swept
