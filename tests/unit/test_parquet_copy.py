"""The Parquet copy's one pass (issue 34 part 3): the copy is the same as the two passes' whichever way it is made.

The copy is usually written in one pass with the types its first block allows, read by Arrow's streaming reader
(``s3task/exports/parquet_rows.py``); a later block that changes a type makes it a second pass, and a row Arrow's
reader refuses makes it the two passes any output gets. Each case here is written small blocks at a time (so a
few rows make several) and checked against the rule read the plain way: each column's type from
:func:`~s3task.exports.parquet.infer_types` over the rows :func:`~s3task.exports.source.exact_tables` gives, and
each block converted to it.
"""

from __future__ import annotations

import csv
import io
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from s3task.exports import parquet, parquet_rows
from s3task.exports.source import exact_tables, peek_bom
from s3task.testing import run_task_type

BOM = "\ufeff"


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch) -> None:
    monkeypatch.setattr(parquet_rows, "BLOCK_SIZE", 256)  # Arrow's blocks: a few rows each
    monkeypatch.setattr(parquet_rows, "ROW_GROUP_BYTES", 512)  # two blocks a row group


def output_of(rows: list[list[str]]) -> bytes:
    """What the worker stores for ``rows`` (the header first): a BOM, CRLF, values a spreadsheet runs protected."""
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    return run_task_type("copy", text.getvalue().encode()).output


def copy_of(output: bytes) -> tuple[pa.Table, int, int]:
    """The Parquet copy of ``output`` as read back, its rows as written, and how often the output was opened."""
    opened = []

    def open_source() -> io.BytesIO:
        opened.append(1)
        return io.BytesIO(output)

    sink = io.BytesIO()
    rows = parquet.write_parquet(open_source, sink)
    return pq.read_table(io.BytesIO(sink.getvalue())), rows, len(opened)


def plain_copy(output: bytes) -> pa.Table:
    """The copy as the rule says, read the plain way (two passes of :func:`exact_tables`)."""

    def tables() -> tuple[list[str], Any]:
        legacy, stream = peek_bom(io.BytesIO(output))
        return exact_tables(stream, legacy)

    names, blocks = tables()
    kinds = parquet.infer_types(blocks, names)
    schema = pa.schema([(n, parquet._arrow_type(k)) for n, k in zip(names, kinds, strict=True)])
    converted = [
        pa.table([parquet._convert(c, k) for c, k in zip(t.columns, kinds, strict=True)], schema=schema)
        for t in tables()[1]
    ]
    return pa.concat_tables(converted)


def people(n: int, *, later: dict[int, list[str]] | None = None) -> list[list[str]]:
    rows = [["id", "code", "amount", "day", "ok", "note"]]
    for i in range(n):
        rows.append([str(i + 1), f"{i:03d}", f"{i}.25" if i % 7 else "", f"2024-01-{i % 28 + 1:02d}", "TRUE", "x"])
    for at, row in (later or {}).items():
        rows[at] = row
    return rows


def test_one_pass_when_the_first_blocks_types_hold_to_the_end() -> None:
    output = output_of(people(300))
    table, rows, opened = copy_of(output)
    assert (rows, opened) == (300, 1)  # read once, not twice as before
    assert [str(t) for t in table.schema.types] == ["int64", "string", "double", "date32[day]", "bool", "string"]
    assert table.equals(plain_copy(output))
    assert pq.ParquetFile(io.BytesIO(_written(output))).num_row_groups > 3  # several blocks, as the case means


def _written(output: bytes) -> bytes:
    sink = io.BytesIO()
    parquet.write_parquet(lambda: io.BytesIO(output), sink)
    return sink.getvalue()


@pytest.mark.parametrize(
    ("row", "types"),
    [
        (["A7", "x", "1e3", "2024-02-30", "maybe", "y"], ["string", "string", "double", "string", "string", "string"]),
        (["7", "x", "12345678901234567", "", "", ""], ["int64", "string", "string", "date32[day]", "bool", "string"]),
        (["1.5", "x", "", "2024-01-01 09:30", "FALSE", ""], ["double", "string", "double", "string", "bool", "string"]),
    ],
)  # fmt: skip
def test_a_later_block_that_changes_a_type_makes_a_second_pass_with_the_types_of_every_row(row, types) -> None:
    output = output_of(people(300, later={280: row}))
    table, rows, opened = copy_of(output)
    assert (rows, opened) == (300, 2)
    assert [str(t) for t in table.schema.types] == types
    assert table.equals(plain_copy(output))


