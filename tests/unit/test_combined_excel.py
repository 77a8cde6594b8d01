"""The combined result as an Excel workbook (issue 36, item 14): made from the combined CSV by the Excel copy's
rule, read back with openpyxl (not our writer): the fixes in place, numbers as numbers, dates as dates, ids
with leading zeros or more digits than Excel keeps as text, formula-looking text as text; asked of a
correction, its original's; from the core, the CLI and the API; and refused in words when it cannot fit a
worksheet."""

from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path

import openpyxl
import pytest
from conftest import wait_for
from support import csv_bytes
from worked import work, worked

from s3task import exports
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ADA = Actor("ada")
ROWS = [
    ["customer_id", "email", "amount", "joined", "ref", "note"],
    ["00017", "ann@example.com", "12.50", "2024-01-31", "1234567890123456", "=1+2"],
    ["00018", "bob at home", "7", "2024-02-01", "1234567890123457", "@home"],
    ["00019", "cy@example.com", "-3.25", "2024-02-02", "1234567890123458", ""],
]
TOO_MANY = "an Excel worksheet holds at most"


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


def corrected(service: TaskService, task_id: str, fix: dict[str, str]) -> str:
    """Fix the address of each customer ``fix`` names in the errors workbook, send it back, and run it."""
    service.ensure_output(ADA, task_id, "errors-xlsx")
    with service.open_output(ADA, task_id, "errors-xlsx") as f:
        book = openpyxl.load_workbook(io.BytesIO(f.read()))
    sheet = book.active
    names = [c.value for c in sheet[1]]
    for row in sheet.iter_rows(min_row=2):
        customer = row[names.index("customer_id")]
        row[names.index("email")].value = fix.get(customer.value, row[names.index("email")].value)
    out = io.BytesIO()
    book.save(out)
    made = service.submit_correction(ADA, task_id, out.getvalue())
    work(service, made.task_id)
    return made.task_id


def sheet_of(data: bytes) -> list[list[object]]:
    book = openpyxl.load_workbook(io.BytesIO(data))
    return [[c.value for c in row] for row in book.active.iter_rows()]


def cells_of(data: bytes) -> list[list[openpyxl.cell.cell.Cell]]:
    return [list(row) for row in openpyxl.load_workbook(io.BytesIO(data)).active.iter_rows()]


def combined_csv(service: TaskService, task_id: str) -> list[list[str]]:
    service.ensure_combined(ADA, task_id)
    with service.open_combined(ADA, task_id) as f:
        return list(csv.reader(io.StringIO(f.read().decode("utf-8-sig"), newline="")))


def test_the_combined_workbook_has_the_fixes_in_place_and_typed_columns(service: TaskService) -> None:
    original = worked(service, ADA, csv_bytes(ROWS), name="Customers").task_id
    assert service.combined_state(ADA, original, excel=True).message == "no correction of this task has completed yet"
    correction = corrected(service, original, {"00018": "bob@example.com"})
    # Asked for first, before the CSV: the CSV is made on the way, and the workbook is kept beside it.
    assert service.prepare_combined(ADA, original, excel=True).kind == "preparing"
    state = wait_for(lambda: (s := service.combined_state(ADA, original, excel=True)).kind != "preparing" and s, 60)
    assert state.kind == "ready", state
    assert service.combined_state(ADA, original).kind == "ready"
    with service.open_combined(ADA, original, excel=True) as f:
        data = f.read()
    got, cells = sheet_of(data), cells_of(data)
    names = got[0]
    assert names[:6] == ROWS[0] and names[-1] == "error"
    column = {name: i for i, name in enumerate(names)}
    rows = got[1:]
    assert [r[column["email"]] for r in rows] == ["ann@example.com", "bob@example.com", "cy@example.com"]  # fixed
    assert all(r[column["error"]] is None for r in rows)  # Bob's error is gone with the fix
    assert [r[column["customer_id"]] for r in rows] == ["00017", "00018", "00019"]  # leading zeros: text
    assert [r[column["amount"]] for r in rows] == [12.5, 7, -3.25]  # numbers, to be summed
    assert all(cells[i][column["amount"]].data_type == "n" for i in (1, 2, 3))
    assert [r[column["joined"]] for r in rows] == [datetime(2024, 1, 31), datetime(2024, 2, 1), datetime(2024, 2, 2)]
    assert [r[column["ref"]] for r in rows] == ["1234567890123456", "1234567890123457", "1234567890123458"]
    assert [r[column["note"]] for r in rows] == ["=1+2", "@home", None]  # text as it was, never a formula
    assert cells[1][column["note"]].data_type == "s"
    # Every other cell is the combined CSV's, as text where the rule keeps text.
    text = combined_csv(service, original)
    assert len(text) == len(got) and text[0] == names
    for name in ("customer_id", "email", "ref"):
        assert [r[column[name]] for r in text[1:]] == [r[column[name]] for r in rows]
    # Beside the CSV, under the same digest; the correction's page asks by its own id and gets the same file.
    keys = [k for k in service.store.list_keys(service.layout.task_prefix(original)) if ".combined-" in k]
    assert sorted(k.rsplit(".", 1)[1] for k in keys) == ["csv", "xlsx"]
    assert len({k.rsplit(".", 1)[0] for k in keys}) == 1
    with service.open_combined(ADA, correction, excel=True) as f:
        assert f.read() == data


