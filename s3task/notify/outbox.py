"""The outbox: one small object per notification in flight, so that a sender's crash loses nothing silently.

``<prefix>/outbox/pending/<ms>.<task-id>.<revision>.<write-id>.json`` is created (create-only)
*before* the compare-and-set that makes the state change, by the process about to try it, and
deleted once the event is delivered — or at once, in the background, when the write lost. A
sender that dies leaves its entry behind; a worker's sweep (:func:`sweep`) finds entries older
than ``outbox_recover_seconds`` and settles each against the task record:

- the write landed (the record is at that revision with that ``write_id``, or a later record's
  history still holds the write's history entry) → the event is sent again, same id;
- the write lost or never happened → the entry is deleted, nothing is sent;
- cannot tell (the history entry has been trimmed from the record) → moved to
  ``outbox/missed/``: listed as possibly missed (``python -m s3task.notify missed``).

Entries that exhausted their retries are moved to ``outbox/missed/`` too.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any

from ..errors import NotFound, PreconditionFailed, S3TaskError, TaskNotFound
from ..layout import Layout
from ..record import HISTORY_LIMIT, TaskRecord, parse_iso, to_iso
from ..records import read_record
from ..store.base import ObjectStore, PutMode

log = logging.getLogger("s3task.notify")

#: Entries read per sweep, oldest first (the key starts with the time it was written).
SWEEP_LIMIT = 200


@dataclass(frozen=True)
class Entry:
    key: str
    task_id: str
    revision: int
    write_id: str
    written_ms: int


def parse_key(key: str) -> Entry | None:
    name = key.rsplit("/", 1)[-1]
    parts = name.split(".")
    if len(parts) != 5 or parts[4] != "json" or not parts[0].isdigit() or not parts[2].isdigit():
        return None
    return Entry(key, parts[1], int(parts[2]), parts[3], int(parts[0]))


def write(store: ObjectStore, layout: Layout, event: dict[str, Any], new: TaskRecord) -> str:
    """Create the entry for ``new``'s write (before it is tried); returns its key."""
    now = store.now()
    key = layout.outbox_key(int(now.timestamp() * 1000), new.task_id, new.revision, new.write_id)
    body = {
        "state": "pending",
        "written_at": to_iso(now),
        "write_id": new.write_id,
        "history_entry": new.history[-1] if new.history else None,
        "event": event,
    }
    store.put(key, json.dumps(body, ensure_ascii=False).encode(), PutMode.CREATE, content_type="application/json")
    return key


def delete(store: ObjectStore, key: str) -> None:
    with contextlib.suppress(NotFound):
        store.delete(key)


def move_to_missed(store: ObjectStore, layout: Layout, key: str, reason: str, body: dict[str, Any] | None) -> None:
    """Keep the notification where an operator can list it, then drop it from the pending ones."""
    entry = parse_key(key)
    if entry is None:
        return
    if body is None:
        try:
            body = json.loads(store.get(key).body)
        except NotFound:
            return
    body = {**body, "state": "missed", "reason": reason[:500], "missed_at": to_iso(store.now())}
    missed = layout.outbox_key(entry.written_ms, entry.task_id, entry.revision, entry.write_id, kind="missed")
    store.put(missed, json.dumps(body, ensure_ascii=False).encode(), PutMode.OVERWRITE, content_type="application/json")
    delete(store, key)


class Outcome(Enum):
    WON = "won"
    LOST = "lost"
    UNKNOWN = "unknown"


def settle(entry: Entry, body: dict[str, Any], record: TaskRecord | None) -> Outcome:
    """Did the write this entry announced land? Asked of the record as it is now."""
    if record is None or record.revision < entry.revision:
        return Outcome.LOST  # never written, and its writer is long gone
    if record.revision == entry.revision:
        return Outcome.WON if record.write_id == entry.write_id else Outcome.LOST
    wanted = body.get("history_entry")
    if wanted is not None and wanted in record.history:
        return Outcome.WON
    # The history is complete back past this write: the entry would be in it.
    written = parse_iso(str(body.get("written_at") or "")) or None
    oldest = parse_iso(str(record.history[0].get("at"))) if record.history else None
    if len(record.history) < HISTORY_LIMIT or (written and oldest and oldest <= written):
        return Outcome.LOST
    return Outcome.UNKNOWN


