"""``s3task inbox list|pause|resume|policy``: the recipes' inboxes (s3task.tasks.inboxes, docs/INBOXES.md).

``inbox list`` shows each recipe's inbox (yours, then the shared ones): where to drop a file, the command
that drops one, whether it is paused, the files waiting in it and the last files taken with their tasks;
for an operator, also the files under ``inbox/`` that no recipe takes. ``inbox pause|resume RECIPE``
(its name, or its inbox's id such as ``own/ann/crm-weekly``) stops and restarts the taking of files.
``inbox policy RECIPE`` prints, for the store in use, the policy that lets one principal drop files into that
inbox and nowhere else (s3task.tasks.inbox_policy; docs/STORES.md, "Who may drop files into an inbox").
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from .safetext import visible
from .tasks import Actor, TaskService
from .tasks.inbox_policy import DropPolicy
from .tasks.inboxes import Inbox


def add_inbox_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser("inbox", help="list, pause or resume the recipes' inboxes: files dropped there become tasks")
    which = s.add_subparsers(dest="inbox_command", required=True)
    listed = which.add_parser("list", help="each recipe's inbox: where to drop files, waiting files, files taken")
    listed.add_argument("--json", action="store_true")
    for name, help_ in (("pause", "stop taking files from a recipe's inbox"), ("resume", "take them again")):
        p = which.add_parser(name, help=help_)
        p.add_argument("recipe", help="the recipe's name, or its inbox's id (own/<user>/<name>, shared/<name>)")
    policy = which.add_parser("policy", help="the policy that lets one system drop files into a recipe's inbox only")
    policy.add_argument("recipe", help="the recipe's name, or its inbox's id (own/<user>/<name>, shared/<name>)")
    policy.add_argument("--json", action="store_true", help="the policy and its words as one JSON object")


def cmd_inbox(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    if args.inbox_command == "policy":
        found = service.inboxes.policy(actor, args.recipe)
        print(json.dumps(found.as_dict(), indent=1, ensure_ascii=False) if args.json else policy_text(found))
        return 0
    if args.inbox_command in ("pause", "resume"):
        act = service.inboxes.pause if args.inbox_command == "pause" else service.inboxes.resume
        inbox = act(actor, args.recipe)
        state = "paused: its files wait there" if inbox.paused else "taking files again from the next sweep"
        print(f"inbox {inbox.recipe_id} of recipe {visible(inbox.recipe.describe())}: {state}")
        return 0
    inboxes = service.inboxes.list(actor)
    strays = service.inboxes.strays() if actor.operator else []
    if args.json:
        print(json.dumps({"inboxes": [_as_json(i) for i in inboxes], "untaken": strays}, indent=1, ensure_ascii=False))
        return 0
    if not inboxes:
        print("no recipes yet, so no inboxes: `s3task recipe save NAME --from TASK_ID` makes one")
    for inbox in inboxes:
        print("\n".join(_lines(inbox)))
    if strays:
        print("files under inbox/ that no recipe takes (no such recipe, or not in a recipe's inbox):")
        print("\n".join(f"  {visible(key)}" for key in strays))
    return 0


def _lines(inbox: Inbox) -> list[str]:
    state = " (paused)" if inbox.paused else ""
    lines = [f"{inbox.recipe_id}{state}: recipe {visible(inbox.recipe.describe())}", f"  drop: {inbox.command}"]
    lines += [f"  waiting: {visible(name)}" for name in inbox.waiting]
    lines += [f"  taken {c.at}: {visible(c.name)}: {visible(c.words)}" for c in inbox.taken]
    return lines


def _as_json(inbox: Inbox) -> dict[str, object]:
    return {
        "recipe_id": inbox.recipe_id,
        "recipe": inbox.recipe.name,
        "owner": inbox.recipe.owner,
        "shared": inbox.recipe.shared,
        "prefix": inbox.prefix,
        "command": inbox.command,
        "paused": inbox.paused,
        "waiting": inbox.waiting,
        "taken": [{k: v for k, v in asdict(c).items() if k not in ("token", "history")} for c in inbox.taken],
    }


def policy_text(policy: DropPolicy) -> str:
    """The policy as the terminal shows it: its words, then each document as it is pasted (JSON as JSON)."""
    lines = [f"# who may drop files into the inbox {policy.recipe_id} ({policy.prefix}): {policy.store}"]
    lines += [f"# {words}" for words in policy.words]
    for part in policy.parts:
        lines += ["", f"# {part.caption}:", part.text]
    return "\n".join(lines)
