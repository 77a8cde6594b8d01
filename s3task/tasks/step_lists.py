"""Step lists at the door: checking one, and previewing it on a file's first rows, as a user.

A lookup reads another task's result; here it may only read one its user may download (theirs, or any
task for an operator), the same rule the task's creation checks (:mod:`s3task.tasks.references`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO

from .access import Actor
from .references import check_lookup, check_reference
from .transitions import fit_name

if TYPE_CHECKING:
    import pyarrow as pa

    from ..record import TaskRecord
    from ..steps import StepList
    from ..steps.preview import Preview
    from .inputs import Inputs
    from .transitions import Transitions

#: How a reference file is read when it becomes a task of its own: as a file submitted with no format given
#: (its delimiter and encoding found from it; a workbook, the sheet it opens on in Excel).
REFERENCE_READS: Mapping[str, str] = {"delimiter": "detect", "encoding": "detect"}


def reference_name(file_name: str) -> str:
    """The name of the task a reference file becomes: "Reference: managers.csv" (a name too long for a task's
    cut to fit, ending "…": the person chose a file, not a task name)."""
    return fit_name(f"Reference: {file_name}")


class StepLists:
    """What a user does with a step list before it runs (the builder, ``s3task steps check``)."""

    def __init__(self, transitions: Transitions, inputs: Inputs) -> None:
        self._transitions = transitions
        self._inputs = inputs

    def submit_reference(
        self,
        actor: Actor,
        file_name: str,
        stream: BinaryIO | bytes | Iterable[bytes],
        read_as: Mapping[str, Any] | None = None,
    ) -> TaskRecord:
        """A file to look up from, made a task of its own for a worker to copy (type ``copy``, named by
        :func:`reference_name`), read as :data:`REFERENCE_READS` says unless ``read_as`` (an input format's
        settings: a delimiter, an encoding) says otherwise; on failure no task is left behind."""
        asked = {**REFERENCE_READS, **(read_as or {})}
        return self._inputs.submit_file(actor, reference_name(file_name), "copy", None, stream, asked)

    def parameters(self, record: TaskRecord) -> dict[str, Any]:
        """Every parameter of a task the caller holds (got through ``service.get`` or ``list``), its step list
        read from beside its record (s3task.task_steps); InvalidInput if that list is gone or changed."""
        return self._transitions.params_of(record)

    def read(self, raw: Any, *, values: bool = True) -> StepList:
        """A step list from JSON (text or parsed): StepError if it is not one. ``values``: each step's own
        values checked too (a date format, a pattern); without, the preview reports them step by step."""
        from ..steps import parse
        from ..steps.engine import check_values

        steps = parse(raw)
        if values:
            check_values(steps)
        return steps

    def preview(
        self, actor: Actor, steps: StepList, table: pa.Table, files: Mapping[str, pa.Table] | None = None
    ) -> Preview:
        """``steps`` over ``table``'s first rows (:mod:`s3task.steps.preview`), lookups reading as ``actor``.

        ``files``: a lookup whose reference is one of its names reads that table instead (a file not yet made
        a task of its own: ``submit --reference`` checks the list against its first rows before sending it)."""
        from ..steps.preview import preview
        from ..steps.wholefile import Context

        given = files or {}

        def open_reference(task_id: str) -> Iterator[pa.Table]:
            return iter([given[task_id]]) if task_id in given else self._reference(actor, task_id)

        return preview(steps, table, Context(memory_mb=128, open_reference=open_reference))

    def check_reference(self, actor: Actor, task_id: str, who: str = "The lookup") -> None:
        """InvalidInput (AccessDenied: someone else's) in words, unless ``actor`` may look up from task
        ``task_id``: it exists, it is theirs (or they operate), it completed, its result is not too long."""
        check_lookup(actor, who, task_id, lambda t: self._transitions.get(actor, t, fresh=True))

    def _reference(self, actor: Actor, task_id: str) -> Iterator[pa.Table]:
        from ..steps.references import reference_rows

        check_reference(actor, "The lookup", task_id, lambda t: self._transitions.get(actor, t))
        return reference_rows(self._transitions.store, self._transitions.layout, task_id)
