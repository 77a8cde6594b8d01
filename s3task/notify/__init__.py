"""Notifications: email to a task's owner when it ends, and signed webhooks for every state change.

Design (who sends, what a crash can lose, duplicates, costs): docs/NOTIFICATIONS.md.

The process whose compare-and-set makes a state change is the one sender of its event: only it
knows it won. :func:`s3task.record.update_record` calls :func:`before_write` around each write
that changes a task's state; with no channel configured that is one function call, no request.

Channels come from the process's settings: :func:`configure` (a worker does it at start), or, in
a process that never called it, the ``S3TASK_*`` environment on the first state change.
"""

from __future__ import annotations

import logging
import threading

from ..config import Settings, SettingsError
from ..layout import Layout
from ..record import TaskRecord
from ..store.base import ObjectStore
from .sender import Notifier, Outgoing, register_exit

__all__ = ["Notifier", "Outgoing", "before_write", "configure", "current", "sweep_if_due"]

log = logging.getLogger("s3task.notify")

_lock = threading.Lock()
_notifier: Notifier | None = None
_loaded = False


def configure(settings: Settings | None) -> Notifier | None:
    """Use ``settings``' channels in this process (None: none). :class:`SettingsError` if they don't fit."""
    global _notifier, _loaded
    with _lock:
        if _loaded and settings is not None and _notifier is not None and _notifier.settings == settings:
            return _notifier  # the same channels again (another worker in this process): keep its queue
    notifier = Notifier(settings) if settings is not None else None
    if notifier is not None and not notifier.enabled:
        notifier = None
    with _lock:
        old, _notifier, _loaded = _notifier, notifier, True
    if old is not None and old is not notifier:
        old.close(1.0)
    if notifier is not None:
        register_exit(notifier)
        log.info(
            "notifications on: %d webhook URL(s)%s",
            len(notifier.urls),
            ", email" if notifier.smtp else "",
        )
    return notifier


def current() -> Notifier | None:
    """This process's notifier; configured from the environment the first time if nobody did."""
    if not _loaded:
        try:
            configure(Settings.load())
        except SettingsError as e:  # its text names the setting, never a secret one's value
            log.error("notifications are off: %s", e)
            configure(None)
        except Exception as e:  # anything else: its text might quote a URL, so not repeated
            log.error(
                "notifications are off: S3TASK_SMTP_URL or S3TASK_WEBHOOK_URLS could not be used (%s)",
                type(e).__name__,
            )
            configure(None)
    return _notifier


def before_write(store: ObjectStore, layout: Layout, old: TaskRecord, new: TaskRecord) -> Outgoing | None:
    """Called by update_record before writing a state change; its ``done(won)`` after."""
    notifier = current()
    if notifier is None:
        return None
    return notifier.before(store, layout, old, new)


def sweep_if_due(store: ObjectStore, layout: Layout) -> None:
    """A worker's poll: re-send (or list as missed) what dead senders left in the outbox. Never raises."""
    notifier = current()
    if notifier is None:
        return
    try:
        counts = notifier.sweep_if_due(store, layout)
    except Exception as e:  # the poll goes on; the next sweep tries again
        log.warning("outbox sweep failed: %s", e)
        return
    if counts and any(counts.values()):
        log.info("outbox sweep: %s", counts)