def test_a_column_empty_at_first_and_filled_later_gets_the_type_of_its_values() -> None:
    rows = [["n", "late"]] + [[str(i), ""] for i in range(200)] + [[str(i), "2024-03-01"] for i in range(5)]
    output = output_of(rows)
    table, _rows, opened = copy_of(output)
    assert opened == 2 and table.schema.field("late").type == pa.date32()
    assert table.equals(plain_copy(output))


def test_a_row_longer_than_arrows_blocks_is_read_as_any_output_is() -> None:
    rows = people(100)
    rows[51][5] = "long " * 400  # 2 KB in one cell: Arrow's reader refuses a row over two of its blocks
    output = output_of(rows)
    table, count, opened = copy_of(output)
    assert (count, opened) == (100, 3)  # the pass Arrow gave up, then the two passes
    assert table.column("note")[50].as_py() == "long " * 400
    assert table.equals(plain_copy(output))


def test_values_are_exact_whatever_their_quotes_lines_and_first_characters() -> None:
    tricky = [
        BOM + "starts with a byte-order mark",  # the first value of the first row: Arrow drops a BOM there
        "=1+1",
        "'quoted",
        "-12",
        "line\nbreak",
        'say "hi"',
        "a,b",
        "",
        "\r\n",
        "Zoë 🙂",
    ]
    rows = [["v", "n"]] + [[value, str(i)] for i, value in enumerate(tricky * 30)]
    output = output_of(rows)
    table, _rows, _opened = copy_of(output)
    assert table.column("v").to_pylist() == tricky * 30
    assert table.equals(plain_copy(output))


def test_an_output_of_a_header_alone_is_a_copy_without_rows() -> None:
    output = output_of([["a", "=b"]])
    table, rows, opened = copy_of(output)
    assert (rows, opened, table.column_names, table.num_rows) == (0, 1, ["a", "=b"], 0)
    assert [str(t) for t in table.schema.types] == ["string", "string"]


def test_an_output_from_before_the_bom_is_unprotected_the_older_way() -> None:
    output = b"name,formula\r\n'=1+1,'x\r\nann,'=2\r\n"  # no BOM: a ' before = + - @ was added
    table, _rows, _opened = copy_of(output)
    assert table.to_pydict() == {"name": ["=1+1", "ann"], "formula": ["'x", "=2"]}
    assert table.equals(plain_copy(output))


def test_typed_columns_have_the_statistics_a_histogram_reads() -> None:
    meta = pq.ParquetFile(io.BytesIO(_written(output_of(people(300))))).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    for group in range(meta.num_row_groups):
        for i, name in enumerate(names):
            stats = meta.row_group(group).column(i).statistics
            if name in ("id", "amount", "day", "ok"):
                assert stats is not None and stats.has_null_count, name


class Broken(io.BytesIO):
    """A stream that fails after ``at`` bytes have gone through it (a store that drops the connection)."""

    def __init__(self, data: bytes = b"", at: int = 0) -> None:
        super().__init__(data)
        self.at, self.moved = at, 0

    def _count(self, n: int) -> None:
        self.moved += n
        if self.moved > self.at:
            raise OSError("connection reset")

    def read(self, n: int | None = -1, /) -> bytes:
        data = super().read(n)
        self._count(len(data))
        return data

    def write(self, data: Any, /) -> int:
        self._count(len(data))
        return super().write(data)


@pytest.mark.timeout(60)
def test_a_source_that_fails_midway_fails_the_copy_and_stops_its_threads() -> None:
    import threading

    output = output_of(people(3_000))
    with pytest.raises(OSError, match="connection reset"):
        parquet.write_parquet(lambda: Broken(output, at=len(output) // 2), io.BytesIO())
    assert not [t for t in threading.enumerate() if t.name.startswith("s3task-parquet")]


@pytest.mark.timeout(60)
def test_a_sink_that_fails_midway_fails_the_copy_and_stops_its_threads() -> None:
    import threading

    output = output_of(people(3_000))
    with pytest.raises(OSError, match="connection reset"):
        parquet.write_parquet(lambda: io.BytesIO(output), Broken(at=1_000))
    assert not [t for t in threading.enumerate() if t.name.startswith("s3task-parquet")]
