"""The background sender: daemon threads that deliver events, retry with backoff, then tidy the outbox.

Nothing on a task's path waits for a receiver: a state-changing write only creates the outbox
entry (one PUT) and queues the event here. Each receiver has a lane of its own — a queue and one
thread per webhook URL, one for email, one for tidying lost writes' entries — so a slow or failing
receiver holds its own lane only: never another receiver's deliveries, a claim, a heartbeat or a
completion. Each delivery ends within ``notify_timeout`` (the whole of it, not each read).
"""

from __future__ import annotations

import atexit
import heapq
import itertools
import json
import logging
import smtplib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ..config import Settings, SettingsError
from ..errors import DeliveryFailed, S3TaskError
from ..layout import Layout
from ..record import TaskRecord
from ..store.base import ObjectStore
from . import email, events, outbox, webhook

log = logging.getLogger("s3task.notify")

#: Deliveries waiting at most (all lanes); past it an event stays in the outbox for a worker's sweep.
MAX_QUEUED = 10_000
BACKOFF_MAX_SECONDS = 300.0
#: At exit a process waits at most this long for deliveries in flight; what is left undelivered
#: stays in the outbox, where a worker's sweep re-sends it after ``outbox_recover_seconds``.
EXIT_WAIT_SECONDS = 1.0


@dataclass
class Delivery:
    """One event to every target, and the outbox entry to remove once all are done."""

    store: ObjectStore
    layout: Layout
    key: str | None
    event: dict[str, Any]
    body: bytes
    give_up_at: float
    remaining: int = 0
    failed: list[str] = field(default_factory=list)


@dataclass
class Lane:
    """The queue of one receiver (a webhook URL, email, or "discard") and its one thread."""

    name: str
    heap: list[tuple[float, int, Dispatch]] = field(default_factory=list)
    thread: threading.Thread | None = None


@dataclass
class Dispatch:
    """One delivery to one target (a webhook, an address), and which try it is."""

    delivery: Delivery
    target: str  # "webhook:<url>", "email:<address>" or "discard" (delete a lost write's entry)
    attempt: int = 0


class Outgoing:
    """The notification of one record write, between its outbox entry and the write's outcome."""

    def __init__(self, notifier: Notifier, store: ObjectStore, layout: Layout, event: dict[str, Any]) -> None:
        self.notifier, self.store, self.layout, self.event = notifier, store, layout, event
        self.key: str | None = None

    def done(self, won: bool) -> None:
        """The write landed (send the event) or lost (forget it); never blocks, never raises."""
        try:
            if won:
                self.notifier.send(self.store, self.layout, self.key, self.event)
            elif self.key is not None:
                self.notifier.discard(self.store, self.layout, self.key)
        except Exception:  # a notification never fails a state change
            log.exception("could not queue notification %s", self.event.get("id"))


