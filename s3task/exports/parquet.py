"""The Parquet copy of an output, for analysts: each column typed as an analyst expects, usually read once.

The CSV stays text; this copy gives each column one type, chosen over *every* filled cell of the
column in the whole output, streamed block by block. The types, first that fits:

``bool``
    every filled cell is ``true`` or ``false`` (any case);
``int64``
    every filled cell is a whole number that fits in 64 bits, written without leading zeros
    (``-12``, ``0``, ``42``; a code such as ``007`` keeps the column text);
``float64``
    every filled cell is a number (``3.5``, ``-1e3``; no leading zeros; no ``nan`` or ``inf``, and no more
    than 15 digits before the point nor an exponent of more than two digits, so none is out of range);
``date32``
    every filled cell is a date ``YYYY-MM-DD``;
``timestamp[us]``
    every filled cell is an ISO date and time without a time zone (``2024-01-01 09:30:00``,
    ``2024-01-01T09:30``);
``string``
    anything else, and a column with no filled cell. The values are the exact ones (no ``'``).

In a typed column an empty cell is null; in a text column it stays an empty string.

The copy is written with the types the output's first block allows, each later block checked against them as
it is written (:func:`write_parquet`), to a temporary file: when the last block leaves them as they were, as it
usually does, that is the copy, made in one pass over the output (read by Arrow's streaming reader and written on
threads of their own, :mod:`.parquet_rows`). A block that changes a type (a column of numbers with a code in its
last rows) sends the rest to the first pass alone, and the copy is written again in a second.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from typing import TYPE_CHECKING, Any

from .parquet_rows import NotForArrow, ahead, arrow_tables, written_behind
from .source import exact_tables, peek_bom
from .write_only import WriteOnly

if TYPE_CHECKING:
    import pyarrow as pa

#: A number without leading zeros (``0``, ``0.5`` and ``-0.5`` are fine, ``007`` is a code).
_NUMBER = r"^[-+]?(0|[1-9]\d{0,14})(\.\d+)?([eE][-+]?\d{1,2})?$|^[-+]?\.\d+([eE][-+]?\d{1,2})?$"
_INTEGER = r"^[-+]?(0|[1-9]\d{0,17})$"
_BOOL = r"(?i)^(true|false)$"
#: A year from 0001 (RE2 has no look-ahead): year 0 is no date Python or pandas reads back.
_YEAR = r"(000[1-9]|00[1-9]\d|0[1-9]\d{2}|[1-9]\d{3})"
_DATE = rf"^{_YEAR}-\d{{2}}-\d{{2}}$"
_TIMESTAMP = rf"^{_YEAR}-\d{{2}}-\d{{2}}[T ]\d{{2}}:\d{{2}}(:\d{{2}}(\.\d{{1,6}})?)?$"
#: Candidate types, in the order they are preferred, with the pattern every filled cell must match.
_CANDIDATES = ("bool", "int64", "float64", "date32", "timestamp")
_PATTERNS = {"bool": _BOOL, "int64": _INTEGER, "float64": _NUMBER, "date32": _DATE, "timestamp": _TIMESTAMP}


def _arrow_type(name: str) -> pa.DataType:
    import pyarrow as pa

    return {
        "bool": pa.bool_(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "date32": pa.date32(),
        "timestamp": pa.timestamp("us"),
        "string": pa.string(),
    }[name]


def _convert(col: Any, kind: str) -> Any:
    """``col`` (text) as ``kind``: empty cells null; raises ArrowInvalid when a value does not fit."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind == "string":
        return pc.cast(col, pa.string())
    empty = pc.equal(pc.binary_length(col), 0)
    if kind == "bool":
        return pc.if_else(empty, None, pc.equal(pc.utf8_lower(col), "true"))
    text = pc.if_else(empty, None, col)
    if kind == "timestamp":
        text = pc.replace_substring(text, "T", " ")
    if kind == "date32":
        return pc.cast(pc.cast(text, pa.timestamp("s")), pa.date32())  # the date's cast checks the calendar
    return pc.cast(text, _arrow_type(kind))


