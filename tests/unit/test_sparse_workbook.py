"""A workbook read from the byte ranges a browser sends for its preview (s3task.csvio.sparse, ui/workbookfile.py).

The direct upload keeps the file in the browser and sends, of a workbook, the zip's end and the start of the
parts a preview needs (tests/workbooks.py ``browser_ranges`` picks them as ui/direct_upload.js does; the
Chromium test runs the JS itself). Read so, a workbook lists the same sheets, takes the same header row and
shows the same first rows as the whole file; where the bytes sent end, the rows end, a sheet's row count is
left to the task, and a text past the shared strings sent is a marker — never another value.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
import xlsxwriter  # type: ignore[import-untyped]
from openpyxl import Workbook as OpenpyxlWorkbook
from workbooks import (
    HEADER,
    OPENPYXL_SHOWN,
    PRICES,
    SHOWN,
    bad_workbooks,
    browser_ranges,
    openpyxl_book,
    with_pictures,
    xlsxwriter_book,
)

from s3task.csvio import InputFormat
from s3task.csvio.sheetreader import WorkbookReader
from s3task.csvio.sparse import NOT_SENT_TEXT, SparseFile
from s3task.csvio.workbook import list_sheets
from s3task.errors import NotSent
from ui.csvfile import inspect_upload
from ui.direct import WORKBOOK_BYTES, Chosen

PROBE = 64 * 1024


def sent(data: bytes, limits: dict[str, int] | None = None) -> SparseFile:
    """The workbook as the page has it from the browser: the first 64 KB and the ranges."""
    return Chosen("f", "book.xlsx", len(data), data[:PROBE], tuple(browser_ranges(data, limits))).sparse()


def rows_of(source) -> tuple[str, int, list[str], list[list[str]]]:
    with WorkbookReader(source) as reader:
        rows = [list(row.values()) for table, _ in reader.tables() for row in table.to_pylist()]
        return reader.sheet, reader.header_row, reader.names, rows


def big_book(path: Path, rows: int, *, fast: bool = False) -> bytes:
    """A title, a blank row, a header in row 3 and ``rows`` rows of an id, two texts and a number, then a second
    sheet, between two pictures (:func:`workbooks.with_pictures`). ``fast``: written by openpyxl's write-only mode,
    which writes no ``<dimension>`` (a sheet's size)."""
    header = ["id", "name", "city", "amount"]
    data = ([i, f"name {i}", f"city {i % 5000}", i * 0.5] for i in range(rows))
    if fast:
        book = OpenpyxlWorkbook(write_only=True)
        sheet = book.create_sheet("Big")
        for row in [["Customer export"], [], header, *data]:
            sheet.append(row)
        book.create_sheet("Notes").append(["note"])
        book.save(path)
        return with_pictures(path.read_bytes())
    xbook = xlsxwriter.Workbook(str(path))
    xsheet = xbook.add_worksheet("Big")
    xsheet.write_row(0, 0, ["Customer export"])
    xsheet.write_row(2, 0, header)
    for i, row in enumerate(data):
        xsheet.write_row(3 + i, 0, row)
    xbook.add_worksheet("Notes").write_row(0, 0, ["note"])
    xbook.close()
    return with_pictures(path.read_bytes())


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The 20,000-row book of :func:`big_book`, written once for the tests that only read it (a second each)."""
    return big_book(tmp_path_factory.mktemp("big") / "big.xlsx", 20_000)


@pytest.fixture(scope="module")
def big_whole(big: bytes) -> tuple[str, int, list[str], list[list[str]]]:
    """:func:`big` read whole (once: the tests compare with it, never change it)."""
    return rows_of(io.BytesIO(big))


def test_a_sparse_file_reads_what_was_sent_and_refuses_what_was_not() -> None:
    file = SparseFile(100, [(10, b"abcde"), (13, b"defgh"), (90, b"0123456789xyz")])  # overlapping ranges join
    assert file.seek(0, 2) == 100 and file.held() == 8 + 10
    file.seek(11)
    assert file.read(100) == b"bcdefgh"  # a short read: to the end of the range that holds the position
    with pytest.raises(NotSent, match="byte 18 of the file was not sent"):
        file.read(1)
    assert file.ran_out
    file.seek(95)
    assert file.read() == b"56789" and file.read() == b""  # the file ends at its size, whatever was sent
    file.seek(0)
    with pytest.raises(NotSent):
        file.read(4)


@pytest.mark.parametrize(
    ("build", "sheet", "shown"), [(xlsxwriter_book, "Customers", SHOWN), (openpyxl_book, "Data", OPENPYXL_SHOWN)]
)
def test_what_the_browser_sends_reads_as_the_whole_workbook(tmp_path: Path, build, sheet: str, shown) -> None:
    data = build(tmp_path / "book.xlsx").read_bytes()
    # Not the small book whole (in the first 64 KB): only the ranges the browser picks hold its parts.
    padded = with_pictures(data)
    whole, part = rows_of(io.BytesIO(padded)), rows_of(sent(padded))
    assert part == whole == (sheet, 3, HEADER, shown)
    assert [(s.name, s.rows) for s in list_sheets(sent(padded))] == [(sheet, 5), ("Prices", len(PRICES))]
    # The pictures stay in the browser: the directory, the small parts and the sheets' starts go (with the
    # first 64 KB the page always has), and that state goes back to the app with every run of the page.
    assert sum(len(part) for _at, part in browser_ranges(padded)) < 16 * 1024


def test_where_the_bytes_sent_end_the_rows_end_and_each_shown_is_the_files(big: bytes, big_whole) -> None:
    data = big
    _sheet, header, names, every = big_whole
    source = sent(data)
    sheet, found, seen, first = rows_of(source)
    assert (sheet, found, seen) == ("Big", header, names) == ("Big", 3, ["id", "name", "city", "amount"])
    assert 1_000 < len(first) < len(every) and first == every[: len(first)]  # a prefix, exactly the file's
    assert source.ran_out
    assert [(s.name, s.rows) for s in list_sheets(sent(data))] == [("Big", 20_003), ("Notes", 1)]  # <dimension>


def test_a_sheet_without_a_dimension_has_its_rows_counted_when_the_task_runs(tmp_path: Path) -> None:
    data = big_book(tmp_path / "fast.xlsx", 20_000, fast=True)
    assert [(s.name, s.rows) for s in list_sheets(sent(data))] == [("Big", None), ("Notes", 1)]
    assert [(s.name, s.rows) for s in list_sheets(io.BytesIO(data))] == [("Big", 20_003), ("Notes", 1)]
    _sheet, _header, _names, every = rows_of(io.BytesIO(data))
    _sheet, _header, _names, first = rows_of(sent(data))
    assert first and first == every[: len(first)]


def test_a_text_past_the_shared_strings_sent_is_a_marker_never_another_text(big: bytes, big_whole) -> None:
    data = big
    few = {**WORKBOOK_BYTES, "strings": 4096}  # the texts of the first few hundred rows only
    _sheet, _header, _names, every = big_whole
    _sheet, _header, _names, first = rows_of(sent(data, few))
    marked = [i for i, row in enumerate(first) if NOT_SENT_TEXT in row]
    assert 10 < marked[0] < len(first) - 1
    for got, want in zip(first, every, strict=False):
        assert all(g in (w, NOT_SENT_TEXT) for g, w in zip(got, want, strict=True)), (got, want)
    assert all(NOT_SENT_TEXT not in row for row in first[: marked[0]])


def test_a_small_part_that_was_not_sent_whole_is_not_read_at_all(tmp_path: Path) -> None:
    """Styles cut short would read as no number formats (dates as serial numbers): a part is whole or not read."""
    data = with_pictures(xlsxwriter_book(tmp_path / "book.xlsx").read_bytes())
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        styles = z.getinfo("xl/styles.xml")
    # Its second half not sent (whatever range held it): its start is there, its end is not.
    gap = styles.header_offset + 30 + len("xl/styles.xml") + styles.compress_size // 2, styles.header_offset + 2048
    ranges = [(0, data[:PROBE]), *browser_ranges(data)]
    kept = [(at, part[: max(0, gap[0] - at)]) for at, part in ranges] + [
        (max(at, gap[1]), part[max(0, gap[1] - at) :]) for at, part in ranges if at + len(part) > gap[1]
    ]
    source = SparseFile(len(data), kept)
    with pytest.raises(NotSent):
        rows_of(source)
    found = inspect_upload("book.xlsx", len(data), SparseFile(len(data), kept))
    assert found.ok and found.preview is None and "checked when you submit" in found.note


@pytest.mark.parametrize("case", ["encrypted", "xls", "not a workbook", "no table", "bomb"])
def test_a_workbook_that_cannot_be_read_gets_the_readers_sentence_from_what_was_sent(tmp_path: Path, case: str) -> None:
    data, words = bad_workbooks(tmp_path)[case]
    if data.startswith(b"PK"):
        data = with_pictures(data)
        ranges = tuple(browser_ranges(data))
    else:
        data, ranges = _ole2_far(data)
    found = inspect_upload("book.xlsx", len(data), Chosen("f", "book.xlsx", len(data), data[:PROBE], ranges).sparse())
    assert not found.ok and words.lower() in found.problem.lower(), found.problem  # as a sentence: a capital


def _ole2_far(data: bytes) -> tuple[bytes, tuple[tuple[int, bytes], ...]]:
    """An OLE2 file whose directory (the names of its streams) is past the first 64 KB, as in a large encrypted
    workbook, and the range the browser sends of it: its first directory sector, which the header names."""
    sector = 196  # 512-byte sectors: the directory starts at byte 197 * 512, past 64 KB
    header = bytearray(data[:512])
    header[0x1E:0x20] = (9).to_bytes(2, "little")  # sectors of 2**9 bytes
    header[0x30:0x34] = sector.to_bytes(4, "little")
    far = bytes(header) + bytes(sector * 512) + data[512:] + bytes(4096)
    at = (sector + 1) * 512
    return far, ((at, far[at : at + 8192]),)


def test_a_header_row_past_the_rows_sent_is_left_to_the_submit_one_past_the_sheet_is_refused(big: bytes) -> None:
    data = big
    far = InputFormat(kind="xlsx", sheet="Big", header_row=15_000)  # in the sheet, not in the part sent
    found = inspect_upload("big.xlsx", len(data), sent(data), input_format=far)
    assert found.ok and found.input_format == far and not found.columns
    assert "the whole file is checked when you submit" in found.note
    whole = inspect_upload("big.xlsx", len(data), io.BytesIO(data), input_format=far)
    assert whole.ok and whole.columns == ["14996", "name 14996", "city 4996", "7498"]  # row 15,000 as the header
    beyond = InputFormat(kind="xlsx", sheet="Big", header_row=25_000)
    refused = inspect_upload("big.xlsx", len(data), io.BytesIO(data), input_format=beyond)
    assert refused.problem == "Sheet 'Big' has nothing in row 25,000 or under it."
