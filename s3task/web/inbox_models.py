"""The bodies of the inbox routes (docs/INBOXES.md): what pausing or resuming one takes, and an inbox as the
API shows it (what ``s3task inbox list --json`` prints, less the claims' own tokens). The rest of the API's
bodies are :mod:`s3task.web.models`'."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from ..tasks.inboxes import Inbox
from .models import _Request, _Response


class InboxChange(_Request):
    """What `POST /api/inboxes/pause` and `POST /api/inboxes/resume` take."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"recipe": "CRM weekly"}]})

    recipe: str = Field(
        min_length=1,
        max_length=1000,
        description="The recipe's name (your own, else a shared one), or its inbox's id (`own/ann/crm-weekly`, "
        "`shared/price-list`; GET /api/inboxes).",
    )


class TakenFile(_Response):
    """A file taken from an inbox (its claim), and the task it became."""

    name: str = Field(description="The file's name in the inbox.")
    key: str = Field(description="Where it was dropped in the store.")
    size: int = Field(ge=0, description="Its size in bytes.")
    task_id: str = Field(description="The task it became (GET /api/tasks/{task_id} for what became of it since).")
    state: Literal["taking", "taken", "kept"] = Field(
        description="taken: the file is its task's input and left the inbox; taking: a worker is at it; kept: it "
        "could not become a task and stays in the inbox (the reason in `words`)."
    )
    at: str = Field(description="When it reached this state (UTC, ISO 8601).")
    words: str = Field(description="What became of it, in words (`task … of ann's, queued`).")


class InboxView(_Response):
    """One recipe's inbox: where another system drops files, each becoming a task made as the recipe's owner."""

    recipe_id: str = Field(description="The inbox's id: `own/<user>/<name>` or `shared/<name>`.")
    recipe: str = Field(description="The recipe's name.")
    owner: str = Field(description="Who saved the recipe; its inbox's tasks are made as them.")
    shared: bool = Field(description="A shared recipe (an operator pauses or resumes its inbox).")
    task_type: str = Field(description="The type of the tasks its files become.")
    prefix: str = Field(description="The key prefix files are dropped under, in the store's bucket or directory.")
    command: str = Field(description="The command that drops a file named FILE there, for the store in use.")
    paused: bool = Field(description="Its files wait there until it is resumed.")
    waiting: list[str] = Field(description="Files waiting in it (their names after the prefix).")
    taken: list[TakenFile] = Field(description="The last files taken, newest first (at most 10).")


class InboxList(_Response):
    inboxes: list[InboxView] = Field(description="The inboxes of your recipes, then of the shared ones.")
    untaken: list[str] = Field(
        description="For an operator: keys under `inbox/` that no recipe takes (in no recipe's inbox, or one whose "
        "recipe was removed); empty for everyone else."
    )


class OneInbox(_Response):
    inbox: InboxView


def inbox_of(inbox: Inbox) -> InboxView:
    """An inbox as the API shows it (what `s3task inbox list --json` prints, less the claims' own tokens)."""
    recipe, fields = inbox.recipe, TakenFile.model_fields
    return InboxView(
        recipe_id=inbox.recipe_id, recipe=recipe.name, owner=recipe.owner, shared=recipe.shared,
        task_type=recipe.task_type, prefix=inbox.prefix, command=inbox.command, paused=inbox.paused,
        waiting=list(inbox.waiting), taken=[TakenFile(**{n: getattr(c, n) for n in fields}) for c in inbox.taken],
    )  # fmt: skip
