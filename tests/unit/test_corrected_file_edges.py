"""Corrected files at their edges, as an outside review sent them: a cell with a lone CR in the errors workbook
sent back untouched, row numbers that are not ASCII digits or are too long, a CSV split by a bare CR, rows
cleared in Excel (a CSV's line of only delimiters), and damaged workbooks. Each is run again exactly or
refused in the upload's words (an InvalidInput, which the page shows plainly), and a refused one makes
nothing: no correction is listed on the original."""

from __future__ import annotations

import csv
import io
import struct
import zipfile
from pathlib import Path

import openpyxl
import pytest
from support import csv_bytes
from worked import work, worked

from s3task.csvio import read_start
from s3task.errors import InvalidInput
from s3task.exports.errorbook import ROW_COLUMN
from s3task.layout import Layout
from s3task.record import TaskRecord
from s3task.records import read_record
from s3task.states import Status
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.tasks.corrected_file import CorrectedRows, read_corrected

ADA = Actor("ada")
#: Rows 3 and 5 have errors (their addresses); row 3's note holds a lone CR, row 5's quotes and spaces.
ROWS = [
    ["name", "mail", "note"],
    ["Ada", "ada@example.com", ""],
    ["Bob", "bob at example.com", "line one\rline two"],
    ["Cy", "cy@example.com", "ok"],
    ["Dee", "dee@", '  "padded", with a comma  '],
]
#: Cells a corrected file may hold, each to come back exactly in the new task's input.
AWKWARD = [
    ["a\rb", "c\nd", "e\r\nf"],
    ["\r", "\n", "\r\n"],
    ['say "hi"', "x,y", "  both ends  "],
    ["trailing\r", "\rleading", '"'],
    ["", ";", "é ✓\t"],
]


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


@pytest.fixture
def original(service: TaskService) -> TaskRecord:
    record = worked(service, ADA, csv_bytes(ROWS))
    assert record.error_count == 2
    return record


def errors_book_bytes(service: TaskService, task_id: str) -> bytes:
    service.ensure_output(ADA, task_id, "errors-xlsx")
    with service.open_output(ADA, task_id, "errors-xlsx") as f:
        return f.read()


def saved(rows: list[list[object]]) -> bytes:
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def listed(service: TaskService, task_id: str) -> list[str]:
    """The corrections the original's record lists, as stored."""
    return read_record(service.store, service.layout, task_id)[0].corrections


def input_rows(service: TaskService, record: TaskRecord) -> list[list[str]]:
    """The new task's stored input, read back by the reader its worker reads it with."""
    _names, table = read_start(service.store.get(record.input_object_path).body, whole=True)
    return [list(row.values()) for row in table.to_pylist()]


# --- 1. the new task's input holds every cell exactly ------------------------------------------------------


def test_the_new_tasks_input_reads_back_as_the_corrected_cells_exactly() -> None:
    data = CorrectedRows(list(range(2, 2 + len(AWKWARD))), AWKWARD).input_csv(["a", "b", "c"])
    names, table = read_start(data, whole=True)
    assert names == ["a", "b", "c"]
    assert [list(row.values()) for row in table.to_pylist()] == AWKWARD


def test_the_errors_workbook_sent_back_untouched_runs_its_rows_as_they_were(
    service: TaskService, original: TaskRecord
) -> None:
    made = service.submit_correction(ADA, original.task_id, errors_book_bytes(service, original.task_id))
    assert made.status == Status.QUEUED
    assert input_rows(service, made) == [ROWS[2], ROWS[4]]  # the lone CR; the quotes, the comma, the spaces
    done = work(service, made.task_id)
    assert (done.status, done.row_count, done.error_count) == (Status.COMPLETED, 2, 2)  # still wrong addresses


def test_a_corrected_csv_with_cr_in_quoted_cells_runs_them_exactly(service: TaskService, original: TaskRecord) -> None:
    header = [ROW_COLUMN, *ROWS[0]]
    data = csv_bytes([header, ["3", "B\rob", "bob@example.com", "x\r\ny"], ["5", "Dee", "dee@example.com", "\r"]])
    made = service.submit_correction(ADA, original.task_id, data)
    assert input_rows(service, made) == [["B\rob", "bob@example.com", "x\r\ny"], ["Dee", "dee@example.com", "\r"]]
    assert work(service, made.task_id).error_count == 0


# --- 2. a bad row number is refused naming the row, never a crash -------------------------------------------


@pytest.mark.parametrize(
    "number",
    ["²", "٣", "３", "9" * 5000, "3.5", "", "1", "-3"],
    ids=["superscript", "arabic-indic", "fullwidth", "5000 digits", "fraction", "empty", "the header", "negative"],
)
def test_a_row_number_that_is_not_one_in_ascii_digits_is_refused_naming_the_row(
    service: TaskService, original: TaskRecord, number: str
) -> None:
    book = openpyxl.load_workbook(io.BytesIO(errors_book_bytes(service, original.task_id)))
    rows = [list(row) for row in book.active.iter_rows(values_only=True)]
    rows[1][1] = number
    with pytest.raises(InvalidInput, match=f"^row 2 of the file: {ROW_COLUMN} must be the row number") as e:
        service.submit_correction(ADA, original.task_id, saved(rows))
    assert len(str(e.value)) < 300  # a 5,000-digit value is not said back whole
    assert listed(service, original.task_id) == []


