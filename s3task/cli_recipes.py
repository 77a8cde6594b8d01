"""``s3task recipe save|list|remove``: recipes for the files that come back (s3task.tasks.recipes).

``recipe save NAME --from TASK_ID`` keeps a submitted task's type, parameters, input format and the
columns it was given under NAME (``--shared``: for everyone, operators only; ``--replace``: over
one of that name); ``s3task submit FILE --recipe NAME`` then makes a task from it.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from . import handlers
from .csvio import InputFormat
from .safetext import visible
from .tasks import Actor, TaskService
from .tasks.recipes import Recipe


def add_recipe_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser("recipe", help="save, list or remove recipes: a task's settings kept for files that come back")
    which = s.add_subparsers(dest="recipe_command", required=True)
    save = which.add_parser("save", help="keep a submitted task's type, settings, format and columns under a name")
    save.add_argument("name")
    save.add_argument("--from", dest="task_id", required=True, metavar="TASK_ID", help="the task to keep as a recipe")
    save.add_argument("--shared", action="store_true", help="for everyone (operators only)")
    save.add_argument("--replace", action="store_true", help="replace a recipe of that name")
    listed = which.add_parser("list", help="your recipes, then the shared ones")
    listed.add_argument("--json", action="store_true")
    remove = which.add_parser("remove", help="remove one of your recipes (--shared: a shared one, operators only)")
    remove.add_argument("name")
    remove.add_argument("--shared", action="store_true")


def described(recipe: Recipe) -> str:
    """ "“CRM monthly” version 2 (ann's: Check and enrich email addresses)": the recipe's name, its version
    (the one a task made from it names), whose, and its type's title."""
    whose = "shared" if recipe.shared else f"{recipe.owner}'s"
    return f"“{recipe.name}” version {recipe.version} ({whose}: {handlers.title_of(recipe.task_type)})"


def cmd_recipe(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    if args.recipe_command == "save":
        recipe = service.recipes.save(actor, args.name, args.task_id, shared=args.shared, replace=args.replace)
        print(f"saved recipe {described(recipe)}, read as: {InputFormat.from_dict(recipe.input_format).describe()}")
        return 0
    if args.recipe_command == "remove":
        service.recipes.remove(actor, args.name, shared=args.shared)
        print(f"removed recipe {args.name!r}")
        return 0
    recipes = service.recipes.list(actor)
    if args.json:
        print(json.dumps([asdict(r) for r in recipes], indent=1, ensure_ascii=False))
        return 0
    if not recipes:
        print("no recipes yet: `s3task recipe save NAME --from TASK_ID` keeps a task's settings")
    for r in recipes:
        columns = ", ".join(visible(h) for h in r.header)
        print(f"{visible(described(r))} · {InputFormat.from_dict(r.input_format).describe()} · columns: {columns}")
    return 0
