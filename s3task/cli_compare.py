"""``s3task compare TASK_A TASK_B --key COL[,COL] [--out FILE] [--json] [--on-worker]``: what changed from one
result to another.

With ``--on-worker`` the comparison is a task of its own (the type ``compare``), queued for a worker: the command
prints its id and returns (``s3task show ID``, ``download ID``). Without it, as follows, in this process:
Both results are read with :mod:`s3task.results` (the caller's own store credentials; the task's access rules
apply, as for ``download``) and compared by :mod:`s3task.compare` in this process, DuckDB spilling into a
temporary folder. The summary is printed in plain words (``--json``: as JSON); ``--out`` writes daff's
highlighter CSV. Without ``--key`` nothing is guessed: the command refuses and names the columns whose values
are unique in both results.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from .compare import compare, suggest_keys
from .compare.engine import MEMORY_MB
from .compare.keys import refuse_without_keys
from .errors import InvalidInput
from .results import Result
from .safetext import visible
from .tasks import Actor, TaskService


def add_compare_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser("compare", help="what changed from one completed task's result to another's, by key columns")
    s.add_argument("old_task", metavar="TASK_A", help="the older result")
    s.add_argument("new_task", metavar="TASK_B", help="the newer result")
    s.add_argument("--key", help="the key column(s), comma-separated; without it, the columns that could be keys")
    s.add_argument("--out", help="write daff's highlighter CSV of the rows added, removed and changed here")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.add_argument(
        "--on-worker",
        action="store_true",
        help="run it on a worker as a task of its own (progress, cancel, survives a crash): print its id and return",
    )
    s.add_argument("--name", help="with --on-worker: the comparison task's name")
    s.add_argument("--memory-mb", type=int, default=MEMORY_MB, help=argparse.SUPPRESS)
    s.add_argument("--as", dest="sub_user", help=argparse.SUPPRESS)


def _result(service: TaskService, actor: Actor, task_id: str) -> Result:
    """The completed task's result, as :func:`s3task.results.open` gives it (refused now if it is not one)."""
    record = service.get(actor, task_id)
    service.ensure_output(actor, task_id, "csv")
    return Result(service, actor, record)


def cmd_compare(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    if args.on_worker:
        if not args.key:
            raise InvalidInput(
                "name the key column(s) with --key (s3task compare TASK_A TASK_B, without it, suggests them)"
            )
        if args.out:
            raise InvalidInput("--out is for a comparison run here; a task's result is fetched with s3task download ID")
        record = service.compares.create(actor, args.old_task, args.new_task, args.key, name=args.name)
        if args.json:
            print(json.dumps({"task_id": record.task_id, "status": record.status.value}))
        else:
            print(record.task_id)
        return 0
    old, new = _result(service, actor, args.old_task), _result(service, actor, args.new_task)
    with tempfile.TemporaryDirectory(prefix="s3task-compare-") as scratch:
        if not args.key:
            raise refuse_without_keys(
                suggest_keys(old.batches(), new.batches(), memory_mb=args.memory_mb, scratch=scratch)
            )
        keys = [k.strip() for k in args.key.split(",") if k.strip()]
        if args.out:
            target = Path(args.out)
            part = target.with_name(target.name + ".part")
            try:
                with part.open("w", encoding="utf-8", newline="") as out:
                    summary = compare(
                        old.batches(), new.batches(), keys, out=out, memory_mb=args.memory_mb, scratch=scratch
                    )
            except BaseException:
                part.unlink(missing_ok=True)  # a refusal (repeated keys) or a stop leaves no half-written file
                raise
            part.replace(target)
        else:
            summary = compare(old.batches(), new.batches(), keys, memory_mb=args.memory_mb, scratch=scratch)
    if args.json:
        found = {"old_task": old.task_id, "new_task": new.task_id, **summary.as_dict()}
        print(json.dumps(found, indent=1, ensure_ascii=False))
    else:
        print(f"{old.task_id} -> {new.task_id}")
        print("\n".join(visible(line) for line in summary.lines()))  # column names: no terminal controls
        if args.out:
            print(f"highlighter ({summary.highlighted:,} rows): {args.out}")
    return 0
