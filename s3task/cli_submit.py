"""``s3task submit FILE``: create a task from a file and queue it, continuing an interrupted upload
with ``--resume``.

On S3 a file of more than 16 MiB goes in 8 MiB parts, and the task notes its upload as it starts;
an upload that stops (the process killed, the network gone) leaves the task *created* and its parts
in the store. The same command with ``--resume`` finds that task (yours, the same name and type,
the same file by name, size and a hash of its first and last MiB), sends only the parts the store
does not hold, and queues it: the same task id. Where nothing waits, ``--resume`` says so and
starts a new upload, so a script may always pass it; a task waiting for a different file of the
same name is never continued: the command stops and says so. The local directory store takes a
file in one piece: ``--resume`` there copies the whole file again into the waiting task.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, BinaryIO

from . import fingerprint, handlers
from .cli_reference import add_reference_flags, with_references
from .csvio import XLSX, detect_kind
from .errors import InvalidInput
from .record import TaskRecord
from .tasks import Actor, TaskService, recipes
from .tasks.recipes import Recipe


def add_submit_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], handlers_help: str) -> None:
    s = sub.add_parser("submit", help="create a task from a CSV file or an Excel workbook (.xlsx, .xlsm) and queue it")
    s.add_argument("path")
    s.add_argument("--name", required=True)
    s.add_argument("--type", dest="task_type", help="the task type (default: the recipe's, else copy)")
    s.add_argument("--handlers", action="append", metavar="MODULE", dest="sub_handlers", help=handlers_help)
    s.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    s.add_argument(
        "--steps",
        metavar="STEPS.json",
        help="a list of steps and checks to run (the type 'steps', \"Prepare the table\"; docs/STEPS.md)",
    )
    s.add_argument(
        "--column",
        action="append",
        default=[],
        metavar="NEED=HEADER",
        help="the file's column for a column the task type needs (email=Mail); default: found by header or values",
    )
    s.add_argument(
        "--recipe",
        metavar="NAME",
        help="a saved recipe's type, settings, format and columns (`s3task recipe list`); flags given go on top",
    )
    s.add_argument(
        "--delimiter",
        help="what separates the values: comma, semicolon, tab, pipe (or , ; |); default: detect from the file",
    )
    s.add_argument(
        "--encoding",
        help="the file's text encoding: utf-8, windows-1252, utf-16-le, utf-16-be, "
        "utf-16 (the byte order its byte-order mark says); default: detect from the file",
    )
    s.add_argument(
        "--resume",
        action="store_true",
        help="continue this file's interrupted upload into the task made for it (yours, same --name and "
        "--type, same file); with none waiting, start a new one",
    )
    _add_workbook_flags(s)
    add_reference_flags(s)
    s.add_argument("--as", dest="sub_user", help=argparse.SUPPRESS)


def _steps_file(path: str) -> Any:
    """The step list in ``path`` as JSON (checked when the task is made, with the file's header)."""
    import json

    try:
        with open(path, "rb") as f:
            return json.loads(f.read(1 << 20))
    except ValueError as e:
        raise InvalidInput(f"{path} is not a step list in JSON: {e}") from e


def _add_workbook_flags(s: argparse.ArgumentParser) -> None:
    s.add_argument("--sheet", metavar="NAME", help="a workbook's sheet to read; default: the one it opens on in Excel")
    s.add_argument(
        "--header-row",
        type=int,
        metavar="N",
        help="a workbook's row of column names, as Excel numbers rows; default: found under any title",
    )


def cmd_submit(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    path = Path(args.path)
    if not path.is_file():
        raise InvalidInput(f"{path} is not a file")
    params = dict(_pairs(args.param, "--param", "KEY=VALUE"))
    if args.steps:
        params["steps"] = _steps_file(args.steps)
        if args.task_type not in (None, "steps"):
            raise InvalidInput(
                f"--steps is for --type steps ({handlers.title_of('steps')}), not --type {args.task_type}"
            )
        args.task_type = "steps"
    with path.open("rb") as f:
        given = {"delimiter": args.delimiter, "encoding": args.encoding, **_workbook_flags(args, f.read(8))}
        given = {key: value for key, value in given.items() if value is not None}
        recipe = None
        if args.recipe:
            recipe = service.recipes.get(actor, args.recipe)
            if args.task_type not in (None, recipe.task_type):
                raise InvalidInput(
                    f"recipe {recipe.name!r} is for --type {recipe.task_type} ({handlers.title_of(recipe.task_type)}), "
                    f"not --type {args.task_type}"
                )
            args.task_type = recipe.task_type
            params, read_as = recipes.applied(recipe, params, given)
        else:
            args.task_type = args.task_type or "copy"
            read_as = {"delimiter": "detect", "encoding": "detect", **given}
        params.update(_columns(args.column, args.task_type))
        if args.reference:  # each file a task of its own, copied by a worker, before the list is sent
            params["steps"] = with_references(args, service, actor, params.get("steps"), read_as)
        # An upload in parts that stops is an error line saying how to continue (UploadInterrupted).
        record = _send(args, service, actor, f, params, read_as, recipe)
    print(f"submitted {args.name!r}: {handlers.title_of(args.task_type)}", file=sys.stderr)
    print(f"read as: {record.read_as.describe()}", file=sys.stderr)
    print(record.task_id)
    return 0


def _send(
    args: argparse.Namespace,
    service: TaskService,
    actor: Actor,
    f: BinaryIO,
    params: dict[str, Any],
    read_as: dict[str, Any],
    recipe: Recipe | None = None,
) -> TaskRecord:
    """The file into a new task (made from ``recipe``, if given), or with ``--resume`` into the task waiting
    for it."""
    file = fingerprint.of_stream(f, Path(args.path).name, Path(args.path).stat().st_size)
    if args.resume:
        waiting = service.waiting_upload(actor, args.name, args.task_type, file)  # refuses a different file in words
        if waiting is not None:
            _same_settings(waiting, service.steps.parameters(waiting), params, read_as)
            print(_continuing(service, waiting, file.size), file=sys.stderr)
            return service.resume_upload(actor, waiting, f, file)
        print(f"no upload of {file.name!r} as {args.name!r} ({handlers.title_of(args.task_type)}) waits to be "
              "continued; starting a new one", file=sys.stderr)  # fmt: skip
    try:
        return service.submit_resumable(actor, args.name, args.task_type, params, f, file, read_as, recipe=recipe)
    except KeyboardInterrupt:
        if service.uploads_in_parts(file.size):
            print("stopped: the parts sent are kept; run the same command with --resume to continue", file=sys.stderr)
        raise


def _same_settings(
    waiting: TaskRecord, made_with: dict[str, Any], params: dict[str, Any], read_as: dict[str, Any]
) -> None:
    """A waiting task is continued as it was made: settings or a format given now that differ are refused,
    never dropped without a word (found by the outside review)."""
    checked = handlers.get(waiting.task_type).validate(params)
    differ = [f"{k}={params[k]!r}" for k in params if checked[k] != made_with.get(k)]
    asked = waiting.input_format.to_dict()
    differ += [f"{k}={v!r}" for k, v in read_as.items() if v != "detect" and asked.get(k, "detect") != v]
    if differ:
        raise InvalidInput(
            f"task {waiting.task_id} waits for this file with other settings than {', '.join(differ)}; "
            "--resume continues it as it was made: cancel it (s3task cancel ID) and submit without --resume"
        )


def _pairs(items: list[str], flag: str, shape: str) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f"{flag} {item!r} should look like {shape}")
        pairs.append((key.strip(), value))
    return pairs


def _columns(items: list[str], task_type: str) -> dict[str, str]:
    """--column NEED=HEADER as the parameters that name the columns (a need by its label or parameter)."""
    needs = handlers.get(task_type).needs
    chosen = {}
    for need_name, header in _pairs(items, "--column", "NEED=HEADER"):
        need = next((n for n in needs if need_name.lower() in (n.label.lower(), n.param)), None)
        if need is None:
            known = ", ".join(n.label for n in needs) or "none"
            raise InvalidInput(
                f"--type {task_type} ({handlers.title_of(task_type)}) needs no column {need_name!r} "
                f"(the columns it needs: {known})"
            )
        chosen[need.param] = header
    return chosen


def _continuing(service: TaskService, record: TaskRecord, size: int) -> str:
    if service.uploads_in_parts(size):
        return f"continuing the upload into task {record.task_id}: only the parts the store does not hold are sent"
    return (
        f"continuing task {record.task_id}: {service.store_description} takes a file in one piece, "
        "so the whole file is sent again"
    )


def _workbook_flags(args: argparse.Namespace, head: bytes) -> dict[str, Any]:
    """--sheet and --header-row, refused before any task is made when the file is no workbook."""
    flags = {"sheet": args.sheet, "header_row": args.header_row}
    given = [f"--{key.replace('_', '-')}" for key, value in flags.items() if value is not None]
    if given and detect_kind(head) != XLSX:
        raise InvalidInput(
            f"{' and '.join(given)} {'are' if len(given) > 1 else 'is'} for Excel workbooks (.xlsx, .xlsm); "
            f"{args.path} is not one (a CSV has no sheets, and its header is its first line)"
        )
    return {key: value for key, value in flags.items() if value is not None}