class Notifier:
    """The channels of this process (from its settings) and the threads that deliver to them."""

    def __init__(self, settings: Settings) -> None:
        if settings.webhook_urls and not settings.webhook_secret:
            raise SettingsError(
                "S3TASK_WEBHOOK_URLS is set but S3TASK_WEBHOOK_SECRET is not: webhooks are always signed; "
                "set a secret of at least 16 characters shared with the receivers"
            )
        self.settings = settings
        self.urls = settings.webhook_urls
        self.secret = settings.webhook_secret
        self.smtp = email.Smtp.parse(settings.smtp_url) if settings.smtp_url else None
        self.sender = settings.smtp_from or email.default_sender()
        origins = [o.strip() for o in settings.app_origin.split(",") if o.strip()]
        self.app_url = settings.app_url or (origins[0] if origins else "")
        self.timeout = settings.notify_timeout
        self.retries = settings.notify_retries
        self.backoff = settings.notify_backoff_seconds
        self.recover_seconds = settings.outbox_recover_seconds
        self.worker_id = settings.worker_id
        self._lanes: dict[str, Lane] = {}
        self._queued = 0
        self._order = itertools.count()
        self._cv = threading.Condition()
        self._busy = 0
        self._closed = False
        self._last_sweep = float("-inf")
        self._sweep_lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return bool(self.urls) or self.smtp is not None

    def targets(self, event: dict[str, Any]) -> list[str]:
        found = [f"webhook:{url}" for url in self.urls]
        to = events.email_to(event) if self.smtp is not None else None
        if to:
            found.append(f"email:{to}")
        return found

    # --- around a record write ------------------------------------------------------------------

    def before(self, store: ObjectStore, layout: Layout, old: TaskRecord, new: TaskRecord) -> Outgoing | None:
        """Write the outbox entry of a state change about to be tried; None when nobody is to be told."""
        event = events.build(old, new)
        if not self.targets(event):
            return None
        outgoing = Outgoing(self, store, layout, event)
        try:
            outgoing.key = outbox.write(store, layout, event, new)
        except (S3TaskError, OSError, ValueError) as e:  # sent all the same, only without crash cover
            log.warning("could not write the outbox entry of %s: %s", event["id"], e)
        return outgoing

    # --- queueing ---------------------------------------------------------------------------------

    def send(self, store: ObjectStore, layout: Layout, key: str | None, event: dict[str, Any]) -> None:
        targets = self.targets(event)
        body = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()
        delivery = Delivery(store, layout, key, event, body, time.monotonic() + self.recover_seconds / 2)
        if not targets:
            self._push(Dispatch(delivery, "discard"))
            return
        delivery.remaining = len(targets)
        for target in targets:
            self._push(Dispatch(delivery, target))

    def discard(self, store: ObjectStore, layout: Layout, key: str) -> None:
        self._push(Dispatch(Delivery(store, layout, key, {}, b"", 0.0), "discard"))

    def _push(self, job: Dispatch, delay: float = 0.0) -> None:
        with self._cv:
            if self._closed:
                return  # shutting down: the entry waits in the outbox for a sweep
            if self._queued >= MAX_QUEUED:
                log.warning("notification queue full; %s waits in the outbox for a sweep", job.delivery.key)
                return
            name = _lane_of(job.target)
            lane = self._lanes.get(name)
            if lane is None:
                lane = self._lanes[name] = Lane(name)
            heapq.heappush(lane.heap, (time.monotonic() + delay, next(self._order), job))
            self._queued += 1
            if lane.thread is None:
                lane.thread = threading.Thread(
                    target=self._run, args=(lane,), name=f"s3task-notify-{len(self._lanes)}", daemon=True
                )
                lane.thread.start()
            self._cv.notify_all()

    def _run(self, lane: Lane) -> None:
        while True:
            with self._cv:
                while True:
                    if self._closed:
                        return
                    if lane.heap and lane.heap[0][0] <= time.monotonic():
                        job = heapq.heappop(lane.heap)[2]
                        self._queued -= 1
                        self._busy += 1
                        break
                    wait = lane.heap[0][0] - time.monotonic() if lane.heap else None
                    self._cv.wait(wait)
            try:
                self._do(job)
            except Exception:  # a bug in one delivery must not stop the thread
                log.exception("notification delivery crashed")
            finally:
                with self._cv:
                    self._busy -= 1
                    self._cv.notify_all()

    # --- delivering ---------------------------------------------------------------------------------

    def _do(self, job: Dispatch) -> None:
        delivery = job.delivery
        if job.target == "discard":
            if delivery.key is not None:
                self._tidy(delivery, lambda: outbox.delete(delivery.store, delivery.key or ""))
            return
        try:
            self._deliver(job.target, delivery)
        except Exception as caught:
            e = self._why(job.target, caught)
            retry_in = min(BACKOFF_MAX_SECONDS, self.backoff * 2**job.attempt)
            if job.attempt < self.retries and time.monotonic() + retry_in < delivery.give_up_at:
                log.info("notification %s failed (%s); trying again in %.1fs", delivery.event["id"], e, retry_in)
                self._push(Dispatch(delivery, job.target, job.attempt + 1), delay=retry_in)
                return
            log.error("gave up on notification %s after %d tries: %s", delivery.event["id"], job.attempt + 1, e)
            self._finished(delivery, e)
            return
        log.debug("notification %s delivered to %s", delivery.event["id"], self._shown(job.target))
        self._finished(delivery, None)

    def _deliver(self, target: str, delivery: Delivery) -> None:
        kind, _, where = target.partition(":")
        if kind == "webhook":
            webhook.post(where, self.secret, delivery.event, delivery.body, self.timeout, self._shown(target))
        elif kind == "email" and self.smtp is not None:
            self.smtp.send(email.message(delivery.event, where, self.sender, self.app_url), self.timeout)

    def _finished(self, delivery: Delivery, failure: str | None) -> None:
        with self._cv:
            if failure:
                delivery.failed.append(failure)
            delivery.remaining -= 1
            last = delivery.remaining == 0
        if not last or delivery.key is None:
            return
        key = delivery.key
        if delivery.failed:
            reason = "; ".join(delivery.failed)
            self._tidy(delivery, lambda: outbox.move_to_missed(delivery.store, delivery.layout, key, reason, None))
        else:
            self._tidy(delivery, lambda: outbox.delete(delivery.store, key))

    def _tidy(self, delivery: Delivery, action: Any) -> None:
        for attempt in range(3):
            try:
                action()
                return
            except (S3TaskError, OSError) as e:
                if attempt == 2:  # left for a sweep: it re-sends (a duplicate, same id) or drops it
                    log.warning("could not tidy the outbox entry %s: %s", delivery.key, e)
                time.sleep(0.2 * (attempt + 1))

    # --- the worker's sweep, and shutting down -------------------------------------------------------

    def sweep_if_due(self, store: ObjectStore, layout: Layout) -> dict[str, int] | None:
        """Settle outbox entries left by dead senders; at most every third of ``outbox_recover_seconds``."""
        if not self.enabled:
            return None
        with self._sweep_lock:
            if time.monotonic() - self._last_sweep < self.recover_seconds / 3:
                return None
            self._last_sweep = time.monotonic()
        return outbox.sweep(
            store,
            layout,
            recover_seconds=self.recover_seconds,
            taker=self.worker_id,
            send=lambda key, event: self.send(store, layout, key, event),
        )

    def idle(self) -> bool:
        with self._cv:
            return self._queued == 0 and self._busy == 0

    def drain(self, timeout: float) -> bool:
        """Wait (at most ``timeout``) for deliveries due now to finish; True if none is left."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while self._busy or any(lane.heap and lane.heap[0][0] <= deadline for lane in self._lanes.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(min(left, 0.1))
            return self._queued == 0

    def close(self, timeout: float = 5.0) -> None:
        """Stop: deliveries not finished within ``timeout`` stay in the outbox for a sweep."""
        self.drain(timeout)
        with self._cv:
            self._closed = True
            for lane in self._lanes.values():
                lane.heap.clear()
            self._queued = 0
            self._cv.notify_all()

    def _why(self, target: str, e: Exception) -> str:
        """A failed delivery in words that name the target as :meth:`_shown` does and quote nothing else."""
        if isinstance(e, DeliveryFailed):
            return str(e)  # made by webhook.post from the shown target
        detail = f"{type(e).__name__}: {e.strerror}" if isinstance(e, OSError) and e.strerror else type(e).__name__
        if isinstance(e, smtplib.SMTPResponseException):
            detail = f"the server answered {e.smtp_code}"
        return f"{self._shown(target)}: {detail}"

    def _shown(self, target: str) -> str:
        """A target as logs and missed entries name it: never an email address or a URL's path or query."""
        kind, _, where = target.partition(":")
        if kind == "email":
            return "the owner's email"
        if kind == "webhook" and where in self.urls:
            return webhook.shown(where, self.urls.index(where) + 1, len(self.urls))
        return webhook.shown(where) if kind == "webhook" else kind


def _lane_of(target: str) -> str:
    """Webhooks: one lane per URL; all email goes through one SMTP server, so one lane."""
    kind = target.partition(":")[0]
    return target if kind == "webhook" else kind


def _close_at_exit(notifier: Notifier) -> None:
    notifier.close(min(EXIT_WAIT_SECONDS, notifier.timeout))


def register_exit(notifier: Notifier) -> None:
    atexit.register(_close_at_exit, notifier)