def _fitting(col: Any, kind: str, cells: Any = None) -> Any | None:
    """``col`` converted to ``kind`` if every filled cell of it fits ``kind`` (its pattern, then its type), else
    None; ``cells``: its different values, if known (each then checked against the pattern once)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = col if cells is None else cells
    filled = pc.greater(pc.binary_length(cells), 0)
    if pc.all(pc.or_(pc.invert(filled), pc.match_substring_regex(cells, _PATTERNS[kind]))).as_py() is False:
        return None
    try:
        return _convert(col, kind)  # a pattern can pass what a type refuses: 2024-02-30, a 19-digit number
    except (pa.ArrowInvalid, OverflowError):
        return None


def _still_fitting(col: Any, kinds: list[str], repeats: bool = False) -> tuple[list[str], Any | None]:
    """Those of ``kinds`` that every filled cell of ``col`` (which has one) fits, and ``col`` converted to the
    first of them (None if none fits); ``repeats``: its values repeat (each different one is checked once).

    Only the first that fits is checked cell by cell; the ones after it follow from it, as the patterns allow
    no cell two of them: a filled cell that is ``true``, a whole number, a number or a date is none of the types
    after its own, but that a whole number of at most 15 digits is a number too (a longer one is checked)."""
    import pyarrow.compute as pc

    cells = pc.unique(col) if repeats else None
    for at, kind in enumerate(kinds):
        converted = _fitting(col, kind, cells)
        if converted is None:
            continue
        after = []
        if kind == "int64" and "float64" in kinds[at + 1 :]:
            short = (pc.max(pc.binary_length(col)).as_py() or 0) <= 15  # a sign and 14 digits at most, or 15 digits
            if short or _fitting(col, "float64", cells) is not None:
                after.append("float64")
        return [kind, *after], converted
    return [], None


class Types:
    """Each column's candidate types over the blocks seen so far: the first pass, a block at a time."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.kinds = [list(_CANDIDATES) for _ in names]
        self.filled = [False] * len(names)
        #: Whether each column's values repeat (at most a quarter of them different), from its first filled block.
        self.repeats: list[bool | None] = [None] * len(names)

    def see(self, table: pa.Table) -> list[Any | None]:
        """Narrow each column's candidates by ``table``'s cells; returns each column converted to its first
        candidate left where that was checked (a column with a filled cell and a candidate), else None."""
        converted: list[Any | None] = []
        for i, col in enumerate(table.columns):
            done = None
            if _has_filled(col):  # a block with no filled cell fits them all
                self.filled[i] = True
                if self.kinds[i]:
                    if self.repeats[i] is None:
                        self.repeats[i] = _repeating(col)
                    self.kinds[i], done = _still_fitting(col, self.kinds[i], bool(self.repeats[i]))
            converted.append(done)
        return converted

    def chosen(self) -> list[str]:
        """Each column's type over the blocks seen: its first candidate left, ``string`` if none or never filled."""
        return [
            kinds[0] if kinds and filled else "string" for kinds, filled in zip(self.kinds, self.filled, strict=True)
        ]


def infer_types(tables: Iterator[pa.Table], names: list[str]) -> list[str]:
    """The first pass: each column's type (see the module) over every row."""
    types = Types(names)
    for table in tables:
        types.see(table)
    return types.chosen()


def _has_filled(col: Any) -> bool:
    """Whether a column of text has a filled cell: its values' bytes, from its offsets (a null is empty)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    for chunk in col.chunks if isinstance(col, pa.ChunkedArray) else [col]:
        if chunk.type not in (pa.string(), pa.large_string()) or chunk.null_count:
            return bool(pc.any(pc.greater(pc.binary_length(col), 0)).as_py())
        if len(chunk):
            offsets = np.frombuffer(chunk.buffers()[1], np.int64 if chunk.type == pa.large_string() else np.int32)
            if offsets[chunk.offset + len(chunk)] > offsets[chunk.offset]:
                return True
    return False


def _schema(names: list[str], kinds: list[str]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, _arrow_type(kind)) for name, kind in zip(names, kinds, strict=True)])


def _writer(sink: Any, schema: pa.Schema, first: pa.Table) -> Any:
    """A Parquet writer of ``schema`` to ``sink`` (zstd). A dictionary only for the columns whose values repeat in
    ``first`` (the first block, typed: at most a quarter of its values different), as an id's dictionary costs
    time and makes the file bigger; each row group's statistics (its smallest and largest value, its nulls) only
    for the typed columns, the ones a chart's histogram reads them of (:mod:`s3task.charts.count`), as a text
    column's compare every value (a fifth of the writer's time for a 1 GB result of 7 columns)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    repeating = [name for name, col in zip(schema.names, first.columns, strict=True) if _repeating(col)]
    typed = [field.name for field in schema if field.type != pa.string()]
    return pq.ParquetWriter(
        pa.PythonFile(sink, mode="w"), schema, compression="zstd", use_dictionary=repeating, write_statistics=typed
    )


