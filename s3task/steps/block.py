"""A block of rows as steps see it: the table's own columns, each row's place in the file, its errors.

The row number and the error text ride beside the table rather than in it, so a step that works on
"every column" never touches them and a column of the file cannot be mistaken for them. Every cell is
text (Arrow ``large_string``); an empty cell is ``""``, never null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

#: Names of the two riding columns while a block is inside DuckDB (a file with a column of either name is refused).
ROW = "__s3task_row"
ERRORS = "__s3task_errors"
#: Between the words of two problems on one row.
JOIN = "; "


@dataclass(frozen=True)
class Block:
    table: pa.Table  # the rows' own columns, all large_string
    row: pa.Array  # int64: the row's record number in the file (0 = the first record after the header)
    errors: pa.Array  # large_string: "" for a row without problems

    @property
    def num_rows(self) -> int:
        return int(self.table.num_rows)

    @property
    def names(self) -> list[str]:
        return list(self.table.column_names)

    @classmethod
    def start(cls, table: pa.Table, first_row: int) -> Block:
        import pyarrow as pa

        n = table.num_rows
        return cls(
            table,
            pa.array(range(first_row, first_row + n), pa.int64()),
            pa.array([""] * n, pa.large_string()) if n else pa.array([], pa.large_string()),
        )

    def keep(self, mask: pa.Array) -> Block:
        """Only the rows where ``mask`` is true (null counts as false)."""
        import pyarrow.compute as pc

        mask = _array(pc.fill_null(mask, False))
        return Block(self.table.filter(mask), self.row.filter(mask), self.errors.filter(mask))

    def with_table(self, table: pa.Table) -> Block:
        return Block(table, self.row, self.errors)

    def add_errors(self, failed: pa.Array, words: str | pa.Array) -> Block:
        """Add ``words`` to the errors of the rows where ``failed`` is true."""
        import pyarrow as pa
        import pyarrow.compute as pc

        failed = _array(pc.fill_null(failed, False))
        if not pc.any(failed).as_py():
            return self
        text = pa.large_string()
        words = pa.scalar(words, text) if isinstance(words, str) else _array(words).cast(text)
        joined = pc.if_else(
            pc.equal(self.errors, ""),
            words,
            pc.binary_join_element_wise(self.errors, words, pa.scalar(JOIN, pa.large_string())),
        )
        return Block(self.table, self.row, pc.if_else(failed, joined, self.errors))

    def combined(self) -> pa.Table:
        """The table with the row number and errors as its last two columns (as DuckDB takes it)."""
        return self.table.append_column(ROW, self.row).append_column(ERRORS, self.errors)

    @classmethod
    def split(cls, table: pa.Table) -> Block:
        """The inverse of :meth:`combined`."""
        import pyarrow as pa
        import pyarrow.compute as pc

        names = [n for n in table.column_names if n not in (ROW, ERRORS)]
        own = pa.table([_text(table.column(n)) for n in names], names=names)
        row = table.column(ROW).combine_chunks().cast(pa.int64())
        errors = pc.fill_null(_text(table.column(ERRORS)), "")
        return cls(own, row, errors.combine_chunks() if isinstance(errors, pa.ChunkedArray) else errors)


def _array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    import pyarrow as pa

    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.fill_null(column.cast(pa.large_string()), "")


def cells_changed(before: pa.ChunkedArray | pa.Array, after: pa.ChunkedArray | pa.Array) -> int:
    import pyarrow.compute as pc

    return int(pc.sum(pc.not_equal(before, after)).as_py() or 0)