def sweep(
    store: ObjectStore,
    layout: Layout,
    *,
    recover_seconds: float,
    taker: str,
    send: Callable[[str, dict[str, Any]], None],
) -> dict[str, int]:
    """Settle the notifications whose sender has not finished them in ``recover_seconds`` (it died).

    ``send(key, event)`` queues a re-send; the entry is taken first with a conditional write, so
    two sweeping workers do not both send it. One LIST when there is nothing to do.
    """
    counts = {"resent": 0, "dropped": 0, "missed": 0}
    now = store.now()
    cutoff_ms = int((now - timedelta(seconds=recover_seconds)).timestamp() * 1000)
    for key in store.list_keys(layout.outbox_root(), limit=SWEEP_LIMIT):
        entry = parse_key(key)
        if entry is None:
            continue
        if entry.written_ms > cutoff_ms:
            break  # keys are in time order: the rest are younger still
        try:
            outcome = _settle_one(store, layout, entry, now, recover_seconds, taker, send)
        except S3TaskError as e:
            log.warning("could not settle notification %s: %s", key, e)
            continue
        if outcome is not None:
            counts[outcome] += 1
    return counts


def _settle_one(
    store: ObjectStore,
    layout: Layout,
    entry: Entry,
    now: Any,
    recover_seconds: float,
    taker: str,
    send: Callable[[str, dict[str, Any]], None],
) -> str | None:
    try:
        got = store.get(entry.key)
    except NotFound:
        return None  # its sender finished meanwhile
    if not got.body:  # its sender's delete half done (a store without conditional deletes): finish it
        delete(store, entry.key)
        return None
    try:
        body = json.loads(got.body)
        event = body["event"]
    except (ValueError, KeyError, TypeError):
        log.error("notification %s is unreadable; moving it to the missed ones", entry.key)
        store.put(
            layout.outbox_key(entry.written_ms, entry.task_id, entry.revision, entry.write_id, kind="missed"),
            got.body,
            PutMode.OVERWRITE,
        )
        delete(store, entry.key)
        return "missed"
    if body.get("state") == "sending":
        taken = parse_iso(str(body.get("taken_at") or ""))
        if taken is not None and now - taken < timedelta(seconds=recover_seconds):
            return None  # another sweep is sending it
    try:
        record: TaskRecord | None = read_record(store, layout, entry.task_id)[0]
    except TaskNotFound:
        record = None
    outcome = settle(entry, body, record)
    if outcome is Outcome.LOST:
        store.delete(entry.key, if_match=got.etag)
        return "dropped"
    if outcome is Outcome.UNKNOWN:
        log.warning("notification %s may not have been sent (its sender died); listed as missed", event.get("id"))
        move_to_missed(store, layout, entry.key, "its sender died and the write can no longer be checked", body)
        return "missed"
    taken_body = {**body, "state": "sending", "taken_at": to_iso(now), "taken_by": taker}
    try:
        store.put(entry.key, json.dumps(taken_body, ensure_ascii=False).encode(), PutMode.update(got.etag))
    except PreconditionFailed:
        return None  # another worker took it
    log.warning("re-sending notification %s (%s): its sender did not finish it", event.get("id"), event.get("type"))
    send(entry.key, event)
    return "resent"


def missed(store: ObjectStore, layout: Layout, limit: int = 1000) -> list[dict[str, Any]]:
    """The notifications that may not have reached every receiver, oldest first."""
    found = []
    for key in store.list_keys(layout.outbox_root("missed"), limit=limit):
        try:
            found.append({"key": key, **json.loads(store.get(key).body)})
        except (NotFound, ValueError):
            continue
    return found
