"""Recipes at the door (``service.recipes``): the settings of a task kept under a name, for the file that
comes back next month, as a user saves, finds, lists and removes them. Storing them (conditional writes
only) is :class:`~s3task.tasks.recipes.Recipes`'."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import handlers
from ..errors import InvalidInput, NotFound
from . import access, recipes
from .input_check import header_of
from .looking import MAX_LIST

#: Tasks looked at, newest first, for a recipe's latest result.
LATEST_LOOKED_AT = 2_000

if TYPE_CHECKING:
    from ..record import TaskRecord
    from ..store.base import ObjectStore
    from .access import Actor
    from .recipes import Recipe, Recipes
    from .transitions import Transitions


class RecipeShelf:
    """A user's recipes and the shared ones (see the module)."""

    def __init__(self, store: ObjectStore, transitions: Transitions, kept: Recipes) -> None:
        self._store, self._transitions, self._kept = store, transitions, kept

    def save(self, actor: Actor, name: str, task_id: str, *, shared: bool = False, replace: bool = False) -> Recipe:
        """A recipe made from the task ``task_id`` (submitted: its format and columns are settled)."""
        record = self._transitions.get(actor, task_id)
        access.require(actor, record, "make a recipe of")
        if handlers.get(record.task_type).made_from_results:
            raise InvalidInput(f"task {task_id} is made from other tasks' results, not a file: it makes no recipe")
        if record.input_etag is None:
            raise InvalidInput(f"task {task_id} was never submitted, so its file's format is not known yet")
        params = self._transitions.params_of(record)
        recipe = recipes.from_task(record, params, name, header_of(self._store, record), shared=shared)
        return self._kept.save(actor, recipe, replace=replace)

    def get(self, actor: Actor, name: str) -> Recipe:
        """This user's recipe of that name, else the shared one (NotFound: neither)."""
        return self._kept.get(actor, name)

    def list(self, actor: Actor) -> builtins.list[Recipe]:
        return self._kept.list(actor)

    def remove(self, actor: Actor, name: str, *, shared: bool = False) -> None:
        self._kept.remove(actor, name, shared=shared)

    def made_from(self, record: TaskRecord) -> Recipe | None:
        """The recipe ``record`` was made from, as it is saved now (None: made from none, or removed since).
        Whoever sees the task sees it: the task holds its settings already."""
        if record.recipe_id is None:
            return None
        try:
            return self._kept.by_id(record.recipe_id)
        except (NotFound, InvalidInput):  # removed, or the key holds something that is not a recipe
            return None

    def latest(self, actor: Actor, name: str) -> TaskRecord:
        """The newest completed task made from the recipe ``name`` (this user's, else the shared one; never a
        correction, which holds only the rows sent back), or the task it was saved from (its first run), whose
        result ``actor`` may download: what a link to "the latest result of recipe X" gives. Looks at the
        newest :data:`LATEST_LOOKED_AT` tasks; InvalidInput when none of them is such a task."""
        recipe = self._kept.get(actor, name)
        recipe_id, cursor, looked = self._kept.id_of(recipe), None, 0
        while looked < LATEST_LOOKED_AT:
            page = self._transitions.list(actor, limit=MAX_LIST, cursor=cursor)
            for record in page.tasks:
                # A correction keeps its original's recipe but holds only the rows sent back: not a month's result.
                ran = record.recipe_id == recipe_id or (recipe.from_task and record.task_id == recipe.from_task)
                run = ran and record.corrects is None
                if run and record.status == "completed" and access.may_act(actor, record):
                    return record
            looked += len(page.tasks)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        raise InvalidInput(
            f"no completed task of recipe {recipe.name!r} among the newest {looked:,} tasks that is yours to download"
        )

    def matching(self, actor: Actor, header: Sequence[str]) -> Recipe | None:
        """The recipe this user may use whose columns are the file's ``header``, if any."""
        return self._kept.matching(actor, header)
