"""The Parquet copy of an output, for analysts: each column typed as an analyst expects, read in two passes.

The CSV stays text; this copy gives each column one type, chosen over *every* filled cell of the
column in the whole output (a first pass), then written (a second pass), both streamed block by
block. The types, first that fits:

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
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .source import exact_tables, peek_bom

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


def _still_fitting(col: Any, kinds: list[str]) -> list[str]:
    """Those of ``kinds`` that every filled cell of ``col`` fits."""
    import pyarrow as pa
    import pyarrow.compute as pc

    filled = pc.greater(pc.binary_length(col), 0)
    left = []
    for kind in kinds:
        if pc.all(pc.or_(pc.invert(filled), pc.match_substring_regex(col, _PATTERNS[kind]))).as_py() is False:
            continue
        try:
            _convert(col, kind)  # a pattern can pass what a type refuses: 2024-02-30, a 19-digit number
        except (pa.ArrowInvalid, OverflowError):
            continue
        left.append(kind)
    return left


def infer_types(tables: Iterator[pa.Table], names: list[str]) -> list[str]:
    """The first pass: each column's type (see the module) over every row."""
    import pyarrow.compute as pc

    kinds = {name: list(_CANDIDATES) for name in names}
    filled = dict.fromkeys(names, False)
    for table in tables:
        for name, col in zip(names, table.columns, strict=True):
            if kinds[name]:
                kinds[name] = _still_fitting(col, kinds[name])
            filled[name] = filled[name] or bool(pc.any(pc.greater(pc.binary_length(col), 0)).as_py())
    return [kinds[n][0] if kinds[n] and filled[n] else "string" for n in names]


def write_parquet(open_source: Any, sink: Any) -> int:
    """The Parquet copy of the output that ``open_source()`` opens (a context manager giving a stream;
    called twice, once per pass) written to ``sink``; returns the data rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open_source() as raw:
        legacy, stream = peek_bom(raw)
        names, tables = exact_tables(stream, legacy)
        kinds = infer_types(tables, names)
    schema = pa.schema([(name, _arrow_type(kind)) for name, kind in zip(names, kinds, strict=True)])
    rows = 0
    with open_source() as raw:
        legacy, stream = peek_bom(raw)
        _, tables = exact_tables(stream, legacy)
        with pq.ParquetWriter(pa.PythonFile(sink, mode="w"), schema, compression="zstd") as writer:
            for table in tables:
                columns = [_convert(col, kind) for col, kind in zip(table.columns, kinds, strict=True)]
                writer.write_table(pa.table(columns, schema=schema))
                rows += table.num_rows
    return rows
