"""Writing: handler output as RFC 4180 CSV (UTF-8 with a BOM, CRLF, header once), formulas neutralised.

The protection is reversible: a value a spreadsheet would run as a formula gets a leading ``'``,
and so does a value that already starts with ``'``. Every stored value that starts with ``'``
therefore had exactly one added, and :func:`unprotect` takes it off again, giving the exact
values (the app's preview, the Excel copy and the "exact" CSV, :mod:`s3task.exports`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .common import BOM, TEXT

#: First characters that make a spreadsheet read a cell as a formula.
_FORMULA_START = np.zeros(256, dtype=bool)
_FORMULA_START[list(b"=+-@\t\r")] = True
#: First characters that get a ``'``: a formula start, or an apostrophe (so that it can be told apart).
_PROTECT_START = _FORMULA_START.copy()
_PROTECT_START[ord("'")] = True
_APOSTROPHE_ONLY = np.zeros(256, dtype=bool)
_APOSTROPHE_ONLY[ord("'")] = True
_SIGN = np.zeros(256, dtype=bool)
_SIGN[list(b"+-")] = True
_NUMBER = r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$"


#: Rows Arrow encodes into one buffer before it hands the buffer to the sink. Each hand-over takes the
#: GIL from the other stages' threads; with Arrow's default (1,024 rows, about 130 kB here) a 100 MB
#: pass-through used 0.1 CPU-seconds more and ran 7% longer than with 16,384 (about 2 MB).
WRITE_BATCH_ROWS = 16_384


class _SinkFile:
    """What ``pa.PythonFile`` needs around a sink that only has ``write``.

    The sink gets a view of each of Arrow's output buffers, not a copy, and
    must be done with it (or copy it) before its ``write`` returns: the view
    is released then.
    """

    closed = False

    def __init__(self, sink: Any) -> None:
        self._sink = sink

    def write(self, data: Any) -> int:
        # Arrow's buffer itself, not a copy. Arrow reuses (and reallocates) it for the next rows, so the
        # view is released when the sink returns: a sink that kept it fails loudly instead of writing
        # whatever the memory holds later.
        with memoryview(data) as view:
            self._sink.write(view)
            return view.nbytes

    def flush(self) -> None:
        pass

    def close(self) -> None:  # the sink belongs to the caller
        pass


@dataclass
class Written:
    rows: int = 0
    errors: int = 0


class CsvWriter:
    """Writes DataFrames as one RFC 4180 CSV (BOM, header once, UTF-8, CRLF), formulas neutralised.

    Two halves, so that they can run on different threads: :meth:`prepare`
    turns a handler's DataFrame into an Arrow table of text (cheap, no copy
    for text columns) and counts its error rows; :meth:`write_table`
    neutralises formulas and encodes the table into the sink. All sink writes
    happen in ``write_table`` and ``close``. The file starts with a UTF-8
    byte-order mark, so that Windows Excel reads it as UTF-8.

    ``protect=False`` writes the values exactly as they are (the "exact" CSV).
    :attr:`protected` counts the data cells given a leading ``'`` so far
    (written on the thread that calls ``write_table``; read it after ``close``
    for the final count).
    """

    def __init__(self, sink: Any, error_column: str | None = None, *, protect: bool = True) -> None:
        self._raw = _SinkFile(sink)
        self._file = pa.PythonFile(self._raw, mode="w")
        self._error_column = error_column
        self._protect = protect
        self._writer: pacsv.CSVWriter | None = None
        self._names: list[str] | None = None
        self._schema: pa.Schema | None = None
        #: Data cells (not header names) that got a leading ``'``.
        self.protected = 0

    def prepare(self, frame: pd.DataFrame | pa.Table | None) -> tuple[pa.Table | None, Written]:
        """The frame as a table of text to write (None if nothing to write), and its row counts.

        An Arrow table is taken as it is: its columns must be text already.
        """
        if frame is None or len(frame.columns) == 0:
            return None, Written()
        table = frame if isinstance(frame, pa.Table) else to_text_table(frame)
        if self._names is None:
            self._names = table.column_names
            names = pa.array(self._names, pa.string())
            header = (neutralise(names) if self._protect else names).to_pylist()
            self._schema = pa.schema([(name, TEXT) for name in header])
        elif table.column_names != self._names:
            if table.num_rows == 0:
                return None, Written()
            raise RuntimeError(f"the task type returned columns {table.column_names} after {self._names}")
        return self._as_written(table), Written(table.num_rows, self._count_errors(table))

    def _as_written(self, table: pa.Table) -> pa.Table:
        """The table under the header's (neutralised) names; renamed in one call where its columns are text
        already (``pa.table(table.columns, …)`` makes an object for each column: 0.2 s for 16,384 columns)."""
        assert self._schema is not None
        renamed = table.rename_columns(self._schema.names).replace_schema_metadata(None)
        if renamed.schema.equals(self._schema):
            return renamed
        return pa.table(table.columns, schema=self._schema)  # refused as before: a column that is not text

    def write_table(self, table: pa.Table) -> None:
        if self._writer is None:
            assert self._schema is not None
            self._raw.write(BOM)  # as a view the sink must be done with, like Arrow's buffers
            options = pacsv.WriteOptions(eol="\r\n", batch_size=WRITE_BATCH_ROWS)
            self._writer = pacsv.CSVWriter(self._file, self._schema, write_options=options)
        if self._protect:
            table, count = protect_table(table)
            self.protected += count
        self._writer.write_table(table)

    def write(self, frame: pd.DataFrame | pa.Table | None) -> Written:
        """prepare + write_table, on the calling thread."""
        table, written = self.prepare(frame)
        if table is not None:
            self.write_table(table)
        return written

    def _count_errors(self, table: pa.Table) -> int:
        if self._error_column is None or self._error_column not in table.column_names:
            return 0
        col = table.column(self._error_column)
        return int(pc.sum(pc.greater(pc.binary_length(col), 0)).as_py() or 0)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def to_text_table(frame: pd.DataFrame) -> pa.Table:
    """The frame as an Arrow table of string columns (names as text; numbers and booleans as text).

    A text (or Arrow) column's Arrow array is taken as it is, from the array pandas holds: ``frame.iloc[:, i]``
    and ``pa.array(series)`` cost about 145 µs a column, 2.4 s for each block of a 16,384-column table (most of
    a wide workbook's time in the worker); this costs a few µs. Other columns go through their Series."""
    columns = []
    for i, array in enumerate(_column_arrays(frame)):
        if isinstance(array.dtype, (pd.StringDtype, pd.ArrowDtype)):  # Arrow's own array (or made from Python's)
            columns.append(_as_text(pa.array(array)))
        else:
            columns.append(_to_text(frame.iloc[:, i]))
    return pa.table(columns, names=[str(c) for c in frame.columns])


def _column_arrays(frame: pd.DataFrame) -> Iterator[Any]:
    """Each column's values as pandas holds them, in order, without a Series made for each (35 µs a column):
    pandas' own iterator (private, there since pandas 1.1; read here, never written), else ``items()``."""
    arrays = getattr(frame, "_iter_column_arrays", None)
    return arrays() if callable(arrays) else (series.array for _name, series in frame.items())


def _to_text(series: pd.Series) -> pa.ChunkedArray | pa.Array:
    try:
        arr = pa.array(series, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # Mixed Python objects: render each as text (slow, but only for such columns).
        arr = pa.array([None if v is None or v is pd.NA or v != v else str(v) for v in series], TEXT)
    return _as_text(arr)


def _as_text(arr: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    if arr.type == TEXT:
        return arr
    if pa.types.is_boolean(arr.type):
        return pc.if_else(arr, "true", "false")
    return pc.cast(arr, TEXT)


def neutralise(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Prefix ``'`` to text that a spreadsheet would run as a formula, and to text starting with ``'``.

    A value starting with = + - @ tab or CR gets a leading apostrophe unless
    it is a plain number ("-42" and "+3.5" stay as they are); a value starting
    with ``'`` gets one too, which makes the protection reversible
    (:func:`unprotect`). The candidates are found from the first byte of each
    value (numpy, no copy); only they are checked against the number pattern,
    so the cost follows the number of risky-looking values, not the size of
    the column.
    """
    return protect(col)[0]


def protect(col: pa.ChunkedArray | pa.Array) -> tuple[pa.ChunkedArray | pa.Array, int]:
    """:func:`neutralise`, and how many values it prefixed."""
    if isinstance(col, pa.ChunkedArray):
        done = [_neutralise_chunk(chunk) for chunk in col.chunks]
        count = sum(n for _chunk, n in done)
        if not count:
            return col, 0
        return pa.chunked_array([chunk for chunk, _n in done], type=col.type), count
    return _neutralise_chunk(col)


def protect_table(table: pa.Table) -> tuple[pa.Table, int]:
    """:func:`protect` on every column of a table of text, and how many values it prefixed in all.

    The first bytes of all the columns are looked at at once (their values put end to end), and only the
    columns with a candidate are protected one by one: a column at a time cost about 20 µs a column, 0.3 s for
    each block of a 16,384-column table, whatever its rows."""
    chunks = [chunk for column in table.columns for chunk in column.chunks]
    if table.num_columns < 64 or not chunks or any(chunk.type != TEXT for chunk in chunks):
        done = [protect(column) for column in table.columns]
        count = sum(n for _column, n in done)
        return (pa.table([column for column, _n in done], schema=table.schema) if count else table), count
    candidates = _first_bytes_in(pa.concat_arrays(chunks), _PROTECT_START)[0]
    if not len(candidates):
        return table, 0
    ends = np.cumsum([len(column) for column in table.columns])
    columns, count = table.columns, 0
    for i in np.unique(np.searchsorted(ends, candidates, side="right")).tolist():
        columns[i], n = protect(columns[i])
        count += n
    return (pa.table(columns, schema=table.schema) if count else table), count


def _neutralise_chunk(chunk: pa.Array) -> tuple[pa.Array, int]:
    candidates, first = _first_bytes_in(chunk, _PROTECT_START)
    if not len(candidates):
        return chunk, 0
    text = chunk if chunk.type in (pa.string(), pa.large_string()) else chunk.cast(TEXT)
    # Only a value that starts with a sign can be a plain number; only those go through the pattern.
    signed = _SIGN[first]
    formula: np.ndarray = ~signed
    which = np.flatnonzero(signed)
    if len(which):
        maybe = text.take(pa.array(candidates[which]))
        formula[which] = ~pc.match_substring_regex(maybe, _NUMBER).to_numpy(zero_copy_only=False)
    count = int(np.count_nonzero(formula))
    if not count:
        return chunk, 0
    chosen = candidates[formula]
    mask = np.zeros(len(chunk), dtype=bool)
    mask[chosen] = True
    quote, nothing = pa.scalar("'", text.type), pa.scalar("", text.type)
    fixed = pc.binary_join_element_wise(quote, text.take(pa.array(chosen)), nothing)
    return pc.replace_with_mask(text, pa.array(mask), fixed), count


def unprotect(col: pa.ChunkedArray | pa.Array, *, legacy: bool = False) -> pa.ChunkedArray | pa.Array:
    """The exact values of a column written with :func:`neutralise`: one leading ``'`` taken off.

    ``legacy``: the column comes from an output written before the protection
    was reversible (such a file has no BOM), where a value that starts with
    ``'`` may have been written that way; then only a ``'`` before = + - @ tab
    or CR, which that writer added, is taken off.
    """
    if isinstance(col, pa.ChunkedArray):
        chunks = [_unprotect_chunk(chunk, legacy) for chunk in col.chunks]
        if all(new is old for new, old in zip(chunks, col.chunks, strict=True)):
            return col
        return pa.chunked_array(chunks, type=col.type)
    return _unprotect_chunk(col, legacy)


def _unprotect_chunk(chunk: pa.Array, legacy: bool) -> pa.Array:
    if chunk.type not in (pa.string(), pa.large_string()):
        return chunk
    candidates = _first_byte_in(chunk, _APOSTROPHE_ONLY)
    if legacy and len(candidates):
        offsets, data = _offsets_and_data(chunk)
        second = offsets[candidates] + 1
        inside = second < offsets[candidates + 1]
        keep = np.zeros(len(candidates), dtype=bool)
        keep[inside] = _FORMULA_START[data[second[inside]]]
        candidates = candidates[keep]
    if not len(candidates):
        return chunk
    mask = np.zeros(len(chunk), dtype=bool)
    mask[candidates] = True
    fixed = pc.utf8_slice_codeunits(chunk.filter(pa.array(mask)), 1)
    return pc.replace_with_mask(chunk, pa.array(mask), fixed)


def _offsets_and_data(chunk: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (one per value, plus the end) and bytes of a string array, without copying."""
    _validity, offsets_buf, data_buf = chunk.buffers()
    offsets_type = np.int64 if chunk.type == pa.large_string() else np.int32
    offsets = np.frombuffer(offsets_buf, dtype=offsets_type)[chunk.offset : chunk.offset + len(chunk) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    return offsets, data


def _first_byte_in(chunk: pa.Array, table: np.ndarray) -> np.ndarray:
    """Positions of the non-empty values whose first byte is marked in ``table``."""
    return _first_bytes_in(chunk, table)[0]


def _first_bytes_in(chunk: pa.Array, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the non-empty values whose first byte is marked in ``table``, and those first bytes."""
    none = np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.uint8)
    if len(chunk) == 0:
        return none
    if chunk.type not in (pa.string(), pa.large_string()):
        chunk = chunk.cast(TEXT)
    offsets, data = _offsets_and_data(chunk)
    starts = offsets[:-1]
    # Offsets never decrease, so the values that start inside the data buffer come first; the rest are
    # empty. An empty value's start is the next value's first byte: candidates are checked for that below.
    inside = starts[: int(np.searchsorted(starts, data.size))]
    first = np.take(data, inside)  # np.take: about twice as fast as indexing here
    candidates = np.flatnonzero(np.take(table, first))
    if len(candidates):
        candidates = candidates[offsets[candidates + 1] > offsets[candidates]]
    return candidates, np.take(first, candidates)