def test_the_cli_and_the_api_give_the_combined_workbook(service: TaskService, tmp_path: Path, monkeypatch) -> None:
    import requests
    from apps.http_server import serve

    from s3task import cli
    from s3task.config import Settings
    from s3task.web.api import create_app
    from s3task.web.tokens import TokenTable, hash_token
    from s3task.web.transfer import signer_for

    original = worked(service, ADA, csv_bytes(ROWS), name="Customers").task_id
    root = str(service.store.root)  # type: ignore[attr-defined]
    monkeypatch.setenv("S3TASK_USER", "ada")
    target = tmp_path / "combined.xlsx"
    assert cli.main(["--store", root, "download", original, "--combined-excel", "-o", str(target)]) != 0  # none yet
    correction = corrected(service, original, {"00018": "bob@example.com"})
    assert cli.main(["--store", root, "download", original, "--combined-excel", "-o", str(target)]) == 0
    emails = [r[1] for r in sheet_of(target.read_bytes())[1:]]
    assert emails == ["ann@example.com", "bob@example.com", "cy@example.com"]
    monkeypatch.chdir(tmp_path)  # no -o: named after the original, even when asked of its correction
    assert cli.main(["--store", root, "download", correction, "--combined-excel"]) == 0
    (named,) = tmp_path.glob("Customers-*-combined.xlsx")
    assert named.read_bytes() == target.read_bytes()

    api_service = TaskService(service.store, service.layout, url_signer=signer_for(service.store))
    app = create_app(Settings.load({"store": root}, {}), service=api_service, tokens=TokenTable({hash_token("t"): ADA}))
    auth = {"Authorization": "Bearer t"}
    with serve(app) as base:
        for task_id in (original, correction):
            got = requests.get(
                f"{base}/api/tasks/{task_id}/output", params={"variant": "combined-xlsx"}, headers=auth, timeout=60
            )
            assert got.status_code == 200, got.text
            assert got.json()["filename"].startswith("Customers-") and got.json()["filename"].endswith("-combined.xlsx")
            body = requests.get(got.json()["url"], timeout=30).content
            assert sheet_of(body) == sheet_of(target.read_bytes())
        wrong = requests.get(f"{base}/api/tasks/{original}/output", params={"variant": "combined-excel"}, headers=auth)
        assert wrong.status_code == 400 and "combined-xlsx" in wrong.json()["message"]


