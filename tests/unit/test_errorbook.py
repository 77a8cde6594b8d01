"""The rows with errors as an Excel workbook: each row's error, its row as Excel numbers it in the file the
task read, and its cells as they were read, so staff can find the record in their file and fix it.

The tasks are completed as a worker completes them (the worker's engine, ``s3task.processing.run``, over
the stored input); the workbook is read back with openpyxl, not the writer.
"""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pytest
import xlsxwriter  # type: ignore[import-untyped]
from support import csv_bytes
from worked import worked

from s3task import exports
from s3task.exports.errorbook import ROW_COLUMN, aligned
from s3task.layout import Layout
from s3task.record import TaskRecord
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ADA = Actor("ada")


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


def completed(service: TaskService, data: bytes, task_type: str = "email_enrichment", **form: object) -> TaskRecord:
    """A task over ``data``, run by the worker's engine and completed as a worker completes it."""
    return worked(service, ADA, data, task_type=task_type, input_format=dict(form) or None)


def sheet_rows(service: TaskService, record: TaskRecord) -> list[list[str]]:
    service.ensure_output(ADA, record.task_id, "errors-xlsx")
    with service.open_output(ADA, record.task_id, "errors-xlsx") as f:
        sheet = openpyxl.load_workbook(io.BytesIO(f.read())).active
    return [["" if v is None else v for v in row] for row in sheet.iter_rows(values_only=True)]


def test_a_csvs_error_rows_carry_the_row_excel_shows_and_the_cells_as_read(service: TaskService) -> None:
    # Excel's rows: 1 header, 2 ada, 3 a value over two lines, 4 blank, 5 the bad " Bob@@x ", 6 ok, 7 "no at".
    data = (
        csv_bytes([["name", "email", "note"], ["Ada", "ada@example.com", ""], ["Cy", "cy@example.com", "two\nlines"]])
        + b'\n Bob , Bob@@x ,"=1+1"\nDee,dee@example.com,\nEve,no at,"a, b"\n'
    )
    record = completed(service, data)
    assert record.error_count == 2
    rows = sheet_rows(service, record)
    assert rows[0] == ["error", ROW_COLUMN, "name", "email", "note"]
    assert [r[1] for r in rows[1:]] == ["5", "7"]
    assert rows[1][2:] == [" Bob ", " Bob@@x ", "=1+1"]  # as read: not trimmed, and exactly (no ' added)
    assert rows[2][2:] == ["Eve", "no at", "a, b"]
    assert all(r[0] for r in rows[1:])  # the error says what is wrong
    assert service.output_filename(record, "errors-xlsx").endswith("-errors.xlsx")


def test_rows_are_numbered_over_thousands_of_records_with_line_breaks_in_values(service: TaskService) -> None:
    lines = [["id", "email", "note"]]
    for i in range(1, 3001):
        lines.append([str(i), "bad" if i % 700 == 0 else f"p{i}@example.com", "x\ny" if i % 3 == 0 else ""])
    record = completed(service, csv_bytes(lines))
    rows = sheet_rows(service, record)
    assert [r[2] for r in rows[1:]] == ["700", "1400", "2100", "2800"]
    assert [r[1] for r in rows[1:]] == ["701", "1401", "2101", "2801"]  # one row per record, header row 1


def test_a_workbooks_error_rows_carry_their_row_in_the_sheet(service: TaskService, tmp_path: Path) -> None:
    path = tmp_path / "list.xlsx"
    book = xlsxwriter.Workbook(str(path))
    sheet = book.add_worksheet("People")
    sheet.write(0, 0, "People to write to, March")  # a title, a blank row, then the header in row 3
    sheet.write_row(2, 0, ["name", "email"])
    sheet.write_row(3, 0, ["Ada", "ada@example.com"])
    sheet.write_row(4, 0, ["Bob", "bob at home"])
    sheet.write_row(6, 0, ["Eve", "eve@"])  # row 6 left empty
    book.close()
    record = completed(service, path.read_bytes(), kind="xlsx", sheet="People", header_row=3)
    rows = sheet_rows(service, record)
    assert rows[0][1:] == [ROW_COLUMN, "name", "email"]
    assert [r[1:] for r in rows[1:]] == [["5", "Bob", "bob at home"], ["7", "Eve", "eve@"]]


def test_an_input_column_named_like_an_added_one_is_kept(service: TaskService) -> None:
    record = completed(service, csv_bytes([[ROW_COLUMN, "email"], ["1", "nope"]]))
    rows = sheet_rows(service, record)
    assert rows == [["error", ROW_COLUMN + "_", ROW_COLUMN, "email"], [rows[1][0], "2", "1", "nope"]]


