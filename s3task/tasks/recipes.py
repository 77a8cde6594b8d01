"""Recipes: a task's type, settings, input format and column choices saved under a name, for the
files that come back every week or month (issue 22 item 3).

One small JSON object per recipe in the store, next to the tasks, no database::

    <prefix>/recipes/own/<user>/<slug>.json   a person's own recipes
    <prefix>/recipes/shared/<slug>.json       shared with everyone (only an operator saves or removes one)

Every write is conditional: a new recipe is created only if its key is free (``PutMode.CREATE``),
a replaced or removed one only if it is still the version read (its ETag), so two people saving
the same name at once never silently overwrite each other: the second is told. A removed recipe
leaves a marker in its place that keeps its last version (:data:`REMOVED`), so a recipe saved
again under that name goes on from it and never reuses a version a task already names. A recipe keeps the
header of the file it was made from, so an upload whose header is the same (:func:`same_header`:
the same column names, in any order, case and punctuation ignored) is offered it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import quote

from .. import handlers, safetext
from ..csvio import parse_input_format
from ..errors import AccessDenied, AlreadyExists, InvalidInput, NotFound, PreconditionFailed
from ..handlers import columns
from ..layout import MAX_RECORD_BYTES, Layout
from ..record import RecipeRef, TaskRecord, to_iso
from ..store.base import ObjectStore, PutMode, get_start
from .access import Actor

SCHEMA = 1
NAME_CHARS = 80
#: The longest key name a recipe's name may make (s3task.layout.Layout.recipe_key).
KEY_CHARS = 240
JSON_TYPE = "application/json"
#: What a removed recipe leaves at its key: the version it had reached (no recipe: reads say "not found").
REMOVED = "removed"
#: The highest version a recipe may reach (a stored number past it is no recipe's).
MAX_VERSION = 1_000_000_000


def removed_marker(version: int) -> bytes:
    """The marker: ``"name": null`` makes a reader from before markers refuse it as "not a recipe", in words."""
    return json.dumps({"schema": SCHEMA, REMOVED: True, "version": version, "name": None}).encode()


def removed_version(body: bytes) -> int | None:
    """The version a removed recipe had reached, if ``body`` is the marker it left; None otherwise."""
    if not body.startswith(b"{") or b'"removed"' not in body[:64]:
        return None
    try:
        raw = json.loads(body)
    except ValueError:
        return None
    version = raw.get("version") if isinstance(raw, dict) and raw.get(REMOVED) is True else None
    ok = isinstance(version, int) and not isinstance(version, bool) and 0 <= version < MAX_VERSION
    return version if ok else None


@dataclass(frozen=True)
class Recipe:
    """What a recipe gives a new task (its type, parameters and input format), and whose it is."""

    name: str
    owner: str
    task_type: str
    params: dict[str, Any] = field(default_factory=dict)
    #: As a record's ``input_format`` (a CSV's delimiter and encoding; a workbook's kind, sheet, header row).
    input_format: dict[str, Any] = field(default_factory=dict)
    #: The header of the file it was made from: an upload with the same is offered this recipe.
    header: list[str] = field(default_factory=list)
    shared: bool = False
    saved_at: str = ""
    #: 1 when first saved, one more each time it is replaced: a task names the version it was made from
    version: int = 1
    #: The task it was saved from (a correction's original): its first run, though that names no recipe.
    from_task: str = ""

    def to_json(self) -> bytes:
        return json.dumps({"schema": SCHEMA, **asdict(self)}, ensure_ascii=False, indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Recipe:
        """A stored recipe; anything else (not JSON, fields of the wrong kind) is :class:`InvalidInput`."""
        try:
            raw = json.loads(data)
        except ValueError as e:
            raise InvalidInput("not a recipe (not JSON)") from e
        kinds = {"name": str, "owner": str, "task_type": str, "params": dict, "input_format": dict,
                 "header": list, "shared": bool, "saved_at": str, "version": int, "from_task": str}  # fmt: skip
        if not isinstance(raw, dict) or any(k in raw and not isinstance(raw[k], t) for k, t in kinds.items()):
            raise InvalidInput("not a recipe (its fields are not a recipe's)")
        if not all(isinstance(h, str) for h in raw.get("header", [])):
            raise InvalidInput("not a recipe (its header is not a list of names)")
        if any(k not in raw for k in ("name", "owner", "task_type")):
            raise InvalidInput("not a recipe (it has no name, owner or task type)")
        if isinstance(raw.get("version"), bool) or not 1 <= raw.get("version", 1) <= MAX_VERSION:
            raise InvalidInput(f"not a recipe (its version is not a number from 1 to {MAX_VERSION:,})")
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})

    def describe(self) -> str:
        whose = "shared" if self.shared else f"{self.owner}'s"
        return f"“{self.name}” ({whose}: {self.task_type})"


def slug(name: str) -> str:
    """The recipe's key name: lower case, letters, digits and dashes (names differing only so are one recipe)."""
    cleaned = " ".join(name.split())
    if not cleaned or len(cleaned) > NAME_CHARS:
        raise InvalidInput(f"a recipe needs a name of 1 to {NAME_CHARS} characters")
    key = re.sub(r"[^\w]+", "-", cleaned.lower()).strip("-_")
    if not key:
        raise InvalidInput(f"recipe name {name!r} needs at least one letter or digit")
    safe = quote(key, safe="-_")
    if len(safe) > KEY_CHARS:  # a letter outside A–Z takes up to 12 of a key's places (UTF-8, %-encoded)
        raise InvalidInput(f"recipe name {cleaned[:40]!r}… is too long for a recipe; choose a shorter one")
    return safe


