"""Inboxes: each recipe's folder in the store where another system drops files, each becoming a task.

A public part of the door (``service.inboxes``): what a person sees of inboxes and does to them
(list, pause, resume, the command that drops a file), and the sweeper a worker runs
(:meth:`Inboxes.sweeper`, s3task.tasks.inbox_sweep; each file taken once: s3task.tasks.inbox_take).
A file in ``inbox/<recipe id>/`` acts as the recipe's owner: whoever may write there may make tasks
as them: :meth:`Inboxes.policy` gives, for the store in use, the policy that limits who may
(s3task.tasks.inbox_policy; docs/STORES.md, "Who may drop files into an inbox").
"""

from __future__ import annotations

import builtins
import contextlib
import shlex
from dataclasses import dataclass, field

from ..errors import AccessDenied, AlreadyExists, InvalidInput, NotFound, S3TaskError
from ..safetext import check_name
from ..store.base import PutMode
from .access import Actor
from .inbox_files import Claim
from .inbox_policy import DropPolicy, drop_policy
from .inbox_sweep import InboxSweeper, is_tombstone
from .inbox_take import CLAIM_SECONDS
from .recipes import NAME_CHARS as RECIPE_NAME_CHARS
from .recipes import Recipe, Recipes
from .transitions import Transitions

#: The files taken that an inbox's listing shows, newest first.
SHOWN_TAKEN = 10


@dataclass(frozen=True)
class Inbox:
    """One recipe's inbox, as its listing shows it."""

    recipe: Recipe
    recipe_id: str
    #: The key prefix files are dropped under (in the store's bucket, container or directory).
    prefix: str
    #: The command that drops a file there, for the store in use.
    command: str
    paused: bool
    #: Files waiting in it (names after the prefix).
    waiting: list[str] = field(default_factory=list)
    #: The last files taken, newest first.
    taken: list[Claim] = field(default_factory=list)


