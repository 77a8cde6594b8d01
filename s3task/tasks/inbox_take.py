"""Taking one dropped file: exactly once per version, whoever else is sweeping, whenever a sweeper dies.

1. Claim: create the version's claim object (create-once, s3task.tasks.inbox_files). Whoever creates it
   takes the file; a claim found ``taking`` past its ``expires_at`` (the store's clock) is taken over
   with a compare-and-set, so a sweeper that died mid-way is finished for, never repeated.
2. The task, under the id the claim fixed: created if it is not there yet (create-only, as the
   recipe's owner, with the recipe's type, settings and format), the file copied as its input (read
   on the version's ETag only), then submitted — or, if its header does not fit the recipe, failed
   for good in the check's words. While the task waits for its file, each step is done again on a
   takeover: the id is fixed, the copy the same bytes, the submit one transition of the table.
3. The file leaves the inbox (a delete on its ETag: a newer version dropped meanwhile stays, with a claim
   of its own), then the claim says ``taken`` (compare-and-set). A sweeper dying between the two leaves a
   claim ``taking``, which the next sweep takes over: its task is made, the file gone, it marks it taken.
   So a file found under a claim that says ``taken`` was dropped again after it left — the same bytes at
   the same time (``cp -p``; on S3, within the second it dates objects to) — and is a new drop, with a
   claim of its own.

A file that cannot become a task at all (the recipe's settings no longer make one) is ``kept``: it stays
in the inbox, its claim saying why, and is not tried again (a new version is).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from .. import lifecycle, safetext
from ..errors import (
    AccessDenied,
    AlreadyExists,
    InvalidInput,
    InvalidTransition,
    NotFound,
    PreconditionFailed,
    TaskNotFound,
    UnknownTaskType,
)
from ..handlers import columns
from ..ids import new_task_id
from ..layout import CSV_TYPE
from ..record import RecipeRef, TaskRecord, parse_iso, to_iso
from ..states import Status
from ..store.base import ObjectMeta, PutMode
from .access import Actor
from .inbox_files import JSON_TYPE, Claim, ClaimState, Dropped
from .input_check import header_of
from .recipes import Recipe
from .transitions import Transitions

log = logging.getLogger("s3task.inbox")

#: How long a claim in hand keeps others off; renewed while a large file is copied.
CLAIM_SECONDS = 120.0
#: The times one version (the same bytes at the same time) is taken again when dropped again after it left.
MAX_AGAIN = 100
_CHUNK = 4 << 20


class LostClaim(Exception):
    """Another sweeper took this claim over (ours expired): stop, it carries on."""


@dataclass
class _Hold:
    """A claim this sweeper holds, and the ETag it was written with."""

    claim: Claim
    etag: str
    key: str
    renewed: float


class Taker:
    """Takes dropped files, one version at a time (see the module docstring)."""

    def __init__(self, transitions: Transitions, *, holder: str, claim_seconds: float = CLAIM_SECONDS) -> None:
        self.transitions = transitions
        self.store, self.layout = transitions.store, transitions.layout
        self.holder, self.claim_seconds = holder, claim_seconds
        #: The store reads a file as it is on disk, where a writer may change it under the read (the local
        #: store); an object store's read is of the one version asked for.
        self._in_place = bool(getattr(self.store, "lists_partial_objects", False))

    def take(self, dropped: Dropped, recipe: Recipe) -> Claim | None:
        """Take ``dropped`` for ``recipe``: its claim as it ends, None when another sweeper has it in hand."""
        for again in range(MAX_AGAIN + 1):
            hold = self._claim(dropped, again)
            if hold is None:
                return None
            if hold.claim.state != "taken" or not self._there_again(dropped):
                break
        else:
            log.warning("inbox %s: %s: dropped again, the same bytes at the same time, more than %d times; "
                        "left in the inbox", dropped.recipe_id, dropped.name, MAX_AGAIN)  # fmt: skip
            return None
        if hold.claim.state != "taking":
            return hold.claim
        try:
            return self._carry(dropped, recipe, hold)
        except LostClaim:
            return None

    # --- 1. the claim ----------------------------------------------------------------------------

    def _claim(self, dropped: Dropped, again: int = 0) -> _Hold | None:
        key, now, token = dropped.claim_key(self.layout, again), self.store.now(), secrets.token_hex(8)
        fresh = Claim(key=dropped.key, name=dropped.name, etag=dropped.meta.etag, size=dropped.meta.size,
                      recipe_id=dropped.recipe_id, task_id=new_task_id(), state="taking", holder=self.holder,
                      token=token, expires_at=self._until(now), at=to_iso(now)).moved(now, "taking")  # fmt: skip
        try:
            return self._write(key, fresh, PutMode.CREATE)
        except AlreadyExists:
            pass
        got = self.store.get(key)
        claim = Claim.from_json(got.body)
        if claim.state != "taking" or claim.token == token:  # done; or our own create, its answer lost
            return _Hold(claim, got.etag, key, time.monotonic())
        expires = parse_iso(claim.expires_at)
        if expires is not None and now < expires:
            return None  # in another sweeper's hands
        over = claim.moved(now, "taking", f"taken over from {claim.holder}", holder=self.holder, token=token,
                           expires_at=self._until(now))  # fmt: skip
        try:
            return self._write(key, over, PutMode.update(got.etag))
        except PreconditionFailed:
            return None

    def _there_again(self, dropped: Dropped) -> bool:
        """Whether ``dropped``'s version is in the inbox now, after its claim was read saying ``taken``: as the
        claim says so only once the file was deleted, such a file was dropped again since (a HEAD now, not
        the listing's, which may predate the delete)."""
        try:
            return replace(dropped, meta=self.store.head(dropped.key)).version == dropped.version
        except NotFound:
            return False

    def _until(self, now: datetime) -> str:
        return to_iso(now + timedelta(seconds=self.claim_seconds))

    def _write(self, key: str, claim: Claim, mode: PutMode) -> _Hold:
        etag = self.store.put(key, claim.to_json(), mode, content_type=JSON_TYPE)
        return _Hold(claim, etag, key, time.monotonic())

    def _renew(self, hold: _Hold) -> None:
        """Keep the claim ours while a file is copied: every third of its time, a compare-and-set."""
        if time.monotonic() - hold.renewed < self.claim_seconds / 3:
            return
        now = self.store.now()
        renewed = replace(hold.claim, expires_at=self._until(now))
        try:
            fresh = self._write(hold.key, renewed, PutMode.update(hold.etag))
        except PreconditionFailed as e:
            raise LostClaim(hold.key) from e
        hold.claim, hold.etag, hold.renewed = fresh.claim, fresh.etag, fresh.renewed

    def _mark(self, hold: _Hold, state: ClaimState, words: str) -> Claim:
        moved = hold.claim.moved(self.store.now(), state, words)
        try:
            self._write(hold.key, moved, PutMode.update(hold.etag))
        except PreconditionFailed as e:
            raise LostClaim(hold.key) from e
        log.info("inbox %s: %s: %s", moved.recipe_id, moved.name, words, extra={"task_id": moved.task_id})
        return moved

    # --- 2. the task -----------------------------------------------------------------------------

    def _carry(self, dropped: Dropped, recipe: Recipe, hold: _Hold) -> Claim:
        actor = Actor(recipe.owner)
        task_id = hold.claim.task_id
        try:
            record = self._task(actor, dropped, recipe, task_id)
        except (InvalidInput, AccessDenied, UnknownTaskType) as e:
            words = f"kept in the inbox: recipe {recipe.describe()} cannot make a task of it now: {e.message}"
            return self._mark(hold, "kept", words)
        if record.status == Status.CREATED:
            try:
                meta = self._copy(dropped, record, hold)
            except (NotFound, PreconditionFailed):
                with contextlib.suppress(InvalidTransition, TaskNotFound):
                    self.transitions.cancel(actor, task_id)
                words = f"the file was removed or replaced before or while it was copied; task {task_id} cancelled"
                return self._mark(hold, "taken", words)
            record = self._submit(actor, dropped, recipe, record, meta)
        words = f"task {task_id} of {recipe.owner}'s, {record.state.value}"
        if record.state.final and record.last_error:
            words = f"task {task_id} of {recipe.owner}'s, failed for good: {record.last_error}"
        self._remove(dropped)  # first: a claim says taken only once its file has left the inbox
        return self._mark(hold, "taken", words)

    def _task(self, actor: Actor, dropped: Dropped, recipe: Recipe, task_id: str) -> TaskRecord:
        """The claim's task: as a sweeper before us left it, or created now (create-only, under its id)."""
        with contextlib.suppress(TaskNotFound):
            return self.transitions.records.read(task_id)[0]
        try:
            return self.transitions.create(
                actor, dropped.task_name(), recipe.task_type, dict(recipe.params), recipe.input_format,
                None, task_id=task_id, recipe=RecipeRef(dropped.recipe_id, recipe.version),
            )  # fmt: skip
        except AlreadyExists:  # a sweeper that took over created it just now
            return self.transitions.records.read(task_id)[0]

    def _copy(self, dropped: Dropped, record: TaskRecord, hold: _Hold) -> ObjectMeta:
        """The dropped version's bytes as the task's input (a read pinned to its ETag), claim renewed on the way."""
        size, key = 0, record.input_object_path
        with (
            self.store.open_read(dropped.key, if_match=dropped.meta.etag) as source,
            self.store.open_write(key, PutMode.OVERWRITE, content_type=CSV_TYPE) as target,
        ):
            while chunk := source.read(_CHUNK):
                target.write(chunk)
                size += len(chunk)
                self._renew(hold)
        if self._in_place:  # a local file read as it is: the version claimed, or one written over it meanwhile?
            now_there = replace(dropped, meta=self.store.head(dropped.key))  # its time moves with any write
            if now_there.version != dropped.version or size != dropped.meta.size:
                raise PreconditionFailed(f"{dropped.key} changed while it was copied")
        return ObjectMeta(key, size, target.etag)

    def _submit(self, actor: Actor, dropped: Dropped, recipe: Recipe, record: TaskRecord, meta: ObjectMeta) -> Any:
        """Queue the task; a file without the recipe's columns, or that the submit's check refuses, fails it
        for good, in words."""
        try:
            missing = _missing(recipe, header_of(self.store, record))
            if missing:
                raise InvalidInput(missing)
            return self.transitions.submit(actor, record.task_id, size=meta.size)
        except InvalidTransition:  # queued meanwhile by a sweeper that took over from us
            return self.transitions.records.read(record.task_id)[0]
        except InvalidInput as e:
            words = f"the file {dropped.task_name()!r} does not fit recipe {recipe.describe()}: {e.message}"
        return self._refuse(record.task_id, meta, words)

    def _refuse(self, task_id: str, meta: ObjectMeta, words: str) -> TaskRecord:
        """Fail the task for good at once, through the table: submitted, taken by this sweeper, failed (one
        write; its owner is told as of any failure). A retry by a person runs it on a worker."""

        def change(record: TaskRecord, now: datetime) -> TaskRecord:
            queued = lifecycle.submit(record, now, input_etag=meta.etag, input_size=meta.size)
            running, lease = lifecycle.claim(queued, now, worker_id=self.holder, lease_seconds=self.claim_seconds)
            return lifecycle.fail(running, now, lease=lease, error=words, permanent=True)

        try:
            return self.transitions.records.update(task_id, change)
        except InvalidTransition:  # changed meanwhile (cancelled, or queued by a sweeper that took over)
            return self.transitions.records.read(task_id)[0]

    # --- 3. out of the inbox ---------------------------------------------------------------------

    def _remove(self, dropped: Dropped) -> None:
        """Delete the version taken; a newer one dropped under its key since stays (it has its own claim)."""
        with contextlib.suppress(NotFound, PreconditionFailed):
            self.store.delete(dropped.key, if_match=dropped.meta.etag)


def _missing(recipe: Recipe, header: list[str]) -> str:
    """The recipe's columns the file's ``header`` lacks, in words ("" when it has them all: in any order,
    case, spaces and punctuation aside, as a recipe is offered for an upload)."""
    have = {columns.key(name) for name in header}
    lacking = [name for name in recipe.header if columns.key(name) not in have]
    if not lacking:
        return ""
    shown = ", ".join(safetext.visible(name) for name in lacking[:10]) + (" …" if len(lacking) > 10 else "")
    found = ", ".join(safetext.visible(name) for name in header[:10]) + (" …" if len(header) > 10 else "")
    return f"it has no column {shown} (its columns: {found or 'none'})"
