"""The combined result of a task and its corrections, checked row for row against what the task gives for the
original input with the corrections applied (the worker's engine over that whole corrected file)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import openpyxl
import pytest
from conftest import wait_for
from support import csv_bytes
from worked import work, worked

from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.testing import run_task_type

ADA = Actor("ada")


def customers() -> list[list[str]]:
    rows = [["customer_id", "email", "notes"]]
    for i in range(1, 2501):
        email = f"c{i}@example.com" if i % 250 else f"c{i} at example.com"  # rows 250, 500, … are wrong
        rows.append([f"C{i:05d}", "=HYPERLINK()" if i == 1000 else email, "two\nlines" if i % 7 == 0 else ""])
    return rows


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


def run(service: TaskService, data: bytes) -> str:
    return worked(service, ADA, data, name="Customers").task_id


def correct(service: TaskService, task_id: str, fix: dict[str, str]) -> str:
    """Fix, in the errors workbook, the address of each customer ``fix`` names, keep only those rows, send it."""
    service.ensure_output(ADA, task_id, "errors-xlsx")
    with service.open_output(ADA, task_id, "errors-xlsx") as f:
        book = openpyxl.load_workbook(io.BytesIO(f.read()))
    sheet = book.active
    for at in range(sheet.max_row, 1, -1):
        customer = sheet.cell(at, 3).value
        if customer in fix:
            sheet.cell(at, 4).value = fix[customer]
        else:
            sheet.delete_rows(at)  # staff send back only the rows they fixed
    out = io.BytesIO()
    book.save(out)
    made = service.submit_correction(ADA, task_id, out.getvalue())
    work(service, made.task_id)
    return made.task_id


def combined(service: TaskService, task_id: str) -> bytes:
    service.prepare_combined(ADA, task_id)
    state = wait_for(lambda: (s := service.combined_state(ADA, task_id)).kind != "preparing" and s, 60)
    assert state.kind == "ready", state
    with service.open_combined(ADA, task_id) as f:
        return f.read()


def table(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))


def test_the_combined_result_is_the_task_over_the_input_with_the_corrections_applied(service: TaskService) -> None:
    rows = customers()
    data = csv_bytes(rows[:1201]) + b"\n" + csv_bytes(rows[1201:])  # a blank line between
    original = run(service, data)
    assert service.combined_state(ADA, original).kind == "refused"  # no correction completed yet
    first = {"C00250": "c250@example.com", "C01000": "c1000@example.com", "C02500": "c2500@example.com"}
    correct(service, original, first)
    second = {"C00500": "c500@example.com", "C02500": "c2500@example.org"}  # a later correction's row wins
    correct(service, original, second)
    applied = [list(row) for row in rows]
    for row in applied[1:]:
        row[1] = {**first, **second}.get(row[0], row[1])
    expected = table(run_task_type("email_enrichment", csv_bytes(applied)).output)
    got = table(combined(service, original))
    assert len(got) == len(expected) == 2501
    for number, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, number
    error = got[0].index("error")
    still_wrong = [r[0] for r in got[1:] if r[error]]  # the rows not sent back keep their error
    assert "C00750" in still_wrong and "C00250" not in still_wrong and "C02500" not in still_wrong


def test_the_cli_downloads_the_combined_result(service: TaskService, tmp_path: Path, monkeypatch) -> None:
    from s3task import cli

    original = run(service, csv_bytes([["customer_id", "email"], ["C1", "c1@example.com"], ["C2", "c2 at home"]]))
    root = str(service.store.root)  # type: ignore[attr-defined]
    monkeypatch.setenv("S3TASK_USER", "ada")
    target = tmp_path / "combined.csv"
    assert cli.main(["--store", root, "download", original, "--combined", "-o", str(target)]) != 0  # none yet
    correct(service, original, {"C2": "c2@example.com"})
    assert cli.main(["--store", root, "download", original, "--combined", "-o", str(target)]) == 0
    got = table(target.read_bytes())
    assert [r[:2] for r in got] == [["customer_id", "email"], ["C1", "c1@example.com"], ["C2", "c2@example.com"]]
    assert not got[2][got[0].index("error")]


def test_the_api_gives_the_combined_result(service: TaskService) -> None:
    import requests
    from apps.http_server import serve

    from s3task.config import Settings
    from s3task.web.api import create_app
    from s3task.web.tokens import TokenTable, hash_token
    from s3task.web.transfer import signer_for

    original = run(service, csv_bytes([["customer_id", "email"], ["C1", "c1 at home"], ["C2", "c2@example.com"]]))
    root = str(service.store.root)  # type: ignore[attr-defined]
    api_service = TaskService(service.store, service.layout, url_signer=signer_for(service.store))
    app = create_app(Settings.load({"store": root}, {}), service=api_service, tokens=TokenTable({hash_token("t"): ADA}))
    auth = {"Authorization": "Bearer t"}
    with serve(app) as base:
        link = f"{base}/api/tasks/{original}/output"
        none = requests.get(link, params={"variant": "combined"}, headers=auth, timeout=30)
        assert none.status_code == 409 and "no correction of this task has completed" in none.json()["message"]
        correct(service, original, {"C1": "c1@example.com"})
        got = requests.get(link, params={"variant": "combined"}, headers=auth, timeout=60)
        assert got.status_code == 200, got.text
        assert got.json()["filename"].endswith("-combined.csv")
        rows = table(requests.get(got.json()["url"], timeout=30).content)
    assert [r[:2] for r in rows] == [["customer_id", "email"], ["C1", "c1@example.com"], ["C2", "c2@example.com"]]