class Inboxes:
    """Recipes' inboxes: see the module docstring."""

    def __init__(self, transitions: Transitions, recipes: Recipes) -> None:
        self._transitions, self._recipes = transitions, recipes
        self._store, self._layout = transitions.store, transitions.layout

    def sweeper(
        self, holder: str, *, interval: float, lease: bool = True, claim_seconds: float = CLAIM_SECONDS
    ) -> InboxSweeper:
        """The sweeps of one worker (``holder``: its id), every ``interval`` seconds (the lease is six)."""
        return InboxSweeper(
            self._transitions, self._recipes, holder, interval=interval, lease=lease, claim_seconds=claim_seconds
        )

    def id_of(self, recipe: Recipe) -> str:
        return self._recipes.id_of(recipe)

    def list(self, actor: Actor) -> builtins.list[Inbox]:
        """The inboxes of ``actor``'s recipes, then of the shared ones."""
        return [self._inbox(recipe) for recipe in self._recipes.list(actor)]

    def get(self, actor: Actor, which: str) -> Inbox:
        """One inbox, by its recipe's id (``own/ann/crm``) or name (the actor's own first, then shared)."""
        return self._inbox(self._find(actor, which))

    def strays(self) -> builtins.list[str]:
        """Files under ``inbox/`` that no recipe takes: in no recipe's inbox, or one whose recipe is gone."""
        found, known = [], {}
        for key in self._store.list_keys(self._layout.inbox_root):
            where = self._layout.inbox_file(key)
            if where is None:
                found.append(key)
                continue
            if where[0] not in known:
                known[where[0]] = self._exists(where[0])
            if not known[where[0]] and not where[1].endswith("/"):
                found.append(key)
        return found

    def pause(self, actor: Actor, which: str) -> Inbox:
        """Stop taking files from a recipe's inbox (its owner or an operator); they wait there meanwhile."""
        recipe = self._mine(actor, which)
        with contextlib.suppress(AlreadyExists):
            self._store.put(self._layout.inbox_paused_key(self.id_of(recipe)), b"", PutMode.CREATE)
        return self._inbox(recipe)

    def resume(self, actor: Actor, which: str) -> Inbox:
        """Take files from a paused inbox again, from the next sweep."""
        recipe = self._mine(actor, which)
        self._store.delete(self._layout.inbox_paused_key(self.id_of(recipe)))
        return self._inbox(recipe)

    def drop_command(self, recipe_id: str) -> str:
        """The command that drops FILE into the inbox ``recipe_id`` on the store in use."""
        prefix = self._layout.inbox_prefix(recipe_id)
        where, _, rest = self._store.description.partition(" ")
        if where.startswith("s3://"):  # described "s3://bucket/prefix (endpoint)": not AWS's own, the CLI needs it
            endpoint = rest.strip("()")
            on_aws = not endpoint or endpoint.split("/")[2].endswith(".amazonaws.com")
            return f"aws s3 cp FILE {where}/{prefix}" + ("" if on_aws else f" --endpoint-url {endpoint}")
        if where.startswith("gs://"):
            return f"gcloud storage cp FILE {where}/{prefix}"
        if where.startswith("az://"):
            return f"az storage blob upload --container-name {where[5:]} --file FILE --name {prefix}FILE"
        root = self._store.description.removeprefix("local directory ")
        folder = shlex.quote(f"{root}/{prefix}")  # a store's path with a space still pastes as one word
        return f"mkdir -p {folder} && cp FILE {folder}"  # the folder goes when a sweep empties it

    def drop_policy(self, recipe_id: str) -> DropPolicy:
        """The policy that lets one principal drop files into the inbox ``recipe_id`` only, on the store in use."""
        return drop_policy(self._store.description, self._layout, recipe_id)

    def policy(self, actor: Actor, which: str) -> DropPolicy:
        """:meth:`drop_policy` of a recipe's inbox (its name or id), for its owner or an operator."""
        recipe = self._find(actor, which)
        if not manages(actor, recipe):
            raise AccessDenied(f"only an operator or its owner can see who may drop files into {recipe.describe()}")
        return self.drop_policy(self.id_of(recipe))

    # --- what the listing reads ------------------------------------------------------------------

    def _inbox(self, recipe: Recipe) -> Inbox:
        recipe_id = self.id_of(recipe)
        prefix = self._layout.inbox_prefix(recipe_id)
        waiting = [k.removeprefix(prefix) for k in self._store.list_keys(prefix) if not k.endswith("/")]
        return Inbox(recipe, recipe_id, prefix, self.drop_command(recipe_id), self._paused(recipe_id), waiting,
                     self._taken(recipe_id))  # fmt: skip

    def _paused(self, recipe_id: str) -> bool:
        try:
            self._store.head(self._layout.inbox_paused_key(recipe_id))
            return True
        except NotFound:
            return False

    def _taken(self, recipe_id: str) -> builtins.list[Claim]:
        found = []
        for key in self._store.list_keys(self._layout.inbox_taken_root(recipe_id), limit=SHOWN_TAKEN):
            with contextlib.suppress(S3TaskError, InvalidInput):
                got = self._store.get(key)
                if not is_tombstone(got.meta):
                    found.append(Claim.from_json(got.body))
        return found

    def _exists(self, recipe_id: str) -> bool:
        try:
            self._recipes.by_id(recipe_id)
            return True
        except (NotFound, InvalidInput, ValueError):
            return False

    def _find(self, actor: Actor, which: str) -> Recipe:
        if "/" in which:
            try:
                return self._recipes.by_id(which)
            except (NotFound, ValueError) as e:
                raise InvalidInput(f"no recipe has the inbox {which!r}; `s3task inbox list` shows them") from e
        # A recipe's name keeps a task name's rule: "crm\x07weekly" names no recipe (its key would be crm-weekly's).
        return self._recipes.get(actor, check_name(which, "recipe", RECIPE_NAME_CHARS))

    def _mine(self, actor: Actor, which: str) -> Recipe:
        recipe = self._find(actor, which)
        if not manages(actor, recipe):
            raise AccessDenied(f"only an operator or its owner can pause or resume the inbox of {recipe.describe()}")
        return recipe


def manages(actor: Actor, recipe: Recipe) -> bool:
    """Whether ``actor`` may pause a recipe's inbox and see who may drop files there: its owner (a person's
    own recipe) or an operator."""
    return actor.operator or (recipe.owner == actor.name and not recipe.shared)