def test_a_csv_split_by_a_bare_cr_is_refused_naming_the_row(service: TaskService, original: TaskRecord) -> None:
    data = f"{ROW_COLUMN},name,mail,note\n3,Bob,bob@example.com,x\n5,D\ree,dee@example.com,y\n".encode()
    with pytest.raises(InvalidInput, match=r"^row 3 \(row in file 5\): 2 values where the header has 4 columns"):
        service.submit_correction(ADA, original.task_id, data)
    assert listed(service, original.task_id) == []


def zip_with(data: bytes, edit: str) -> bytes:
    """A workbook's zip damaged as ``edit`` says: a part its lists name left out, a central directory said to
    start further in than it does (its members' offsets then fall before the file's start), a member needing
    an unknown zip version."""
    if edit == "no styles":
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
            for info in src.infolist():
                if info.filename != "xl/styles.xml":
                    dst.writestr(info, src.read(info))
        return out.getvalue()
    end = data.rindex(b"PK\x05\x06")
    if edit == "central directory moved":
        offset = struct.unpack_from("<I", data, end + 16)[0]
        return data[: end + 16] + struct.pack("<I", offset + 100_000) + data[end + 20 :]
    start = struct.unpack_from("<I", data, end + 16)[0]  # the first central directory entry
    return data[: start + 6] + struct.pack("<H", 117) + data[start + 8 :]  # "version needed to extract": 11.7


@pytest.mark.parametrize("edit", ["no styles", "central directory moved", "zip version 11.7"])
def test_a_damaged_workbook_is_refused_as_damaged(service: TaskService, original: TaskRecord, edit: str) -> None:
    damaged = zip_with(errors_book_bytes(service, original.task_id), edit)
    with pytest.raises(InvalidInput, match="the workbook is damaged"):
        service.submit_correction(ADA, original.task_id, damaged)
    assert listed(service, original.task_id) == []


# --- 3. a cleared row is skipped, in a CSV as in a workbook -----------------------------------------------


def csv_line(row: list[str]) -> str:
    out = io.StringIO(newline="")
    csv.writer(out, delimiter=";", lineterminator="\r\n").writerow(row)
    return out.getvalue()


def test_rows_cleared_in_excel_are_skipped_in_a_csv_as_in_a_workbook(
    service: TaskService, original: TaskRecord
) -> None:
    book = openpyxl.load_workbook(io.BytesIO(errors_book_bytes(service, original.task_id)))
    sheet = book.active
    sheet["D2"], sheet["E2"] = "bob@example.com", "call first"  # (openpyxl reads a CR back as _x000D_)
    rows = [["" if c is None else str(c) for c in row] for row in sheet.iter_rows(values_only=True)]
    cleared = ";;;;\r\n"  # what Excel's "CSV" writes for a row cleared inside the used range (5 columns)
    line = [csv_line(row) for row in rows]
    data = line[0] + line[1] + cleared + line[2] + cleared + cleared
    from_csv = service.submit_correction(ADA, original.task_id, data.encode("cp1252"))
    sheet.insert_rows(3)  # a cleared row between the two, formatted: Excel keeps such a row in the file
    for cell in sheet[3][:5]:
        cell.value, cell.number_format = None, "@"
    out = io.BytesIO()
    book.save(out)
    from_book = service.submit_correction(ADA, original.task_id, out.getvalue())
    expected = [["Bob", "bob@example.com", "call first"], ROWS[4]]
    assert input_rows(service, from_csv) == input_rows(service, from_book) == expected


def test_a_row_with_only_its_error_left_is_not_a_cleared_row() -> None:
    names, added = ["name", "mail"], ("error", ROW_COLUMN)
    data = f"error,{ROW_COLUMN},name,mail\ninvalid,3,Bob,bob@example.com\ninvalid,,,\n".encode()
    with pytest.raises(InvalidInput, match=f"^row 3 of the file: {ROW_COLUMN} must be the row number"):
        read_corrected(data, names, added, {3, 5})
    cleared = read_corrected(data.replace(b"invalid,,,", b",,,"), names, added, {3, 5})
    assert (cleared.rows, cleared.cells) == ([3], [["Bob", "bob@example.com"]])


def test_a_file_of_only_cleared_rows_has_nothing_to_run(service: TaskService, original: TaskRecord) -> None:
    data = f"error,{ROW_COLUMN},name,mail,note\r\n,,,,\r\n,,,,\r\n".encode()
    with pytest.raises(InvalidInput, match="the file has no rows under its header"):
        service.submit_correction(ADA, original.task_id, data)
    assert listed(service, original.task_id) == []
