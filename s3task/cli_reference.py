"""``s3task submit FILE --steps STEPS.json --reference NAME=PATH``: a lookup's reference table made from a file.

Each PATH is submitted first as a task of its own (type ``copy``, named "Reference: managers.csv"), so it is read
as a file given with no format is (its delimiter and encoding found from it, a workbook's first sheet), stored and
access-checked as every result is; the command waits until a worker has copied it (at most ``--reference-wait``
seconds), then every lookup in the list whose ``reference`` is NAME gets that task's id, and the list is submitted
as ever. Without a worker running nothing completes: at the deadline the command stops, naming the reference task,
which a worker will still copy (its id can then be used as the reference, without uploading the file again).

Before any reference task is made, the list's own values (a pattern, a date format) are checked, and the list
runs over the file's first rows as ``steps check`` does, each of these lookups reading its reference file's first
rows: a list or a file that cannot be used (a key column either lacks, a key repeated in those rows) makes
nothing. Once the references are copied, the list runs over the file's first rows again, lookups reading the
whole copies, so what only the rest of a reference shows (a key repeated further down) is said before the file
is sent, not by the worker.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from .cli_steps import first_rows
from .errors import InvalidInput, S3TaskError
from .input_format import parse_input_format
from .record import TaskRecord
from .safetext import visible
from .states import State
from .tasks import REFERENCE_READS, Actor, TaskService

#: How long the command waits for each reference task by default, and how often it looks.
WAIT_SECONDS = 600.0
LOOK_SECONDS = 0.5
_WAITING = (State.CREATED, State.QUEUED, State.RUNNING, State.FAILED)  # a failed attempt is retried by itself


def add_reference_flags(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help='with --steps: the file PATH becomes a task of its own ("Reference: FILE", copied by a worker) '
        "and each lookup whose reference is NAME reads its result",
    )
    s.add_argument(
        "--reference-delimiter",
        metavar="D",
        help="what separates the values in every --reference file (as --delimiter); default: detect from each",
    )
    s.add_argument(
        "--reference-encoding",
        metavar="ENC",
        help="every --reference file's text encoding (as --encoding); default: detect from each",
    )
    s.add_argument(
        "--reference-wait",
        type=float,
        default=WAIT_SECONDS,
        metavar="SECONDS",
        help=f"how long to wait for a worker to copy each --reference file (default {WAIT_SECONDS:.0f})",
    )


def with_references(
    args: argparse.Namespace, service: TaskService, actor: Actor, steps: Any, read_as: dict[str, Any]
) -> Any:
    """``steps`` (the list's JSON) with each ``--reference`` NAME replaced by the id of the task made of its file;
    ``read_as``: how the file is read (the flags, a recipe's input format)."""
    if not args.reference:
        return steps
    if not args.steps:
        raise InvalidInput("--reference names a lookup's reference table in a --steps list; give --steps too")
    lookups = [s for s in _listed(steps) if isinstance(s, dict) and s.get("step") == "lookup"]
    wanted: dict[str, Path] = {}
    for item in args.reference:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path:
            raise InvalidInput(f"--reference {item!r} should look like NAME=PATH")
        if not any(s.get("reference") == name.strip() for s in lookups):
            raise InvalidInput(f"--reference {name.strip()!r}: no lookup in {args.steps} has that reference")
        if not Path(path).is_file():
            raise InvalidInput(f"--reference {name.strip()!r}: {path} is not a file")
        wanted[name.strip()] = Path(path)
    service.steps.read(steps)  # the list's own values: refused before any reference task is made
    for s in lookups:  # and a lookup's reference that is a task already: one it cannot read
        if s.get("reference") not in wanted:
            service.steps.check_reference(actor, str(s.get("reference") or ""), who="The lookup")
    try:
        first = first_rows(args.path, read_as)  # and the file's first rows: one that cannot be read makes nothing
    except InvalidInput as e:
        raise InvalidInput(f"{visible(args.path)}: {e.message}") from e
    reads = _reads(args)
    _check_first_rows(service, actor, steps, first, args.path, wanted, reads)
    made = {name: _reference(service, actor, path, args.reference_wait, reads) for name, path in wanted.items()}
    for s in lookups:
        if s.get("reference") in made:
            s["reference"] = made[s["reference"]]
    kept = ", ".join(f"{name}={task_id}" for name, task_id in made.items())
    after = f". Nothing was submitted; the reference tasks are kept ({kept}): give their ids as the references"
    try:
        seen = service.steps.preview(actor, service.steps.read(steps), first)
    except S3TaskError as e:  # a reference the preview cannot read (its rows over the cap, say)
        raise InvalidInput(f"{_sentence(e)}{after}") from e
    if seen.problems:
        said = "; ".join(seen.problems[n] for n in sorted(seen.problems))
        raise InvalidInput(f"the steps cannot run on {visible(args.path)}'s first rows: {said}{after}")
    return steps


def _reads(args: argparse.Namespace) -> dict[str, Any]:
    """How every ``--reference`` file is read: :data:`REFERENCE_READS`, with what the flags say instead."""
    reads = dict(REFERENCE_READS)
    for flag, key, value in (
        ("--reference-delimiter", "delimiter", args.reference_delimiter),
        ("--reference-encoding", "encoding", args.reference_encoding),
    ):
        if value is not None:
            try:
                parse_input_format({**REFERENCE_READS, key: value}, allow_detect=True)
            except InvalidInput as e:
                raise InvalidInput(f"{flag}: {e.message}") from e
            reads[key] = value
    return reads


def _check_first_rows(
    service: TaskService,
    actor: Actor,
    steps: Any,
    first: Any,
    path: str,
    wanted: dict[str, Path],
    reads: dict[str, Any],
) -> None:
    """The list over the file's first rows, each lookup of a ``--reference`` reading its file's first rows as its
    copy will read it (``reads``): a column either lacks, or a key repeated there, is said before anything is
    made."""
    files = {}
    for name, reference in wanted.items():
        try:
            files[name] = first_rows(str(reference), reads)
        except InvalidInput as e:
            raise InvalidInput(f"--reference {name!r}: {e.message}") from e
    seen = service.steps.preview(actor, service.steps.read(steps), first, files)
    if seen.problems:
        said = "; ".join(seen.problems[n] for n in sorted(seen.problems))
        raise InvalidInput(
            f"the steps cannot run on {visible(path)}'s first rows and the reference files' first rows: {said}. "
            "Nothing was submitted"
        )


def _sentence(e: S3TaskError) -> str:
    return _sentence_of(str(e))


def _sentence_of(text: str) -> str:
    return text.strip().rstrip(".")


def _listed(steps: Any) -> list[Any]:
    if isinstance(steps, dict):
        steps = steps.get("steps")
    return steps if isinstance(steps, list) else []


def _reference(service: TaskService, actor: Actor, path: Path, wait: float, reads: dict[str, Any]) -> str:
    """The id of a completed task copied from ``path``, once a worker has made it (InvalidInput if it fails or
    the wait runs out, naming the task)."""
    with path.open("rb") as f:
        record = service.steps.submit_reference(actor, path.name, f, reads)
    shown = visible(path.name)
    print(f"reference {shown}: task {record.task_id}, waiting for a worker to copy it", file=sys.stderr)
    deadline = time.monotonic() + wait
    while record.state in _WAITING:
        if time.monotonic() > deadline:
            raise InvalidInput(
                f"task {record.task_id} ({visible(record.task_name)}) was not copied within {wait:g} s: is a worker "
                "running? It stays queued; once it has completed, use its id as the lookup's reference"
            )
        time.sleep(LOOK_SECONDS)
        record = service.get(actor, record.task_id, fresh=True)
    return _completed(record, shown)


def _completed(record: TaskRecord, shown: str) -> str:
    if record.state != State.COMPLETED:
        why = record.last_error or f"it is {record.state.value}"
        raise InvalidInput(
            f"the reference file {shown} was not copied (task {record.task_id}): {_sentence_of(why)}. "
            "--reference-encoding and --reference-delimiter say how a reference file is read"
        )
    print(f"reference {shown}: task {record.task_id}, {record.row_count or 0:,} rows", file=sys.stderr)
    return record.task_id
