"""``compare``: "Compare with another result" — what changed from one completed task's result to another's.

Its parameters are the two tasks (``old_task``, the other result; ``new_task``, the newer one) and the key
columns. Its input is not a file anyone uploads: it is a manifest of a few hundred bytes, made with the task,
that pins both results' ETags, so nothing of either result is copied, and every path that deletes or rewrites
a task's input (a cancel before the submit, ``repair``, an upload) touches only those bytes, never another
task's result. Its rows::

    side,task_id,etag,size
    old,01JD6Z…,"9b2c…",104857600
    new,01JE2A…,"41aa…",104861212

The worker reads each named task's record for its output's key and opens that output only while its ETag is
the pinned one (:mod:`s3task.compare.stored`); the task ids must be the task's own parameters, which were
checked for access when it was made. Both results go block by block to the attempt's scratch folder, where
DuckDB reads them (within the attempt's memory cap, spilling there: :func:`s3task.steps.wholefile.memory_for`),
and daff's highlighter CSV is the output; the summary (counts, and per column) goes beside it as a small JSON object
(:meth:`s3task.layout.Layout.summary_key_of`), written before the output is complete.

Progress: the bytes of both results read, as a share of this task's input size (the manifest's), so the
record's "bytes processed" reaches its input size when both are loaded; rows read counts both sides' rows.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput, InvalidTaskId
from ..ids import validate_task_id
from ..progress import Progress
from . import Param, TaskType, register

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class Pin:
    """One result a comparison reads: its task, and its output's ETag and size when the comparison was made."""

    task_id: str
    etag: str
    size: int


HEADER = ["side", "task_id", "etag", "size"]
#: A manifest is two short rows; anything longer is not one.
MAX_MANIFEST_BYTES = 4096
SIDES = ("old", "new")


def manifest(old: Pin, new: Pin) -> bytes:
    """The comparison task's input: the two results it reads, pinned."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for side, pin in zip(SIDES, (old, new), strict=True):
        writer.writerow([side, pin.task_id, pin.etag, pin.size])
    return out.getvalue().encode()


def check_manifest_header(names: list[str]) -> None:
    """Refuse an input that is not a comparison's manifest (one uploaded by hand to a ``compare`` task)."""
    if list(names) != HEADER:
        raise InvalidInput(
            "a comparison's input is made when the comparison is (s3task compare --on-worker, the task page's "
            "'Compare with another result', or POST /api/tasks with type compare); it cannot be uploaded"
        )


def read_manifest(data: bytes, old_task: str, new_task: str) -> tuple[Pin, Pin]:
    """The two pins of a manifest, which must name ``old_task`` and ``new_task`` (the task's parameters)."""
    if len(data) > MAX_MANIFEST_BYTES:
        raise InvalidInput("the comparison's input is not the manifest it was made with")
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig", errors="replace"), newline="")))
    check_manifest_header(rows[0] if rows else [])
    pins = {row[0]: row for row in rows[1:] if len(row) == len(HEADER)}
    try:
        old, new = (Pin(pins[s][1], pins[s][2], int(pins[s][3])) for s in SIDES)
    except (KeyError, ValueError) as e:
        raise InvalidInput("the comparison's input is not the manifest it was made with") from e
    if (old.task_id, new.task_id) != (old_task, new_task):
        raise InvalidInput("the comparison's input names other tasks than its parameters")
    return old, new


@dataclass
class CompareContext:
    """What a comparison needs from where it runs (the worker's child: s3task.worker.child)."""

    #: The memory DuckDB may use, in MB; it spills to ``scratch`` beyond it.
    memory_mb: int
    scratch: str | None
    #: The rows of a pinned result, ``moved(n)`` called as its bytes are read (s3task.compare.stored).
    open_result: Callable[[Pin, Callable[[int], None], str], Iterator[pa.Table]]
    #: Keeps the summary beside the output (before the output is complete).
    keep_summary: Callable[[dict[str, Any]], None]
    #: The engine, :func:`s3task.compare.compare` (handed in: the engine reads the Parquet copy's typing rule
    #: from s3task.exports, which reads the task types).
    engine: Callable[..., Any]


