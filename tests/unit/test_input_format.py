"""A task's input format knows workbooks: the kind told from the first bytes, a sheet and a header row,
stored so that every record and request written before still means a CSV read as it was."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest
from workbooks import HEADER, PRICES, SHOWN, xlsxwriter_book

from s3task import processing
from s3task.csvio import InputFormat, detect_kind, parse_input_format, read_start, resolve, spooled
from s3task.errors import InvalidInput, S3TaskError

OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)


def test_a_csv_format_is_stored_as_it_always_was() -> None:
    semicolons = InputFormat(";", "windows-1252")
    assert semicolons.to_dict() == {"delimiter": ";", "encoding": "windows-1252"}
    assert InputFormat.from_dict({"delimiter": ";", "encoding": "windows-1252"}) == semicolons
    assert InputFormat.from_dict({}) == InputFormat.from_dict(None) == InputFormat()  # records without a format
    assert InputFormat().kind == "csv" and not InputFormat().is_workbook
    assert semicolons.describe() == "Separated by semicolons · Windows (Western European) text"
    # A request that names none of the new settings gives the two keys it always gave (no kind: detected).
    assert parse_input_format({"delimiter": "detect"}, allow_detect=True) == {
        "delimiter": "detect",
        "encoding": "utf-8",
    }


def test_a_workbook_format_keeps_its_sheet_and_header_row() -> None:
    taken = InputFormat(kind="xlsx", sheet="Orders", header_row=3)
    assert taken.to_dict() == {"kind": "xlsx", "sheet": "Orders", "header_row": 3}
    assert InputFormat.from_dict(taken.to_dict()) == taken and taken.is_workbook
    assert taken.describe() == "Excel workbook · sheet 'Orders' · header in row 3"
    defaults = InputFormat(kind="xlsx")
    assert defaults.to_dict() == {"kind": "xlsx"}
    assert defaults.describe() == "Excel workbook · the sheet it opens on · header row found under any title"
    assert InputFormat.from_dict({"kind": "xlsm"}) == defaults  # .xlsm is read as .xlsx is


def test_requests_are_checked_setting_by_setting() -> None:
    # None is "left out" (the API's model gives None for what the caller did not send).
    assert parse_input_format({"sheet": "Prices", "header_row": 2, "kind": None}, allow_detect=True) == {
        "delimiter": ",",
        "encoding": "utf-8",
        "sheet": "Prices",
        "header_row": 2,
    }
    for bad, words in [
        ({"sheet": ""}, "sheet must be a sheet's name, 1 to 255 characters"),
        ({"sheet": "x" * 256}, "sheet must be a sheet's name"),
        ({"sheet": 3}, "sheet must be text (a sheet's name), not int"),
        ({"header_row": 0}, "header_row must be a row as Excel numbers them, 1 to 1,048,576, not 0"),
        ({"header_row": 1_048_577}, "1 to 1,048,576, not 1,048,577"),
        ({"header_row": "3"}, "header_row must be a whole number, not str"),
        ({"header_row": True}, "header_row must be a whole number, not bool"),
        ({"kind": "ods"}, "kind must be one of 'csv', 'xlsx' or 'detect', not 'ods'"),
        ({"kind": "csv", "sheet": "Data"}, "a sheet and a header row are for Excel workbooks"),
        ({"quote": "'"}, "no setting 'quote'; it has delimiter, encoding, kind, sheet and header_row"),
    ]:
        with pytest.raises(InvalidInput, match=words.replace("(", r"\(").replace(")", r"\)")):
            parse_input_format(bad, allow_detect=True)
    with pytest.raises(InvalidInput, match="kind must be one of 'csv', 'xlsx', not 'detect'"):
        InputFormat.from_dict({"kind": "detect"})  # a stored format is settled


def test_the_kind_is_told_from_the_first_bytes_and_a_csv_refuses_workbook_settings(tmp_path: Path) -> None:
    book = xlsxwriter_book(tmp_path / "book.xlsx").read_bytes()
    assert [detect_kind(head) for head in (book, OLE2, b"id,name\n1,a\n", b"PK,x\n")] == ["xlsx", "xlsx", "csv", "csv"]
    asked = parse_input_format({"delimiter": ";", "sheet": "Prices"}, allow_detect=True)
    # A workbook has no delimiter: one asked for is not its concern (the CLI and the page always send one).
    assert resolve(asked, book[:4096], whole=False) == InputFormat(kind="xlsx", sheet="Prices")
    with pytest.raises(InvalidInput, match="the file is CSV text, not an Excel workbook: it has no sheets"):
        resolve(asked, b"id;name\n1;a\n", whole=True)
    plain = parse_input_format({"delimiter": "detect", "encoding": "detect"}, allow_detect=True)
    assert resolve(plain, b"id;name\n1;a\n", whole=True) == InputFormat(";", "utf-8")
    # Told "csv", a workbook is read as CSV text, and the CSV reader refuses it as it always has.
    as_text = resolve({**plain, "kind": "csv"}, book[:4096], whole=False)
    with pytest.raises(InvalidInput, match="Excel workbook"):
        read_start(book[:4096], whole=False, input_format=as_text)


def test_a_workbook_is_processed_with_exact_progress_into_the_same_csv(tmp_path: Path) -> None:
    path = xlsxwriter_book(tmp_path / "book.xlsx")
    seen: list[int] = []
    sink = io.BytesIO()
    with path.open("rb") as source:
        counts = processing.run(
            "copy", {}, source, sink, lambda c: seen.append(c.bytes_processed), input_format=InputFormat(kind="xlsx")
        )
        assert not source.closed  # the caller's file is the caller's
    rows = list(csv.reader(io.StringIO(sink.getvalue().decode("utf-8-sig"))))
    assert rows == [HEADER, *SHOWN]
    assert counts.processed_count == 2 and seen == sorted(seen) and seen[-1] == path.stat().st_size
    sink = io.BytesIO()
    with path.open("rb") as source:
        processing.run("copy", {}, source, sink, lambda c: None, input_format=InputFormat(kind="xlsx", sheet="Prices"))
    assert list(csv.reader(io.StringIO(sink.getvalue().decode("utf-8-sig")))) == PRICES


def test_a_spooled_copy_has_no_name_and_exactly_the_size_it_was_stored_with(tmp_path: Path) -> None:
    data = os.urandom(3 << 20)
    with spooled(io.BytesIO(data), len(data), directory=str(tmp_path)) as copy:
        assert copy.read() == data
        assert os.listdir(tmp_path) == []  # nothing to clean up after a killed process
    with pytest.raises(S3TaskError, match="longer than the 1,000 bytes"), spooled(io.BytesIO(data), 1000):
        pass
    with (
        pytest.raises(S3TaskError, match="ends after 3,145,728 of its 4,000,000 bytes"),
        spooled(io.BytesIO(data), 4_000_000),
    ):
        pass
    with (
        pytest.raises(S3TaskError, match=r"not enough free disk space in .* to read the workbook"),
        spooled(io.BytesIO(data), 1 << 60),
    ):
        pass


def test_the_new_task_page_prefills_a_workbook_format_and_a_csv_format() -> None:
    from s3task import handlers
    from s3task.record import TaskRecord
    from ui.task_form import FormKeys, prefill

    fields = {"task_id": "7ABC", "task_name": "March", "created_by": "ann", "task_type": "copy"}
    book = TaskRecord(**fields, input_format={"kind": "xlsx", "sheet": "Customers", "header_row": 3})
    filled = prefill(FormKeys(0), "7ABC", book, handlers.all_types())
    assert filled.type_name == "copy"
    assert filled.input_format == InputFormat(kind="xlsx", sheet="Customers", header_row=3)  # the page reads workbooks
    semicolons = TaskRecord(**fields, input_format={"delimiter": ";", "encoding": "utf-8"})
    assert prefill(FormKeys(0), "7ABC", semicolons, handlers.all_types()).input_format == InputFormat(";")
