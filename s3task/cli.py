"""``python -m s3task``: operator commands.

Every error is one line on stderr and a non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import handlers, notify
from .cli_compare import add_compare_parser, cmd_compare
from .cli_inbox import add_inbox_parser, cmd_inbox
from .cli_recipes import add_recipe_parser, cmd_recipe
from .cli_steps import add_steps_parser, cmd_steps
from .cli_store import STORE_COMMANDS, add_store_commands
from .cli_submit import add_submit_parser, cmd_submit
from .cli_url import add_url_parser, cmd_url
from .config import Settings
from .counts import LABELS, counts_of
from .errors import InvalidInput, S3TaskError, SettingsError, UnknownTaskType
from .safetext import visible
from .store import open_store

if TYPE_CHECKING:
    pass
from .tasks import Actor, CreateLimits, TaskService

EXIT_ERROR = 1
#: A setting s3task cannot use (as for a bad flag: argparse exits with 2 too).
EXIT_SETTINGS = 2


HANDLERS_HELP = "module that registers more task types, as for the workers (repeatable; env S3TASK_HANDLERS)"


def build_parser() -> argparse.ArgumentParser:
    prog = "python -m s3task" if os.path.basename(sys.argv[0]) == "__main__.py" else None  # else: s3task
    p = argparse.ArgumentParser(prog=prog, description="Operate s3task: tasks kept in an object store.")
    p.add_argument(
        "--store", help="s3://bucket/prefix, az://container/prefix or a folder (S3TASK_STORE; ./s3task-data)"
    )
    p.add_argument("--as", dest="user", help="act as this user (default: $S3TASK_USER or $USER)")
    p.add_argument("--handlers", action="append", metavar="MODULE", help=HANDLERS_HELP)
    sub = p.add_subparsers(dest="command", required=True)
    _add_task_commands(sub)
    add_store_commands(sub)
    return p


def _add_task_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands on tasks: submit, list, show, cancel, retry, download; and recipes."""
    add_submit_parser(sub, HANDLERS_HELP)
    add_steps_parser(sub)
    add_recipe_parser(sub)
    add_inbox_parser(sub)
    add_url_parser(sub, DOWNLOAD_FLAGS)
    add_compare_parser(sub)

    s = sub.add_parser("list", help="newest tasks first")
    s.add_argument("--limit", type=int, default=50)
    s.add_argument("--cursor")
    s.add_argument("--mine", action="store_true")
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("show", help="one task's record")
    s.add_argument("task_id")
    s.add_argument("--json", action="store_true")

    for name, help_ in (("cancel", "cancel a task"), ("retry", "queue a failed task again")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("task_id")
        s.add_argument("--as", dest="sub_user", help=argparse.SUPPRESS)

    s = sub.add_parser("download", help="save a completed task's output")
    s.add_argument("task_id")
    s.add_argument("-o", "--output", help="file to write (default: a name from the task)")
    which = s.add_mutually_exclusive_group()
    for flag, variant, what in DOWNLOAD_FLAGS:
        which.add_argument(flag, dest="variant", action="store_const", const=variant, help=what)
    which.add_argument(
        "--combined", dest="variant", action="store_const", const="combined",
        help="the result with the rows its completed corrections ran again in their places (docs/APP.md); "
        "of a correction: its original's",
    )  # fmt: skip
    which.add_argument(
        "--combined-excel", dest="variant", action="store_const", const="combined-xlsx",
        help="the same combined result as an Excel workbook (.xlsx), numbers and dates typed as --excel's",
    )  # fmt: skip
    s.set_defaults(variant="csv")
    s.add_argument("--as", dest="sub_user", help=argparse.SUPPRESS)


#: ``s3task download``'s choice of file: flag, variant (s3task.exports), what it is.
DOWNLOAD_FLAGS = (
    ("--excel", "xlsx", "an Excel workbook (.xlsx): numbers and dates where every value of a column is one"),
    ("--exact", "exact", "the CSV with the values exactly as produced (no ' before values a spreadsheet would run)"),
    ("--errors", "errors", "only the rows with an error (CSV)"),
    ("--errors-excel", "errors-xlsx", "only the rows with an error, with their rows in the file (Excel, to correct)"),
    ("--parquet", "parquet", "a Parquet file, each column typed as its values allow (docs/API.md)"),
)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    flags = (args.handlers or []) + (getattr(args, "sub_handlers", None) or [])
    try:
        # Before anything else touches the store: a bad setting is one line and exit 2, like a bad flag.
        settings = Settings.load({"store": args.store, "handlers": flags or None})
        notifier = notify.from_settings(settings)  # email / webhooks of the state changes made here, if set
    except SettingsError as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return EXIT_SETTINGS
    try:
        _load_handlers(settings.handlers)
        store, layout = open_store(settings.store, clock=settings.clock)
        user = getattr(args, "sub_user", None) or args.user or settings.user or _login()
        # The CLI is an operator tool: whoever can run it with the store's credentials can already
        # change every object. S3TASK_CLI_OPERATOR=0 makes it act as a plain user.
        actor = Actor(user, operator=user in settings.operators or settings.cli_operator)
        if args.command in STORE_COMMANDS:  # on the store itself, not on tasks
            return STORE_COMMANDS[args.command](args, store, layout)
        service = TaskService(
            store,
            layout,
            max_attempts=settings.max_attempts,
            url_seconds=settings.url_seconds,
            hook=notifier,
            limits=CreateLimits.of(settings),
        )
        return COMMANDS[args.command](args, service, actor)
    except (S3TaskError, ValueError, OSError) as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


def _load_handlers(modules: Sequence[str]) -> None:
    """The task types the workers run (``--handlers``, ``S3TASK_HANDLERS``), so they can be submitted here."""
    for module in modules:
        try:
            handlers.load_module(module)
        except S3TaskError:
            raise
        except Exception as e:  # the module itself is broken: still one line, never a traceback
            raise UnknownTaskType(f"cannot import handler module {module!r}: {type(e).__name__}: {e}") from e


def _login() -> str:
    """The login name, when neither ``--as`` nor ``S3TASK_USER`` says who acts (not an s3task setting)."""
    return os.environ.get("USER") or os.environ.get("LOGNAME") or "local"


def _one_line(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return visible(" ".join(text.split()))


# --- commands ----------------------------------------------------------------


def cmd_list(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    page = service.list(actor, limit=args.limit, cursor=args.cursor, mine=args.mine)
    for problem in page.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if args.json:
        tasks = [{**t.to_dict(), **counts_of(t).as_dict()} for t in page.tasks]
        print(json.dumps({"tasks": tasks, "next_cursor": page.next_cursor}, indent=1))
        return 0
    rows = [("ID", "NAME", "TYPE", "STATUS", "PROGRESS", *(w.upper() for w in LABELS.values()), "BY", "CREATED")]
    for t in page.tasks:
        status = t.status + (" (final)" if t.final else "")
        counts = counts_of(t).as_dict()  # the app's counts; "-" where one does not apply to the type
        rows.append(
            (
                t.task_id,
                visible(t.task_name)[:30],  # a stored name's control characters as escapes (safetext)
                visible(t.task_type),
                status,
                f"{t.progress:.0%}",
                *("-" if counts[name] is None else str(counts[name]) for name in LABELS),
                visible(t.created_by),
                t.created_at[:19].replace("T", " "),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    if page.next_cursor:
        print(f"(more: --cursor {page.next_cursor})", file=sys.stderr)
    return 0


def cmd_show(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    record = service.get(actor, args.task_id)
    shown = record.to_dict()
    try:
        shown["payload"] = service.steps.parameters(record)  # its step list too (task_steps)
    except InvalidInput as e:  # its list gone or changed: the record is still shown, and why the list is not
        print(f"warning: {visible(e.message)}", file=sys.stderr)
    if args.json:
        text = json.dumps({**shown, **counts_of(record).as_dict()}, indent=1, ensure_ascii=False)
        # JSON leaves C1 controls and bidirectional overrides raw; visible()'s \u escapes parse back the same.
        print("\n".join(visible(line) for line in text.split("\n")))
        return 0
    for label, value in counts_of(record).lines():  # the app's words and numbers
        print(f"{label:>18}: {value}")
    if record.input_etag:  # submitted: its format settled (a workbook's sheet and header row as taken)
        print(f"{'read as':>18}: {record.read_as.describe()}")
    for key, value in shown.items():
        if key != "history":
            print(f"{key:>18}: {visible(str(value))}")
    for event in record.history:
        note = f"  {visible(str(event['note']))}" if event.get("note") else ""
        print(f"{'':>18}  {event['at']}  {event['event']} (attempt {event.get('attempt')}){note}")
    return 0


def cmd_cancel(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    print(service.cancel(actor, args.task_id).status)
    return 0


def cmd_retry(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    print(service.retry(actor, args.task_id).status)
    return 0


def cmd_download(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    record = service.get(actor, args.task_id)
    combined, excel = args.variant in ("combined", "combined-xlsx"), args.variant == "combined-xlsx"
    if combined:  # a correction's combined result is its original's, named after it
        original = service.get(actor, record.corrects) if record.corrects else record
        name = service.combined_filename(original, excel)
    else:
        name = service.output_filename(record, args.variant)
    target = Path(args.output or name)
    tmp = target.with_name(target.name + ".part")
    # A copy (or the combined result) is made in the store if it is not yet.
    if combined:
        service.ensure_combined(actor, args.task_id, excel)
        source = service.open_combined(actor, args.task_id, excel)
    else:
        service.ensure_output(actor, args.task_id, args.variant)
        source = service.open_output(actor, args.task_id, args.variant)
    with source as src, tmp.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    tmp.replace(target)
    print(target)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, TaskService, Actor], int]] = {
    "submit": cmd_submit,
    "steps": cmd_steps,
    "recipe": cmd_recipe,
    "inbox": cmd_inbox,
    "list": cmd_list,
    "show": cmd_show,
    "cancel": cmd_cancel,
    "retry": cmd_retry,
    "download": cmd_download,
    "url": cmd_url,
    "compare": cmd_compare,
}
