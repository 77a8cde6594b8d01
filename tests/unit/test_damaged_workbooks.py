"""Workbooks damaged inside a part (found by an outside review): a CRC that does not match, deflate data
that does not unpack. Each is one plain sentence, a bad input — at the page's preview, at submit (no task
left behind) and in the worker (failed for good, not retried) — and a sheet listed many times is read once."""

from __future__ import annotations

import io
import re
import struct
import zipfile
from pathlib import Path

import pytest
from workbooks import xlsxwriter_book

from s3task.csvio import workbook
from s3task.csvio.sheetreader import WorkbookReader
from s3task.errors import InvalidInput
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from ui.csvfile import inspect_upload

SHEET = "xl/worksheets/sheet1.xml"
DAMAGED = "the workbook is damaged or packed in a way Excel does not write"


def rebuilt(good: bytes, sheet_xml: bytes | None = None) -> bytearray:
    """``good`` written again (its first sheet's XML replaced), every part deflated."""
    source, out = zipfile.ZipFile(io.BytesIO(good)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as book:
        for info in source.infolist():
            book.writestr(info.filename, sheet_xml if info.filename == SHEET and sheet_xml else source.read(info))
    return bytearray(out.getvalue())


def wrong_crc(data: bytearray) -> bytes:
    """The first sheet's CRC changed, in its local header and in the directory."""
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo(SHEET)
    bad = (info.CRC ^ 0xFFFF) & 0xFFFFFFFF
    struct.pack_into("<I", data, info.header_offset + 14, bad)
    at = data.find(b"PK\x01\x02" + bytes(data[data.find(b"PK\x01\x02") + 4 : data.find(b"PK\x01\x02") + 4]))
    while True:
        at = data.find(b"PK\x01\x02", at)
        length = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + length].decode() == SHEET:
            break
        at += 4
    struct.pack_into("<I", data, at + 16, bad)
    return bytes(data)


def flipped(data: bytearray, past: int) -> bytes:
    """Bytes of the first sheet's compressed data turned over, ``past`` bytes into it."""
    info = zipfile.ZipFile(io.BytesIO(bytes(data))).getinfo(SHEET)
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len + past
    for i in range(start, start + 6):
        data[i] ^= 0xFF
    return bytes(data)


@pytest.fixture
def good(tmp_path: Path) -> bytes:
    return xlsxwriter_book(tmp_path / "book.xlsx").read_bytes()


def damaged(good: bytes) -> dict[str, bytes]:
    return {"wrong CRC": wrong_crc(rebuilt(good)), "data that does not unpack": flipped(rebuilt(good), 8)}


def test_a_damaged_part_is_one_sentence_at_the_preview(good: bytes) -> None:
    for what, data in damaged(good).items():
        seen = inspect_upload("book.xlsx", len(data), io.BytesIO(data))
        assert seen.problem is not None and DAMAGED in seen.problem.lower().replace("excel", "Excel"), what


def test_a_damaged_part_is_refused_at_submit_and_leaves_no_task(tmp_path: Path, good: bytes) -> None:
    service = TaskService(LocalStore(tmp_path / "store"), Layout())
    for what, data in damaged(good).items():
        with pytest.raises(InvalidInput, match=DAMAGED):
            service.submit_file(Actor("ann"), what, "copy", None, data)
    assert service.list(Actor("ann")).tasks == []


def test_damage_past_the_header_fails_the_read_as_a_bad_input(good: bytes) -> None:
    rows = b"".join(b'<row r="%d"><c r="A%d" t="inlineStr"><is><t>v%d</t></is></c></row>' % (i, i, i)
                    for i in range(2, 60_000))  # fmt: skip
    head = b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    header = b'<row r="1"><c r="A1" t="inlineStr"><is><t>h</t></is></c></row>'
    data = wrong_crc(rebuilt(good, head + header + rows + b"</sheetData></worksheet>"))  # checked at the part's end
    with pytest.raises(InvalidInput, match=DAMAGED), WorkbookReader(io.BytesIO(data), "Customers", 1) as reader:
        for _table in reader.tables():
            pass


def test_a_sheet_listed_many_times_is_read_once(good: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    # A crafted workbook.xml may list one large sheet hundreds of times (at most 1,000): each listing read it again.
    source = zipfile.ZipFile(io.BytesIO(good))
    main = source.read("xl/workbook.xml")
    first = main[main.index(b"<sheet ") : main.index(b"/>", main.index(b"<sheet ")) + 2]
    listed = main.replace(first, b"".join(first.replace(b'name="', b'name="%d' % i) for i in range(900)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as book:
        for info in source.infolist():
            book.writestr(info.filename, listed if info.filename == "xl/workbook.xml" else source.read(info))
    reads: list[str] = []
    real = workbook._used_rows
    monkeypatch.setattr(
        workbook, "_used_rows", lambda archive, part, budget: reads.append(part) or real(archive, part, budget)
    )
    book = workbook.open_workbook(io.BytesIO(out.getvalue()))
    assert len(book.sheets) == 901 and book.sheets[0].rows == book.sheets[899].rows == 5  # "Customers · 5 rows"
    assert sorted(reads) == sorted({s.part for s in book.sheets})  # each part once


@pytest.mark.parametrize(
    ("part", "said"),
    [("word/document.xml", "this is a Word document (.docx), not an Excel workbook"),
     ("ppt/presentation.xml", "this is a PowerPoint file (.pptx), not an Excel workbook")],
)  # fmt: skip
def test_a_word_or_powerpoint_file_is_named_as_what_it_is(part: str, said: str) -> None:
    """Issue 36 item 18: a Word document was refused as "a zip file", words from inside the code."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr(part, "<document/>")
    with pytest.raises(InvalidInput, match=re.escape(said)):
        workbook.open_workbook(io.BytesIO(out.getvalue()))