def test_not_offered_where_the_output_rows_are_not_the_input_rows(service: TaskService) -> None:
    record = completed(service, csv_bytes([["email"], ["nope"]]), "profile")
    state = service.export_state(ADA, record.task_id, "errors-xlsx")
    assert state.kind == "refused"


def test_counts_that_do_not_match_are_refused_not_guessed() -> None:
    import numpy as np
    import pyarrow as pa

    def table(n: int) -> pa.Table:
        return pa.table({"error": [""] * n})

    inputs = [(table(3), np.arange(2, 5))]
    with pytest.raises(exports.CannotExport, match="more rows than the input"):
        list(aligned(iter([table(2), table(2)]), iter(inputs)))
    with pytest.raises(exports.CannotExport, match="more rows than the output"):
        list(aligned(iter([table(2)]), iter(inputs)))
    pieces = list(aligned(iter([table(1), table(2)]), iter([(table(2), np.arange(2, 4)), (table(1), np.arange(5, 6))])))
    assert [list(rows) for _out, _cells, rows in pieces] == [[2], [3, 5]]


def test_the_api_and_the_cli_give_the_workbook(service: TaskService, tmp_path: Path, monkeypatch) -> None:
    import requests
    from apps.http_server import serve

    from s3task import cli
    from s3task.config import Settings
    from s3task.web.api import create_app
    from s3task.web.tokens import TokenTable, hash_token
    from s3task.web.transfer import signer_for

    record = completed(service, csv_bytes([["name", "email"], ["Ada", "ada@example.com"], ["Bob", "bob"]]))
    root = str(service.store.root)  # type: ignore[attr-defined]
    api_service = TaskService(service.store, service.layout, url_signer=signer_for(service.store))
    app = create_app(Settings.load({"store": root}, {}), service=api_service, tokens=TokenTable({hash_token("t"): ADA}))
    with serve(app) as base:
        got = requests.get(
            f"{base}/api/tasks/{record.task_id}/output",
            params={"variant": "errors-xlsx"},
            headers={"Authorization": "Bearer t"},
            timeout=60,
        )
        assert got.status_code == 200, got.text
        assert got.json()["filename"].endswith("-errors.xlsx")
        book = requests.get(got.json()["url"], timeout=30)
        assert book.headers["Content-Type"] == exports.CONTENT_TYPES["xlsx"]
        sheet = openpyxl.load_workbook(io.BytesIO(book.content)).active
        assert [c.value for c in sheet[2]][1:] == ["3", "Bob", "bob"]
    monkeypatch.setenv("S3TASK_USER", "ada")
    target = tmp_path / "to-correct.xlsx"
    assert cli.main(["--store", root, "download", record.task_id, "--errors-excel", "-o", str(target)]) == 0
    assert [c.value for c in openpyxl.load_workbook(target).active[1]] == ["error", ROW_COLUMN, "name", "email"]


def test_a_line_break_in_a_cell_written_inline_is_kept() -> None:
    """openpyxl writes a cell's text inline (``<is>``); a value over two lines was read as empty."""
    from openpyxl import Workbook

    from s3task.csvio.sheetreader import WorkbookReader

    book = Workbook()
    book.active.append(["id", "notes"])
    book.active.append(["C002", "called twice,\nno answer"])
    data = io.BytesIO()
    book.save(data)
    with WorkbookReader(io.BytesIO(data.getvalue()), None, 1) as reader:
        rows = [row for table, _end in reader.tables() for row in table.to_pylist()]
    assert rows == [{"id": "C002", "notes": "called twice,\nno answer"}]


def test_rows_are_numbered_as_excel_does_in_a_windows_file(service: TaskService) -> None:
    # Excel's rows: 1 and 2 blank, 3 the header, 4 ok, 5 bad, 6 blank, 7 bad over two lines, no line end.
    data = '\r\n\r\nnom;mail\r\nZoë;zoe@example.com\r\nJosé;jose at home\r\n\r\n"Ana\r\nMaría";ana@\r\n'
    record = completed(service, data.encode("windows-1252")[:-2], delimiter=";", encoding="windows-1252")
    rows = sheet_rows(service, record)
    # A CR in a cell is kept as Excel writes it, _x000D_ (Excel shows a line break; openpyxl the escape).
    got = [[cell.replace("_x000D_", "\r") for cell in r[1:]] for r in rows[1:]]
    assert got == [["5", "José", "jose at home"], ["7", "Ana\r\nMaría", "ana@"]]
