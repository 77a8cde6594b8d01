"""The comparison's entry points: spool both sides, check the keys, join, count, write the highlighter."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TextIO

from . import diff, highlighter
from . import keys as keycheck
from .sides import Side, connect, load, numeric_both
from .summary import Summary

if TYPE_CHECKING:
    import pyarrow as pa

#: DuckDB's memory, in MB, unless told: the worker's most for its whole-file steps (s3task.steps.wholefile).
MEMORY_MB = 128


@contextlib.contextmanager
def _loaded(
    old: Iterable[pa.Table], new: Iterable[pa.Table], memory_mb: int, scratch: str | None, keys: list[str]
) -> Iterator[tuple[Any, Side, Side, str]]:
    """A DuckDB connection reading both sides (``o`` and ``n``, spooled into a folder of their own in
    ``scratch``), spilling into ``scratch`` (or a folder of its own, removed after), and that folder; closed
    on leaving."""
    with contextlib.ExitStack() as stack:
        if scratch is None:
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="s3task-compare-"))
        spool = tempfile.mkdtemp(prefix="sides-", dir=scratch)
        stack.callback(shutil.rmtree, spool, ignore_errors=True)
        con = connect(memory_mb, scratch)
        stack.callback(con.close)
        old_side = load(con, "o", "the old result", old, spool, keys)
        new_side = load(con, "n", "the new result", new, spool, keys)
        yield con, old_side, new_side, spool


def compare(
    old: Iterable[pa.Table],
    new: Iterable[pa.Table],
    keys: list[str],
    *,
    out: TextIO | None = None,
    memory_mb: int = MEMORY_MB,
    scratch: str | None = None,
) -> Summary:
    """Compare ``old`` with ``new`` (streams of Arrow tables of text) by the columns ``keys``.

    Writes the highlighter CSV to ``out`` (a text file opened with ``newline=""``) when given; returns the
    :class:`Summary`. Raises :class:`~s3task.errors.InvalidInput` for a key missing on a side or keys that
    repeat (see the package's pinned meanings). DuckDB uses at most ``memory_mb`` MB and spills into
    ``scratch`` (default: a temporary folder of its own), where both sides are spooled too."""
    import pyarrow as pa

    keys = list(keys)
    with _loaded(old, new, memory_mb, scratch, keys) as (con, o, n, spool):
        keycheck.check_keys(con, o, n, keys)
        columns = diff.common_columns(o, n, keys)
        cols = highlighter.layout(o, n)
        shown = [c for c, _m in cols] if out is not None else []
        batches = diff.changes(con, o, n, keys, columns, shown, memory_mb, spool)
        writer = highlighter.Writer(out, cols, columns) if out is not None else None
        summary = Summary(keys=keys)
        pool = pa.default_memory_pool()
        for batch in batches:
            diff.tally(summary, batch, columns)
            if writer is not None:
                writer.write(batch)
            pool.release_unused()  # the batch's cells and text go back to the system
        diff.finish(summary, o, columns)
        summary.added_columns = [c for c in n.names if not o.has(c)]
        summary.removed_columns = [c for c in o.names if not n.has(c)]
        summary.numeric_columns = [c for c in columns if numeric_both(o, n, c)]
        summary.highlighted = writer.written if writer is not None else 0
        return summary


def suggest_keys(
    old: Iterable[pa.Table], new: Iterable[pa.Table], *, memory_mb: int = MEMORY_MB, scratch: str | None = None
) -> list[str]:
    """The columns both sides have whose values are filled and unique on each side: candidate keys."""
    with _loaded(old, new, memory_mb, scratch, []) as (con, o, n, _spool):
        return keycheck.suggest_keys(con, o, n)
