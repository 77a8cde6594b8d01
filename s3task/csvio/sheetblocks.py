"""A sheet's cells gathered into blocks sized by cells, and a block's cells as a table of the header's columns.

The reader parses a sheet's XML a piece at a time (:mod:`.sheetreader`); a block is what goes on to the task
type, the writer and progress. Each block costs something for every column whatever its rows (a table of
16,384 columns is 16,384 arrays to convert, hand over and write), so a block is sized by its cells, rows
times the header's columns: :data:`BLOCK_CELLS`. A wide sheet gets few rows a block and a narrow one many,
as a CSV's blocks of a few MB do. Before, a block was one 2 MB piece of XML: about 5 rows of a 16,384-column
sheet, and a 200-row sheet took 44 blocks where its CSV took 3 (issue 36, item 6). A block also holds at most
:data:`~.sheetcells.MAX_BLOCK_TEXT` of text, and a piece of many sparse rows in a wide sheet is cut into
several blocks: every row of a block is as wide as the header, whatever cells it has.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from .sheetcells import MAX_BLOCK_TEXT, Cells

#: Cells (rows × the header's columns) a block holds at most: 32 rows of 16,384 columns, 87,381 rows of 6 (a CSV's
#: 4 MB blocks hold 0.5-1 million cells). Through the worker's engine on a loaded 2-core machine (bench/workbook.py
#: --wide 200, BENCHMARKS.md "Workbooks"): a 200-row × 16,384-column workbook took 13.7 CPU seconds in 7 blocks,
#: its CSV 4.5 (181.6 in 44 blocks when a block was a piece of XML); Excel's largest sheet of 6 columns peaked at
#: 283 MB (234 MB in blocks of a piece, about 8,500 rows). With 2^20 cells the wide one took 10.1 s and the narrow
#: one peaked at 365 MB; with 2^18 the narrow one at 254 MB: its memory is the cells of the few blocks alive at once.
BLOCK_CELLS = 1 << 19


def concat(parts: list[Cells]) -> Cells:
    if len(parts) == 1:
        return parts[0]
    return Cells(
        np.concatenate([c.rows for c in parts]),
        np.concatenate([c.columns for c in parts]),
        pa.concat_arrays([c.values for c in parts]),
        np.concatenate([c.is_text for c in parts]),
    )


def select(cells: Cells, keep: np.ndarray) -> Cells:
    return Cells(cells.rows[keep], cells.columns[keep], cells.values.filter(pa.array(keep)), cells.is_text[keep])


def _head(cells: Cells, count: int) -> Cells:
    """The first ``count`` cells (in the sheet's order)."""
    return Cells(cells.rows[:count], cells.columns[:count], cells.values.slice(0, count), cells.is_text[:count])


def _tail(cells: Cells, start: int) -> Cells:
    return Cells(cells.rows[start:], cells.columns[start:], cells.values.slice(start), cells.is_text[start:])


def gathered(
    pieces: Iterator[tuple[Cells, int]], width: int, start: int = 0, cells: int = BLOCK_CELLS
) -> Iterator[tuple[Cells, int]]:
    """The cells of ``pieces`` (each with the XML offset its piece ends at) as blocks of whole rows, each of at
    most ``cells`` // ``width`` rows (at least one) and :data:`MAX_BLOCK_TEXT` of text (at least one row), each
    with the offset it reaches: its last piece's end, or where a block ends inside a piece, that piece's share
    by its cells. ``start``: the offset before the first piece."""
    most_rows = max(1, cells // max(1, width))
    held: list[Cells] = []
    rows = text = 0
    for piece, end in pieces:
        size = len(piece.rows)
        bounds = _row_starts(piece.rows)  # where each row's cells start in the piece, then its end
        sizes = _text_upto(piece.values)  # text of the piece's first k cells, for each k
        at = 0  # the first row (of ``bounds``) not yet taken
        while at < len(bounds) - 1:
            taken = _fits(bounds, sizes, at, most_rows - rows, MAX_BLOCK_TEXT - text)
            if taken == at and held:  # not one more row fits: the block is full
                block, held, rows, text = concat(held), [], 0, 0  # the pieces let go of before the block is used
                yield block, start + (end - start) * int(bounds[at]) // size
                continue
            taken = max(taken, at + 1)  # at least one row in a block
            low, high = int(bounds[at]), int(bounds[taken])
            held.append(_head(_tail(piece, low), high - low) if (low, high) != (0, size) else piece)
            rows, text = rows + taken - at, text + int(sizes[high] - sizes[low])
            at = taken
            if rows >= most_rows or text >= MAX_BLOCK_TEXT:
                block, held, rows, text = concat(held), [], 0, 0
                yield block, end if at == len(bounds) - 1 else start + (end - start) * high // size
        start = end
    if held:
        block, held = concat(held), []
        yield block, start


def _row_starts(rows: np.ndarray) -> np.ndarray:
    """Where each run of one row's cells starts, then the number of cells: a row's cells follow each other."""
    changes = np.flatnonzero(rows[1:] != rows[:-1]) + 1
    return np.concatenate([[0], changes, [len(rows)]]) if len(rows) else np.zeros(1, np.int64)


def _text_upto(values: pa.Array) -> np.ndarray:
    """The bytes of text in the first k values, for k = 0 … len(values)."""
    offsets = np.frombuffer(values.buffers()[1], np.int64 if values.type == pa.large_string() else np.int32)
    window = offsets[values.offset : values.offset + len(values) + 1]
    return (window - window[0]).astype(np.int64) if len(window) else np.zeros(1, np.int64)


def _fits(bounds: np.ndarray, sizes: np.ndarray, at: int, rows: int, text: int) -> int:
    """The row (of ``bounds``) up to which the rows from ``at`` fit in ``rows`` more rows and ``text`` more bytes."""
    last = min(len(bounds) - 1, at + max(0, rows))
    within = int(np.searchsorted(sizes[bounds[at : last + 1]] - sizes[bounds[at]], text, side="right"))
    return at + max(0, within - 1)


def table_of(cells: Cells, names: list[str], first: int) -> tuple[pa.Table, np.ndarray]:
    """The rows of ``cells`` as a table of the header's columns (``first``: the first one's number), each an
    empty text where a row has no cell, and the rows' numbers in the sheet. All columns are made at once: one
    index of rows × columns into the cells' values, one ``take``, each column a slice of the result (a loop
    over 16,384 columns per block took most of a wide sheet's reading before)."""
    width = len(names)
    row_ids, row_of = _row_numbers(cells.rows)
    height, count = len(row_ids), len(cells.rows)
    where = np.full(width * height, count, np.int64)  # ``count``: the empty text put after the values
    where[(cells.columns.astype(np.int64) - first) * height + row_of] = np.arange(count)  # given twice: the last
    values = pa.concat_arrays([cells.values, pa.array([""], cells.values.type)])
    dense = values.take(pa.array(where))
    columns = [dense.slice(j * height, height) for j in range(width)]
    return pa.Table.from_arrays(columns, names=names), row_ids.astype(np.int64)


def _row_numbers(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows' numbers in order, and each cell's row among them: counted along the cells when the rows come
    in order, as every writer puts them (no sort)."""
    steps = np.diff(rows)
    if (steps >= 0).all():
        new = np.concatenate([[True], steps > 0]) if len(rows) else np.zeros(0, bool)
        return rows[new], np.cumsum(new) - 1
    return np.unique(rows, return_inverse=True)
