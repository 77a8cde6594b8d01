"""Writing: handler output as RFC 4180 CSV (UTF-8, CRLF, header once), formulas neutralised."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from .common import TEXT

#: First characters that make a spreadsheet read a cell as a formula.
_FORMULA_START = np.zeros(256, dtype=bool)
_FORMULA_START[list(b"=+-@\t\r")] = True
_SIGN = np.zeros(256, dtype=bool)
_SIGN[list(b"+-")] = True
_NUMBER = r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$"


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
    """Writes DataFrames as one RFC 4180 CSV (header once, UTF-8, CRLF), formulas neutralised.

    Two halves, so that they can run on different threads: :meth:`prepare`
    turns a handler's DataFrame into an Arrow table of text (cheap, no copy
    for text columns) and counts its error rows; :meth:`write_table`
    neutralises formulas and encodes the table into the sink. All sink writes
    happen in ``write_table`` and ``close``.
    """

    def __init__(self, sink: Any, error_column: str | None = None) -> None:
        self._file = pa.PythonFile(_SinkFile(sink), mode="w")
        self._error_column = error_column
        self._writer: pacsv.CSVWriter | None = None
        self._names: list[str] | None = None
        self._schema: pa.Schema | None = None

    def prepare(self, frame: pd.DataFrame | None) -> tuple[pa.Table | None, Written]:
        """The frame as a table of text to write (None if nothing to write), and its row counts."""
        if frame is None or len(frame.columns) == 0:
            return None, Written()
        table = to_text_table(frame)
        if self._names is None:
            self._names = table.column_names
            header = neutralise(pa.array(self._names, pa.string())).to_pylist()
            self._schema = pa.schema([(name, TEXT) for name in header])
        elif table.column_names != self._names:
            if table.num_rows == 0:
                return None, Written()
            raise RuntimeError(f"the task type returned columns {table.column_names} after {self._names}")
        return pa.table(table.columns, schema=self._schema), Written(table.num_rows, self._count_errors(table))

    def write_table(self, table: pa.Table) -> None:
        if self._writer is None:
            assert self._schema is not None
            self._writer = pacsv.CSVWriter(self._file, self._schema, write_options=pacsv.WriteOptions(eol="\r\n"))
        self._writer.write_table(pa.table([neutralise(col) for col in table.columns], schema=table.schema))

    def write(self, frame: pd.DataFrame | None) -> Written:
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
    """The frame as an Arrow table of string columns (names as text; numbers and booleans as text)."""
    columns = []
    for i in range(frame.shape[1]):
        columns.append(_to_text(frame.iloc[:, i]))
    return pa.table(columns, names=[str(c) for c in frame.columns])


def _to_text(series: pd.Series) -> pa.ChunkedArray | pa.Array:
    try:
        arr = pa.array(series, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # Mixed Python objects: render each as text (slow, but only for such columns).
        arr = pa.array([None if v is None or v is pd.NA or v != v else str(v) for v in series], TEXT)
    if arr.type == TEXT:
        return arr
    if pa.types.is_boolean(arr.type):
        return pc.if_else(arr, "true", "false")
    return pc.cast(arr, TEXT)


def neutralise(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Prefix ``'`` to text that a spreadsheet would run as a formula.

    A value starting with = + - @ tab or CR gets a leading apostrophe unless
    it is a plain number ("-42" and "+3.5" stay as they are). The candidates
    are found from the first byte of each value (numpy, no copy); only they
    are checked against the number pattern, so the cost follows the number of
    risky-looking values, not the size of the column.
    """
    if isinstance(col, pa.ChunkedArray):
        chunks = [_neutralise_chunk(chunk) for chunk in col.chunks]
        if all(new is old for new, old in zip(chunks, col.chunks, strict=True)):
            return col
        return pa.chunked_array(chunks, type=col.type)
    return _neutralise_chunk(col)


def _neutralise_chunk(chunk: pa.Array) -> pa.Array:
    candidates = _formula_candidates(chunk)
    if not len(candidates):
        return chunk
    values = chunk.take(pa.array(candidates))
    formula = _is_formula(values)
    if not formula.any():
        return chunk
    mask = np.zeros(len(chunk), dtype=bool)
    mask[candidates[formula]] = True
    quote, nothing = pa.scalar("'", values.type), pa.scalar("", values.type)
    fixed = pc.binary_join_element_wise(quote, values.filter(pa.array(formula)), nothing)
    return pc.replace_with_mask(chunk, pa.array(mask), fixed)


def _is_formula(values: pa.Array) -> np.ndarray:
    """Which of ``values`` (each non-empty, starting with one of = + - @ tab CR) a spreadsheet would run.

    Only a value that starts with a sign can be a plain number; only those go through the pattern.
    """
    offsets, data = _offsets_and_data(values)
    signed = _SIGN[data[offsets[:-1]]]
    formula: np.ndarray = ~signed
    which = np.flatnonzero(signed)
    if len(which):
        maybe = values if len(which) == len(values) else values.take(pa.array(which))
        formula[which] = ~pc.match_substring_regex(maybe, _NUMBER).to_numpy(zero_copy_only=False)
    return formula


def _offsets_and_data(chunk: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (one per value, plus the end) and bytes of a string array, without copying."""
    _validity, offsets_buf, data_buf = chunk.buffers()
    offsets_type = np.int64 if chunk.type == pa.large_string() else np.int32
    offsets = np.frombuffer(offsets_buf, dtype=offsets_type)[chunk.offset : chunk.offset + len(chunk) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    return offsets, data


def _formula_candidates(chunk: pa.Array) -> np.ndarray:
    """Positions of the non-empty values whose first byte is one of = + - @ tab CR."""
    if len(chunk) == 0:
        return np.zeros(0, dtype=np.intp)
    if chunk.type not in (pa.string(), pa.large_string()):
        chunk = chunk.cast(TEXT)
    offsets, data = _offsets_and_data(chunk)
    if data.size == 0:
        return np.zeros(0, dtype=np.intp)
    starts = offsets[:-1]
    filled = offsets[1:] > starts
    first = data[np.minimum(starts, len(data) - 1)]
    return np.flatnonzero(filled & _FORMULA_START[first])