def same_header(a: Sequence[str], b: Sequence[str]) -> bool:
    """The same columns, in any order, ignoring case, spaces and punctuation."""
    return bool(a) and sorted(map(columns.key, a)) == sorted(map(columns.key, b))


class Recipes:
    """Save, find, list and remove recipes in the store (conditional writes only)."""

    def __init__(self, store: ObjectStore, layout: Layout) -> None:
        self.store, self.layout = store, layout

    def _key(self, owner: str | None, name: str) -> str:
        return self.layout.recipe_key(owner, slug(name))

    def _read(self, key: str) -> tuple[Recipe, str]:
        got = get_start(self.store, key, MAX_RECORD_BYTES + 1)  # never more than a recipe can be, in memory
        if not got.body or removed_version(got.body) is not None:  # removed (or a delete half done)
            raise NotFound(key)
        if got.meta.size > MAX_RECORD_BYTES:
            raise InvalidInput(f"{key} is larger than a recipe can be")
        try:
            return Recipe.from_json(got.body), got.meta.etag
        except InvalidInput as e:
            raise InvalidInput(f"{key} is {e.message}") from e

    def by_id(self, recipe_id: str) -> Recipe:
        """The recipe whose id (s3task.layout.Layout.recipe_id: its inbox's) is ``recipe_id``; NotFound: none."""
        return self._read(self.layout.recipe_key_of(recipe_id))[0]

    def id_of(self, recipe: Recipe) -> str:
        """The recipe's id, as its inbox's key has it (``own/<user>/<name>`` or ``shared/<name>``)."""
        return self.layout.recipe_id(None if recipe.shared else recipe.owner, slug(recipe.name))

    def ref(self, recipe: Recipe) -> RecipeRef:
        """What a task made from ``recipe`` keeps of it: its id and version."""
        return RecipeRef(self.id_of(recipe), recipe.version)

    def save(self, actor: Actor, recipe: Recipe, *, replace: bool = False) -> Recipe:
        """Store ``recipe`` as ``actor``'s (or shared: operators only). An existing one of that name is
        refused unless ``replace``, and then replaced only if no one changed it since it was read."""
        if recipe.shared and not actor.operator:
            raise AccessDenied("only an operator can share a recipe with everyone")
        # The rule a task's name keeps (no control or invisible character), then spaces run together.
        name = " ".join(safetext.check_name(recipe.name, "recipe", NAME_CHARS).split())
        handlers.get(recipe.task_type).validate(recipe.params)  # a recipe that could not make a task is refused
        parse_input_format(recipe.input_format, allow_detect=True)
        key = self._key(None if recipe.shared else actor.name, name)
        stamped = {"name": name, "owner": actor.name, "saved_at": to_iso(self.store.now()), "version": 1}
        saved = Recipe(**{**asdict(recipe), **stamped})
        try:
            return self._put(key, saved, replace)
        except (PreconditionFailed, AlreadyExists, NotFound) as e:  # another save or remove came between
            raise InvalidInput(f"recipe {name!r} was changed by someone else just now; try again") from e

    def _put(self, key: str, saved: Recipe, replace: bool) -> Recipe:
        """Write ``saved`` at ``key``: create-only, or over what is there (a recipe only if ``replace``; a
        removed one's marker, or an object that is no recipe, always), each write on the ETag read."""
        try:
            self.store.put(key, saved.to_json(), PutMode.CREATE, content_type=JSON_TYPE)
            return saved
        except AlreadyExists:
            pass
        before, is_recipe, etag = self._before(key)
        if is_recipe and not replace:
            raise InvalidInput(f"there is already a recipe named {saved.name!r}; replace it or choose another name")
        saved = dataclasses.replace(saved, version=before + 1)  # on from the version the name had reached
        self.store.put(key, saved.to_json(), PutMode.update(etag), content_type=JSON_TYPE)
        return saved

    def _before(self, key: str) -> tuple[int, bool, str]:
        """What is stored at ``key``: the version it reached, whether it is a recipe, and its ETag. A removed
        one's marker gives its last version; a tombstone (a delete half done) and an object that is no
        recipe, which the save repairs, give 0."""
        got = self.store.get(key)
        gone = removed_version(got.body) if got.body else 0
        if gone is not None:
            return gone, False, got.meta.etag
        try:
            return Recipe.from_json(got.body).version, True, got.meta.etag
        except InvalidInput:
            return 0, False, got.meta.etag

    def get(self, actor: Actor, name: str) -> Recipe:
        """``actor``'s own recipe of that name, else the shared one."""
        for owner in (actor.name, None):
            try:
                return self._read(self._key(owner, name))[0]
            except NotFound:
                continue
        raise InvalidInput(f"there is no recipe named {name!r}; `s3task recipe list` shows them")

    def list(self, actor: Actor) -> list[Recipe]:
        """``actor``'s own recipes, then the shared ones, each by name."""
        found = []
        for owner in (actor.name, None):
            for key in self.store.list_keys(self.layout.recipe_root(owner)):
                try:
                    found.append(self._read(key)[0])
                except (NotFound, ValueError, TypeError, InvalidInput):
                    continue  # removed meanwhile, or not a recipe: not listed
        return found

    def remove(self, actor: Actor, name: str, *, shared: bool = False) -> None:
        """Remove a recipe: one's own, or (operators) a shared one; only the version read is removed. Its
        place keeps the version it reached (:func:`removed_marker`), for a recipe saved again under its name."""
        if shared and not actor.operator:
            raise AccessDenied("only an operator can remove a shared recipe")
        key = self._key(None if shared else actor.name, name)
        try:
            recipe, etag = self._read(key)
            self.store.put(key, removed_marker(recipe.version), PutMode.update(etag), content_type=JSON_TYPE)
        except NotFound as e:
            raise InvalidInput(f"there is no recipe named {name!r} to remove") from e
        except PreconditionFailed as e:
            raise InvalidInput(f"recipe {name!r} was changed by someone else just now; try again") from e

    def matching(self, actor: Actor, header: Sequence[str]) -> Recipe | None:
        """The recipe to offer for a file with ``header``: one's own first, then shared, newest first."""
        candidates = [r for r in self.list(actor) if same_header(r.header, header)]
        candidates.sort(key=lambda r: r.saved_at, reverse=True)
        candidates.sort(key=lambda r: r.shared)  # stable: own before shared, each newest first
        return candidates[0] if candidates else None


def from_task(
    record: TaskRecord, params: Mapping[str, Any], name: str, header: Sequence[str], *, shared: bool = False
) -> Recipe:
    """A recipe that makes tasks like ``record``: its type, parameters (``params``: all of them, its step list
    included) and input format as settled (its name as given: :meth:`Recipes.save` checks it)."""
    return Recipe(
        name=name,
        owner=record.created_by,
        task_type=record.task_type,
        params=dict(params),
        input_format=record.input_format.to_dict(),
        header=list(header),
        shared=shared,
        from_task=record.corrects or record.task_id,  # a correction's first run is its original, whole
    )


def applied(
    recipe: Recipe, params: Mapping[str, Any] | None, input_format: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A new task's parameters and input format: the recipe's, with what was given explicitly on top
    (a value given as None is not given)."""
    given = {k: v for k, v in (input_format or {}).items() if v is not None}
    return {**recipe.params, **(params or {})}, {**recipe.input_format, **given}
