"""One worker's sweep of every inbox: hold the lease, list ``inbox/`` once, take each whole file.

Idle (every inbox empty), a sweep by the lease's holder is one LIST, and a lease renewal once in three
sweeps; a worker that does not hold the lease makes one GET (of the lease) and lists nothing. What a
sweep finds besides files to take is said in words, once per version, in the log and in
:attr:`Swept.notes`, and the file is left where it is:

- a folder marker (a key ending in "/"): no file;
- a key in no recipe's inbox (``inbox/<recipe id>/<file>`` is the shape), or in the inbox of a recipe
  that does not exist (removed, or never saved): it waits there; saved again, the recipe takes it;
- a paused inbox's files: they wait until it is resumed;
- on a store that lists a file still being written (the local directory: ``cp`` is not atomic), a file
  whose size, ETag or time changed since the last sweep, or that this worker sees for the first time:
  it is taken once it stayed the same for one sweep. S3, GCS and Azure list an object only when it is
  whole (an upload in parts not yet completed is not listed).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field

from ..errors import InvalidInput, NotFound, S3TaskError
from ..store.base import ObjectMeta
from .inbox_files import Claim, Dropped, is_folder_marker
from .inbox_lease import SweepLease
from .inbox_take import CLAIM_SECONDS, Taker
from .recipes import Recipe, Recipes
from .transitions import Transitions

log = logging.getLogger("s3task.inbox")

#: The lease is this many sweep intervals long (renewed when half is left: once in three sweeps).
LEASE_INTERVALS = 6
#: Metadata of an object s3task is deleting on a store without conditional deletes (s3task.store.s3_writer).
_DELETING = "s3task-deleting"


@dataclass
class Swept:
    """What one sweep did."""

    #: Whether this worker held the lease (False: another sweeps; nothing was listed).
    held: bool
    #: Objects listed under ``inbox/``.
    listed: int = 0
    #: The claims of the files taken (or found taken, or kept) in this sweep.
    taken: list[Claim] = field(default_factory=list)
    #: What was left where it is, and why, in words (see the module docstring).
    notes: list[str] = field(default_factory=list)


class InboxSweeper:
    """One worker's sweeps (``holder``: its id). ``lease=False``: sweep whatever other workers do (tests)."""

    def __init__(
        self,
        transitions: Transitions,
        recipes: Recipes,
        holder: str,
        *,
        interval: float,
        lease: bool = True,
        claim_seconds: float = CLAIM_SECONDS,
    ) -> None:
        self.store, self.layout = transitions.store, transitions.layout
        self.recipes = recipes
        self.taker = Taker(transitions, holder=holder, claim_seconds=claim_seconds)
        self.lease = SweepLease(self.store, self.layout, holder, LEASE_INTERVALS * interval) if lease else None
        self._whole_when_listed = not getattr(self.store, "lists_partial_objects", False)
        #: Each key's version as the last sweep saw it (the two-sweep rule), and what was said of which.
        self._seen: dict[str, tuple[int, str, int]] = {}
        self._said: set[tuple[str, str]] = set()

    def sweep(self) -> Swept:
        """One sweep (see the module docstring); a store failure on one file does not stop the others."""
        if self.lease is not None and not self.lease.hold():
            return Swept(held=False)
        keys = self.store.list_keys(self.layout.inbox_root)
        swept = Swept(held=True, listed=len(keys))
        if not keys:
            self._seen.clear()
            return swept
        root = self.layout.inbox_paused_root
        paused = {k.removeprefix(root) for k in self.store.list_keys(root)}
        recipes: dict[str, Recipe | None] = {}
        seen: dict[str, tuple[int, str, int]] = {}
        for key in keys:
            if self.lease is not None and not self.lease.hold():  # renewed on the way (no request before half)
                swept.notes.append("the sweep's lease went to another worker: it sweeps the rest")
                break
            try:
                self._one(key, paused, recipes, seen, swept)
            except S3TaskError as e:
                log.warning("inbox: could not take %s now (the next sweep tries again): %s", key, e)
        listed = set(keys)  # a file not looked at this time (paused, no recipe) keeps the version last seen
        self._seen = {**{k: v for k, v in self._seen.items() if k in listed}, **seen}
        return swept

    def release(self) -> None:
        """Give up the lease (a worker stopping), so that another sweeps from its next interval."""
        if self.lease is not None:
            self.lease.release()

    def _one(
        self,
        key: str,
        paused: set[str],
        recipes: dict[str, Recipe | None],
        seen: dict[str, tuple[int, str, int]],
        swept: Swept,
    ) -> None:
        where = self.layout.inbox_file(key)
        if is_folder_marker(key) or (where is not None and where[1].endswith("/")):
            return self._note(swept, key, "", "a folder marker, not a file: left alone")
        if where is None:
            return self._note(swept, key, "no inbox", "in no recipe's inbox (inbox/own/<user>/<recipe>/ or "
                              "inbox/shared/<recipe>/): left where it is")  # fmt: skip
        recipe_id, _name = where
        if is_unfinished_name(_name):
            return self._note(swept, key, "unfinished", "left alone: a hidden or temporary file's name (a "
                              "copy under way, or a system's own file); taken once renamed to its name")  # fmt: skip
        if recipe_id in paused:
            return self._note(swept, key, "paused", f"waits: the inbox of {recipe_id} is paused")
        if recipe_id not in recipes:
            recipes[recipe_id] = self._recipe(recipe_id)
        recipe = recipes[recipe_id]
        if recipe is None:
            return self._note(swept, key, "no recipe", f"waits: there is no recipe {recipe_id} (removed?); "
                              "saved again under that name, it takes the file")  # fmt: skip
        try:
            meta = self.store.head(key)
        except NotFound:
            return None  # taken (or removed) since the listing
        if is_tombstone(meta):
            with contextlib.suppress(S3TaskError):  # a delete half done (s3task.store.s3_writer): finish it
                self.store.delete(key)
            return None
        self._take(Dropped(key, recipe_id, _name, meta), recipe, seen, swept)
        return None

    def _take(self, dropped: Dropped, recipe: Recipe, seen: dict[str, tuple[int, str, int]], swept: Swept) -> None:
        seen[dropped.key] = dropped.version
        if not self._whole_when_listed and self._seen.get(dropped.key) != dropped.version:
            self._note(swept, dropped.key, "", "waits one sweep: taken once its size and time stay the same")
            return
        claim = self.taker.take(dropped, recipe)
        if claim is not None:
            swept.taken.append(claim)

    def _recipe(self, recipe_id: str) -> Recipe | None:
        try:
            return self.recipes.by_id(recipe_id)
        except (NotFound, InvalidInput, ValueError):
            return None

    def _note(self, swept: Swept, key: str, why: str, words: str) -> None:
        """Say what is left where it is, and why: in :attr:`Swept.notes` every sweep, in the log once."""
        swept.notes.append(f"{key}: {words}")
        if why and (key, why) not in self._said:
            self._said.add((key, why))
            log.warning("inbox: %s: %s", key, words)


#: Endings of the names copying programs write a file under until it is whole (rsync, WinSCP and FileZilla,
#: browsers, editors), which they then rename.
UNFINISHED_ENDINGS = (".part", ".filepart", ".partial", ".crdownload", ".download", ".tmp", ".temp", "~")


def is_unfinished_name(name: str) -> bool:
    """A file's name (after its inbox's prefix) that is hidden (``.DS_Store``, rsync's ``.report.csv.Xy12ab``)
    or a copy under way (``report.csv.filepart``): never a file someone dropped to become a task."""
    base = name.rsplit("/", 1)[-1]
    return base.startswith(".") or base.lower().endswith(UNFINISHED_ENDINGS)


def is_tombstone(meta: ObjectMeta) -> bool:
    """An empty object s3task is deleting on a store without conditional deletes (s3task.store.s3_writer)."""
    return meta.size == 0 and bool(meta.metadata.get(_DELETING))
