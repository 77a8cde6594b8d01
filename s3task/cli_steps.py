"""``s3task steps …``: step lists before they run.

- ``steps check STEPS.json [FILE]``: says in plain words what is wrong with a list (an unknown step, a bad
  pattern or date format) and, given the file it is for, runs it over the file's first rows as the
  worker would: each step's effect, and each step that cannot apply (a column that is not there, or that
  an earlier step removed). Exit 1 when anything is wrong.
- ``steps schema``: the list's JSON Schema (as the API's OpenAPI document publishes it).
- ``steps from-openrefine HISTORY.json``: an OpenRefine operation history as a step list, or why not.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .csvio import INSPECT_BYTES, XLSX, InputFormat, detect_kind, parse_input_format, read_start, resolve
from .errors import InvalidInput
from .tasks import Actor, TaskService

if TYPE_CHECKING:
    import pyarrow as pa

EXIT_PROBLEMS = 1


def add_steps_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser("steps", help="check a list of steps on a file, print its schema, import OpenRefine's")
    which = s.add_subparsers(dest="steps_command", required=True)
    c = which.add_parser("check", help="say what is wrong with a step list, and run it on a file's first rows")
    c.add_argument("steps_path", metavar="STEPS.json")
    c.add_argument("path", nargs="?", metavar="FILE", help="the CSV or workbook the list is for")
    c.add_argument("--delimiter", help="as for submit; default: detect")
    c.add_argument("--encoding", help="as for submit; default: detect")
    c.add_argument("--sheet", metavar="NAME", help="a workbook's sheet; default: the one it opens on")
    c.add_argument("--header-row", type=int, metavar="N", help="a workbook's header row; default: found")
    which.add_parser("schema", help="the step list's JSON Schema")
    o = which.add_parser("from-openrefine", help="an OpenRefine operation history (Extract…) as a step list")
    o.add_argument("history_path", metavar="HISTORY.json")


def cmd_steps(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    if args.steps_command == "schema":
        from .steps.schema import step_list_schema

        print(json.dumps(step_list_schema(), indent=1, ensure_ascii=False))
        return 0
    if args.steps_command == "from-openrefine":
        from .steps import as_text
        from .steps.openrefine import from_openrefine

        steps = service.steps.read(from_openrefine(_read(args.history_path)))
        print(as_text(steps), end="")
        return 0
    return _check(args, service, actor)


def _read(path: str) -> bytes:
    file = Path(path)
    if not file.is_file():
        raise InvalidInput(f"{path} is not a file")
    return file.read_bytes()


def _check(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    steps = service.steps.read(_read(args.steps_path), values=not args.path)
    shown = len(steps.steps)
    if not args.path:
        print(f"The list reads: {shown} step{'s' if shown != 1 else ''}; give the file to check its columns too.")
        return 0
    table = first_rows(args.path, {"delimiter": args.delimiter, "encoding": args.encoding, "sheet": args.sheet,
                                   "header_row": args.header_row})  # fmt: skip
    seen = service.steps.preview(actor, steps, table)
    for step in steps.steps:
        problem = seen.problems.get(step.number)
        if step.off:
            line = "off"
        elif problem:
            line = problem.removeprefix(step.label + ": ")
        else:
            line = _effect(seen.counts[step.number], step.number in seen.whole_file, seen.rows)
        print(f"{'✗' if problem else ' '} {step.label}: {line}")
    for where in (0, -1):
        if where in seen.problems:
            print(f"✗ {seen.problems[where]}")
    if seen.problems:
        print(
            f"{len(seen.problems)} problem{'s' if len(seen.problems) != 1 else ''}: nothing was run.", file=sys.stderr
        )
        return EXIT_PROBLEMS
    print(f"Columns after the list: {', '.join(seen.table.column_names)}")
    return 0


def _effect(count: Any, whole: bool, rows: int) -> str:
    parts = [f"{count.rows_in:,} row{'s' if count.rows_in != 1 else ''} in, {count.rows_out:,} out"]
    if count.cells_changed:
        parts.append(f"{count.cells_changed:,} cell{'s' if count.cells_changed != 1 else ''} changed")
    return ", ".join(parts) + (f" (in these {rows:,} rows; the task counts the whole file)" if whole else "")


def first_rows(file: str, read_as: dict[str, Any]) -> pa.Table:
    """The first rows of ``file``, read as the worker reads it with ``read_as`` (an input format's fields:
    a workbook's ``sheet`` and ``header_row``, a CSV's ``delimiter`` and ``encoding``; detected unless given)."""
    path = Path(file)
    if not path.is_file():
        raise InvalidInput(f"{path} is not a file")
    with path.open("rb") as f:
        if detect_kind(f.read(8)) == XLSX:
            from .csvio.sheetreader import WorkbookReader

            f.seek(0)
            with WorkbookReader(f, read_as.get("sheet"), read_as.get("header_row")) as reader:
                return next((t for t, _ in reader.tables() if t.num_rows), reader.empty_table())
        f.seek(0)
        head = f.read(INSPECT_BYTES)
        whole = not f.read(1)
    given = {"delimiter": read_as.get("delimiter") or "detect", "encoding": read_as.get("encoding") or "detect"}
    settled: InputFormat = resolve(parse_input_format(given, allow_detect=True), head, whole=whole)
    start = read_start(head, whole=whole, rows=True, input_format=settled)
    if start is None:
        raise InvalidInput(f"{path}: its header is longer than {INSPECT_BYTES:,} bytes")
    return start[1]