def split_keys(keys: Any) -> list[str]:
    """Key columns given as a list, or as text with commas."""
    given = keys if isinstance(keys, list | tuple) else str(keys or "").split(",")
    return [str(k).strip() for k in given if str(k).strip()]


@register
class Compare(TaskType):
    name = "compare"
    title = "Compare with another result"
    description = (
        "What changed from another task's result to this one, row by row, by key columns: rows added, removed, "
        "changed and unchanged, and each changed cell old -> new. The result is daff's highlighter table."
    )
    params = (
        Param("old_task", required=True, help="The other (older) task, whose result is compared."),
        Param("new_task", required=True, help="The newer task, whose result is compared with it."),
        Param("keys", required=True, help="The key columns, comma-separated: they pair the rows."),
    )
    error_column = None
    output_rows = "summary"
    #: The engine hands this type its input stream and its output stream (s3task.processing).
    reads_itself = True
    #: Not made from a file anyone uploads: the New task page does not offer it.
    made_from_results = True

    def __init__(self, params: Mapping[str, Any]) -> None:
        super().__init__(self.validate(params))
        self.context: CompareContext | None = None

    @classmethod
    def validate(cls, payload: Mapping[str, Any] | None) -> dict[str, Any]:
        given = dict(payload or {})
        given["keys"] = ",".join(split_keys(given.get("keys")))
        if not given["keys"]:
            raise InvalidInput("name at least one key column (parameter 'keys')")
        values = super().validate(given)
        for name in ("old_task", "new_task"):
            try:
                values[name] = validate_task_id(values[name])
            except InvalidTaskId as e:
                raise InvalidInput(f"parameter {name!r}: {e}") from e
        if values["old_task"] == values["new_task"]:
            raise InvalidInput("a result cannot be compared with itself: choose another task")
        return values

    @classmethod
    def references(cls, params: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Both results: checked when the task is made, as its maker (the same rule as a lookup's)."""
        return [("the comparison", params["old_task"]), ("the comparison", params["new_task"])]

    @classmethod
    def check_header(cls, params: Mapping[str, Any], names: list[str]) -> None:
        check_manifest_header(names)

    def run_file(self, source: Any, sink: Any, on_progress: Callable[[Progress], None]) -> Progress:
        """Read the manifest from ``source``, compare the two results it pins, write the highlighter to ``sink``."""
        context = self.context
        if context is None:
            raise InvalidInput("a comparison runs on a worker, which gives it the store to read both results from")
        data = source.read(MAX_MANIFEST_BYTES + 1)
        old, new = read_manifest(data, self.values["old_task"], self.values["new_task"])
        counts, total, read = Progress(), max(old.size + new.size, 1), [0]

        def moved(n: int) -> None:
            read[0] += n
            counts.bytes_processed = min(len(data) - 1, len(data) * read[0] // total)
            on_progress(replace(counts))

        def rows(tables: Iterator[pa.Table]) -> Iterator[pa.Table]:
            for table in tables:
                counts.processed_count += table.num_rows
                yield table

        on_progress(replace(counts))
        summary = context.engine(
            rows(context.open_result(old, moved, "the other result")),
            rows(context.open_result(new, moved, "this result")),
            split_keys(self.values["keys"]),
            out=(out := _Text(sink)),
            memory_mb=context.memory_mb,
            scratch=context.scratch,
        )
        out.flush()
        found = {"old_task": old.task_id, "new_task": new.task_id, **summary.as_dict()}
        context.keep_summary({**found, "highlighted": summary.highlighted, "lines": summary.lines()})
        counts.bytes_processed = len(data)
        counts.row_count = counts.success_count = summary.highlighted
        on_progress(replace(counts))
        return counts


class _Text:
    """Text written to a binary sink as UTF-8, a megabyte at a time (the sink is the caller's to complete)."""

    def __init__(self, sink: Any) -> None:
        self._sink, self._held = sink, bytearray()

    def write(self, text: str) -> int:
        self._held += text.encode("utf-8")
        if len(self._held) >= 1 << 20:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._held:
            self._sink.write(bytes(self._held))
            self._held.clear()
