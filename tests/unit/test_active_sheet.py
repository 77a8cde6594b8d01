"""A workbook's default sheet is the one it opens on in Excel (its active tab: the sheet it was saved on),
else the first visible one — in the reader, on the New task page and in the task a worker runs."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import openpyxl
import pytest
from worked import worked

from s3task.csvio import InputFormat
from s3task.csvio.sheetreader import WorkbookReader
from s3task.csvio.workbook import open_workbook
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from ui.csvfile import inspect_upload

ADA = Actor("ada")
CUSTOMERS = [["customer_id", "email"], ["C1", "ann@example.com"], ["C2", "bob@example.com"]]


def book(path: Path, *, active: int, hidden: str | None = None, chart_first: bool = False) -> bytes:
    """Notes (a header, no rows), then Customers; saved on tab ``active`` (a chart sheet counts as a tab)."""
    wb = openpyxl.Workbook()
    notes = wb.active
    assert notes is not None
    notes.title = "Notes"
    notes.append(["read me first"])
    customers = wb.create_sheet("Customers")
    for row in CUSTOMERS:
        customers.append(row)
    if chart_first:
        wb.create_chartsheet("Chart", 0)
    if hidden:
        wb[hidden].sheet_state = "hidden"
    wb.active = active
    wb.save(path)
    return path.read_bytes()


def test_the_sheet_saved_on_is_read_when_none_is_named(tmp_path: Path) -> None:
    data = book(tmp_path / "b.xlsx", active=1)
    assert open_workbook(io.BytesIO(data)).sheet(None).name == "Customers"
    with WorkbookReader(io.BytesIO(data), None, None) as reader:
        assert reader.sheet == "Customers" and reader.names == CUSTOMERS[0]
    # Saved on the first sheet, the first sheet it is (as before).
    assert open_workbook(io.BytesIO(book(tmp_path / "a.xlsx", active=0))).sheet(None).name == "Notes"


def test_the_active_tab_counts_chart_sheets_and_a_hidden_active_sheet_gives_the_first_visible(tmp_path: Path) -> None:
    # Tabs: Chart, Notes, Customers — tab 2 is Customers, though it is the second worksheet.
    assert open_workbook(io.BytesIO(book(tmp_path / "c.xlsx", active=2, chart_first=True))).sheet(None).name == (
        "Customers"
    )
    # Tab 0 is the chart sheet, which has no cells: the first visible worksheet.
    assert open_workbook(io.BytesIO(book(tmp_path / "d.xlsx", active=0, chart_first=True))).sheet(None).name == (
        "Notes"
    )
    hidden = book(tmp_path / "e.xlsx", active=1, hidden="Customers")
    assert open_workbook(io.BytesIO(hidden)).sheet(None).name == "Notes"


def test_the_new_task_page_starts_on_the_sheet_saved_on(tmp_path: Path) -> None:
    data = book(tmp_path / "b.xlsx", active=1)
    found = inspect_upload("b.xlsx", len(data), io.BytesIO(data))
    assert found.ok, found.problem
    assert [s.name for s in found.sheets] == ["Notes", "Customers"]  # both offered, in the workbook's order
    assert found.input_format == InputFormat(kind="xlsx", sheet="Customers", header_row=1)
    assert [found.columns, *found.preview.values.tolist()] == CUSTOMERS


@pytest.mark.parametrize("via", ["named by the page", "left out (CLI, API)"])
def test_the_task_reads_the_sheet_saved_on(tmp_path: Path, via: str) -> None:
    service = TaskService(LocalStore(tmp_path / "store"), Layout("batch-tasks"))
    data = book(tmp_path / "b.xlsx", active=1)
    fmt = {"kind": "xlsx", "sheet": "Customers"} if via == "named by the page" else {"kind": "xlsx"}
    done = worked(service, ADA, data, task_type="copy", input_format=fmt)
    assert done.status == "completed" and done.input_format.sheet == "Customers"
    out = service.store.get(done.output_object_path).body.decode("utf-8-sig")  # the output starts with a BOM
    assert list(csv.reader(io.StringIO(out))) == CUSTOMERS


def notes_then_table(path: Path, table_rows: int) -> bytes:
    """A two-row "Read me" sheet, saved on, and a "Data" sheet of ``table_rows`` customers."""
    wb = openpyxl.Workbook()
    notes = wb.active
    assert notes is not None
    notes.title = "Read me"
    notes.append(["This export holds March's customers."])
    notes.append(["Questions: the CRM team."])
    data = wb.create_sheet("Data")
    data.append(CUSTOMERS[0])
    for i in range(table_rows):
        data.append([f"C{i}", f"user{i}@example.com"])
    wb.active = 0
    wb.save(path)
    return path.read_bytes()


def test_a_workbook_saved_on_its_notes_is_read_from_the_table_beside_them(tmp_path: Path) -> None:
    """Issue 36 item 11: saved on a 2-row "Read me" sheet, with 20,011 rows on the next, it was read from the
    notes, with no hint. A sheet of notes opened on gives way to a sheet that holds a table; the preview says so."""
    data = notes_then_table(tmp_path / "n.xlsx", 500)
    with WorkbookReader(io.BytesIO(data), None, None) as reader:
        assert reader.sheet == "Data" and reader.names == CUSTOMERS[0]
    seen = inspect_upload("n.xlsx", len(data), io.BytesIO(data))
    assert seen.input_format is not None and seen.input_format.sheet == "Data"
    assert seen.note is not None and "opens on its sheet 'Read me' (2 rows); the table on 'Data' (501 rows)" in (
        seen.note
    )
    # A small second sheet is no table: the sheet saved on is read, as before.
    with WorkbookReader(io.BytesIO(notes_then_table(tmp_path / "s.xlsx", 5)), None, None) as reader:
        assert reader.sheet == "Read me"