def test_a_combined_result_too_big_for_a_worksheet_is_refused_in_words(
    service: TaskService, tmp_path: Path, monkeypatch, capsys
) -> None:
    import requests
    from apps.http_server import serve

    from s3task import cli
    from s3task.config import Settings
    from s3task.web.api import create_app
    from s3task.web.tokens import TokenTable, hash_token
    from s3task.web.transfer import signer_for

    original = worked(service, ADA, csv_bytes(ROWS), name="Customers").task_id
    corrected(service, original, {"00018": "bob@example.com"})
    monkeypatch.setattr(exports.variants, "EXCEL_MAX_ROWS", 3)  # the header and two rows: three do not fit
    words = (
        "the result has 3 rows and an Excel worksheet holds at most 2 (plus the header row); download the CSV instead"
    )
    state = service.combined_state(ADA, original, excel=True)
    assert (state.kind, state.message) == ("refused", words)
    assert service.prepare_combined(ADA, original, excel=True).kind == "refused"
    with pytest.raises(exports.CannotExport, match="download the CSV instead"):
        service.ensure_combined(ADA, original, excel=True)
    assert combined_csv(service, original)[2][1] == "bob@example.com"  # the CSV is still there to take
    root = str(service.store.root)  # type: ignore[attr-defined]
    monkeypatch.setenv("S3TASK_USER", "ada")
    capsys.readouterr()
    assert cli.main(["--store", root, "download", original, "--combined-excel", "-o", str(tmp_path / "x.xlsx")]) != 0
    assert words in capsys.readouterr().err
    assert not (tmp_path / "x.xlsx").exists()
    api_service = TaskService(service.store, service.layout, url_signer=signer_for(service.store))
    app = create_app(Settings.load({"store": root}, {}), service=api_service, tokens=TokenTable({hash_token("t"): ADA}))
    with serve(app) as base:
        got = requests.get(
            f"{base}/api/tasks/{original}/output",
            params={"variant": "combined-xlsx"},
            headers={"Authorization": "Bearer t"},
            timeout=30,
        )
    assert got.status_code == 409 and got.json()["message"] == words


#: A step list leaves rows out: its combined result may have fewer rows than its result had (tests/unit/
#: test_steps_corrections.py): Eve, moved to the South by her fix, is left out of it.
ORDERS = (
    b"Name,Region,Email,Ordered\r\n"
    b"Ann,North,ann@example.com,01/02/2024\r\n"
    b"Bob,South,bob@example.com,02/02/2024\r\n"
    b"Cy,North,cy at example.com,03/02/2024\r\n"
    b"Eve,North,eve@@example.com,04/02/2024\r\n"
    b"Fay,North,fay@example.com,05/02/2024\r\n"
)
STEPS = {"steps": [
    {"step": "keep_rows", "conditions": [{"column": "Region", "is": "equals", "value": "North"}]},
    {"step": "format_dates", "columns": ["Ordered"], "from": "DD/MM/YYYY"},
    {"step": "check", "column": "Email", "format": "email"},
]}  # fmt: skip


def test_a_step_lists_combined_workbook_counts_the_rows_it_has(service: TaskService, monkeypatch) -> None:
    original = worked(service, ADA, ORDERS, name="Orders", task_type="steps", payload=STEPS)
    assert original.row_count == 4
    service.ensure_output(ADA, original.task_id, "errors-xlsx")
    with service.open_output(ADA, original.task_id, "errors-xlsx") as f:
        book = openpyxl.load_workbook(io.BytesIO(f.read()))
    sheet = book.active
    sheet.cell(2, 5).value = "cy@example.com"  # Cy's address fixed
    sheet.cell(3, 4).value = "South"  # Eve is not a North customer after all: left out now
    saved = io.BytesIO()
    book.save(saved)
    work(service, service.submit_correction(ADA, original.task_id, saved.getvalue()).task_id)
    # Its result had 4 rows, its combined result has 3: with room for 2, refused as the workbook is written.
    monkeypatch.setattr(exports.variants, "EXCEL_MAX_ROWS", 3)
    assert service.combined_state(ADA, original.task_id, excel=True).kind == "absent"  # not known before
    words = (
        "the result has 3 rows and an Excel worksheet holds at most 2 (plus the header row); download the CSV instead"
    )
    with pytest.raises(exports.CannotExport) as refused:
        service.ensure_combined(ADA, original.task_id, excel=True)
    assert refused.value.message == words
    assert service.combined_state(ADA, original.task_id, excel=True).message == words  # and kept so
    # With room for 3 (not for the result's 4), it is made.
    monkeypatch.setattr(exports.variants, "EXCEL_MAX_ROWS", 4)
    again = TaskService(service.store, service.layout)  # another process: the refusal above is this one's
    again.ensure_combined(ADA, original.task_id, excel=True)
    with again.open_combined(ADA, original.task_id, excel=True) as f:
        got = sheet_of(f.read())
    assert got == [
        ["Name", "Region", "Email", "Ordered", "error"],
        ["Ann", "North", "ann@example.com", datetime(2024, 2, 1), None],
        ["Cy", "North", "cy@example.com", datetime(2024, 2, 3), None],
        ["Fay", "North", "fay@example.com", datetime(2024, 2, 5), None],
    ]  # the dates as dates, the fixes in place, Eve left out
