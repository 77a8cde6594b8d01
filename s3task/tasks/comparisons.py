"""Comparisons at the door (``service.compares``): what changed from one completed result to another, run on
a worker as a task of its own (the task type ``compare``: s3task.handlers.compare), as a user asks for one,
finds the tasks worth comparing with, and reads the answer.

Made here, a comparison is refused before any task exists when it can be known to fail: a task that is not
there, not completed or not the user's to download (the rule of a lookup: s3task.tasks.references), the same
task twice, a key column missing in either result (their header rows are read; nothing more). Repeated keys
need every row: the worker finds them and fails the task for good in the engine's words. The task's input is
a manifest that pins both results' ETags (s3task.handlers.compare), so no result is copied.
"""

from __future__ import annotations

import builtins
import contextlib
import csv
import io
import json
import tempfile
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput, InvalidTaskId, NotFound, S3TaskError, TaskNotFound
from ..handlers.compare import Compare, Pin, manifest, split_keys
from ..layout import Layout
from ..states import Status
from . import access
from .transitions import fit_name

if TYPE_CHECKING:
    from ..record import TaskRecord
    from .access import Actor
    from .inputs import Inputs
    from .outputs import Outputs
    from .transitions import Transitions

#: Keys are suggested (the columns unique in both) only when both results are at most this many rows.
SUGGEST_ROWS = 200_000
#: Tasks whose columns are read to find candidates, at most.
LOOKED_AT = 20


class Comparisons:
    """Comparisons as a user asks for them (see the module)."""

    def __init__(self, transitions: Transitions, inputs: Inputs, outputs: Outputs) -> None:
        self._transitions, self._inputs, self._outputs = transitions, inputs, outputs

    def create(self, actor: Actor, old_task: str, new_task: str, keys: Any, *, name: str | None = None) -> TaskRecord:
        """A queued comparison of ``old_task``'s result (the other) with ``new_task``'s (the newer) by ``keys``
        (a list, or text with commas). InvalidInput, with no task made, for what can be known now."""
        params = Compare.validate({"old_task": old_task, "new_task": new_task, "keys": split_keys(keys)})
        old = self._result(actor, params["old_task"])
        new = self._result(actor, params["new_task"])
        for record, label in ((old, "the other result"), (new, "this result")):
            try:
                names = self._outputs.output_columns(actor, record.task_id)
            except NotFound as e:
                raise InvalidInput(f"task {record.task_id}'s result file is no longer in the store") from e
            for key in split_keys(params["keys"]):
                if key not in names:
                    shown = ", ".join(names[:20]) or "no columns"
                    raise InvalidInput(
                        f"the key column {key!r} is not in {label} (task {record.task_id}; it has: {shown})"
                    )
        pins = [self._pin(record) for record in (old, new)]
        title = fit_name(name or f"Compare {old.task_name} with {new.task_name}")
        return self._inputs.submit_file(actor, title, Compare.name, params, manifest(*pins))

    def _result(self, actor: Actor, task_id: str) -> TaskRecord:
        try:
            record = self._transitions.get(actor, task_id)
        except (InvalidTaskId, TaskNotFound) as e:
            raise InvalidInput(f"there is no task {task_id!r} to compare") from e
        if not access.may_act(actor, record):
            raise InvalidInput(
                f"task {task_id} belongs to {record.created_by}: you may compare only results you may download"
            )
        if record.status != Status.COMPLETED or not record.output_object_path:
            raise InvalidInput(f"task {task_id} has no result to compare (it is {record.status.value})")
        return record

    def _pin(self, record: TaskRecord) -> Pin:
        try:
            meta = self._transitions.store.head(record.output_object_path or "")
        except NotFound as e:
            raise InvalidInput(f"task {record.task_id}'s result file is no longer in the store") from e
        return Pin(record.task_id, meta.etag, meta.size)

    def summary(self, actor: Actor, task_id: str) -> dict[str, Any] | None:
        """A completed comparison's summary (the engine's counts, per column, in words: ``lines``), for whoever
        may download its result; None while it has none."""
        record = self._transitions.get(actor, task_id)
        access.require(actor, record, "read the comparison of")
        if record.task_type != Compare.name or record.status != Status.COMPLETED or not record.output_object_path:
            return None
        try:
            data = self._transitions.store.get(Layout.summary_key_of(record.output_object_path)).body
        except NotFound:
            return None
        found = json.loads(data)
        return found if isinstance(found, dict) else None

    def preview(self, actor: Actor, task_id: str, rows: int = 50) -> builtins.list[builtins.list[str]]:
        """The first ``rows`` rows of a comparison's highlighter, its ``!`` and ``@@`` rows included, as written."""
        out: list[list[str]] = []
        with self._outputs.open_output(actor, task_id) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
            for row in csv.reader(text):
                out.append(row)
                if len(out) >= rows + 2:
                    break
            text.detach()
        return out

    def candidates(self, actor: Actor, task_id: str) -> builtins.list[TaskRecord]:
        """The tasks worth comparing ``task_id``'s result with, the likeliest first: the task it corrects (or
        its corrections), then the earlier runs of the recipe it was made from (last month's file; newest
        first), then this user's recent completed tasks with the same columns, then those sharing one; results
        made after this one come after every earlier one, in the same order (the box asks for the older one).
        Never a comparison, never itself."""
        record = self._transitions.get(actor, task_id)
        mine = self._outputs.output_columns(actor, task_id)
        linked = [t for t in [record.corrects, *record.corrections] if t]
        ranked: list[tuple[int, int, TaskRecord]] = []
        page = self._transitions.list(actor, limit=50, mine=True)
        looked = 0
        for n, other in enumerate(page.tasks):
            if other.task_id == task_id or other.status != Status.COMPLETED or other.task_type == Compare.name:
                continue
            if other.task_id in linked:
                ranked.append((0, n, other))
                continue
            later = 10 if other.created_at > record.created_at else 0  # after every earlier one: "the older one"
            if record.recipe_id and other.recipe_id == record.recipe_id:
                ranked.append((1 + later, n, other))  # a run of its recipe: its columns are the recipe's, not read
                continue
            if looked >= LOOKED_AT or not access.may_act(actor, other):
                continue
            looked += 1
            with contextlib.suppress(S3TaskError):
                names = self._outputs.output_columns(actor, other.task_id)
                if set(names) == set(mine):
                    ranked.append((2 + later, n, other))
                elif set(names) & set(mine):
                    ranked.append((3 + later, n, other))
        return [r for _rank, _n, r in sorted(ranked, key=lambda x: (x[0], x[1]))]

    def suggest_keys(self, actor: Actor, old_task: str, new_task: str) -> builtins.list[str]:
        """The columns filled and unique in both results, when both are small enough to look at every row
        cheaply (at most :data:`SUGGEST_ROWS` rows each); else [] (the person chooses)."""
        from ..compare import suggest_keys
        from ..exports.source import exact_tables, peek_bom

        records = [self._result(actor, t) for t in (old_task, new_task)]
        if any((r.row_count or 0) > SUGGEST_ROWS for r in records):
            return []
        with contextlib.ExitStack() as stack:
            sides = []
            for r in records:
                raw = stack.enter_context(self._outputs.open_output(actor, r.task_id))
                legacy, stream = peek_bom(raw)
                sides.append(exact_tables(stream, legacy)[1])
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="s3task-keys-"))
            return suggest_keys(sides[0], sides[1], memory_mb=64, scratch=scratch)
