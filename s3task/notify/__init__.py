"""Notifications: email to a task's owner when it ends, and signed webhooks for every state change.

Design (who sends, what a crash can lose, duplicates, costs): docs/NOTIFICATIONS.md.

The process whose compare-and-set makes a state change is the one sender of its event: only it
knows it won. A :class:`Notifier` is the :class:`s3task.records.StateHook` of the records it is
handed to: :class:`s3task.records.Records` calls its ``before`` around each write that changes a
task's state. Whoever builds a worker, a service or the API from the settings builds the notifier
with :func:`from_settings` and hands it down; with no channel configured there is none, and a
state change costs nothing extra.
"""

from __future__ import annotations

import logging

from ..config import Settings
from ..layout import Layout
from ..store.base import ObjectStore
from .sender import Notifier, Outgoing, register_exit

__all__ = ["Notifier", "Outgoing", "from_settings", "sweep"]

log = logging.getLogger("s3task.notify")


def from_settings(settings: Settings) -> Notifier | None:
    """A notifier for ``settings``' channels, or None when none is set. :class:`SettingsError` if they don't fit.

    What it has not delivered when the process exits waits at most a second (see
    :data:`s3task.notify.sender.EXIT_WAIT_SECONDS`); the rest stays in the outbox for a worker's sweep.
    """
    notifier = Notifier(settings)
    if not notifier.enabled:
        return None
    register_exit(notifier)
    log.info("notifications on: %d webhook URL(s)%s", len(notifier.urls), ", email" if notifier.smtp else "")
    return notifier


def sweep(notifier: Notifier | None, store: ObjectStore, layout: Layout) -> None:
    """A worker's poll: re-send (or list as missed) what dead senders left in the outbox. Never raises."""
    if notifier is None:
        return
    try:
        counts = notifier.sweep_if_due(store, layout)
    except Exception as e:  # the poll goes on; the next sweep tries again
        log.warning("outbox sweep failed: %s", e)
        return
    if counts and any(counts.values()):
        log.info("outbox sweep: %s", counts)