def _repeating(col: Any) -> bool:
    """Whether at most a quarter of ``col``'s values are different."""
    import pyarrow.compute as pc

    return int(pc.count_distinct(col, mode="all").as_py()) * 4 <= max(1, len(col))


def write_parquet(open_source: Any, sink: Any) -> int:
    """The Parquet copy of the output that ``open_source()`` opens (a context manager giving a stream) written to
    ``sink``; returns the data rows written.

    Usually in one pass: the types the first block allows are the copy's from its start, each later block checked
    against them as it is written, to a temporary file, then copied to ``sink``. When a later block changes a type,
    the rest is read for its types alone and the copy written again in a second pass (when Arrow's streaming
    reader refuses the output, in two passes as any output is read)."""
    import tempfile

    try:
        with tempfile.TemporaryFile(prefix="s3task-parquet-") as spool:
            with open_source() as raw:
                rows, kinds = _write(_tables(raw, fast=True), WriteOnly(spool), None)
            if rows >= 0:
                spool.seek(0)
                while data := spool.read(1 << 20):
                    sink.write(data)
                return rows
        fast = True  # Arrow read every row once: it reads them again
    except NotForArrow:
        with open_source() as raw:
            names, tables = _tables(raw, fast=False)
            with closing(ahead(tables)) as blocks:
                kinds = infer_types(blocks, names)
        fast = False
    with open_source() as raw:
        return _write(_tables(raw, fast=fast), sink, kinds)[0]


def _tables(raw: Any, *, fast: bool) -> tuple[list[str], Iterator[pa.Table]]:
    """The output's names and rows, read by Arrow's streaming reader (``fast``) or as any output is."""
    legacy, stream = peek_bom(raw)
    return arrow_tables(stream, legacy) if fast else exact_tables(stream, legacy)


def _write(read: tuple[list[str], Iterator[pa.Table]], sink: Any, kinds: list[str] | None) -> tuple[int, list[str]]:
    """The rows of ``read`` written to ``sink`` as ``kinds``: (the rows written, the types). Without ``kinds``, as
    the first block's types, each later block checked against them; once one changes them, the rest is read for
    its types alone: (-1, the types over every row)."""
    import pyarrow as pa

    names, tables = read
    types = Types(names) if kinds is None else None
    with closing(ahead(tables)) as blocks:
        table = next(blocks)  # every reading gives a table, if an empty one
        converted = types.see(table) if types else [None] * len(names)
        kinds = types.chosen() if types else kinds
        assert kinds is not None
        schema = _schema(names, kinds)
        columns = _converted(table, kinds, converted)
        rows = 0
        with written_behind(_writer(sink, schema, pa.table(columns, schema=schema))) as write:
            while True:
                write(pa.table(columns, schema=schema))
                rows += table.num_rows
                if (table := next(blocks, None)) is None:
                    return rows, kinds
                if types is not None:
                    converted = types.see(table)
                    if types.chosen() != kinds:
                        for rest in blocks:
                            types.see(rest)
                        return -1, types.chosen()
                columns = _converted(table, kinds, converted)


def _converted(table: pa.Table, kinds: list[str], converted: list[Any | None]) -> list[Any]:
    """The table's columns as ``kinds``, those :meth:`Types.see` converted to them already taken as they are."""
    return [
        done if done is not None and done.type == _arrow_type(kind) else _convert(col, kind)
        for col, kind, done in zip(table.columns, kinds, converted, strict=True)
    ]
