"""The result as people use it: the CSV opens in Excel, the workbook holds the exact text, pandas gets exact values.

Outputs come from the worker's own engine (``s3task.testing.run_task_type``); the copies are
made through :class:`~s3task.tasks.TaskService` on a local store, as the app, the API and the
CLI make them, and read back with readers that are not the writers (openpyxl for the workbook,
pandas and Python's csv module for the CSVs).
"""

from __future__ import annotations

import csv
import io
import threading
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from conftest import wait_for
from engine import neutralised
from support import csv_bytes

from s3task import exports, lifecycle
from s3task.csvio import BOM
from s3task.errors import NotFound
from s3task.layout import Layout
from s3task.lifecycle import Progress
from s3task.record import TaskRecord
from s3task.records import update_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.testing import run_task_type

ADA = Actor("ada")
#: What office staff and analysts have in their files.
ROWS = [
    ["name", "phone", "formula", "quoted", "code", "long number", "empty", "note"],
    ["Tomás", "+44 20 7946 0958", "=1+1", "'quoted", "007", "12345678901234567890", "", "-10% discount"],
    ["", "", "", "", "", "", "", ""],
    ["Zoë", "@example.com", '=HYPERLINK("http://x")', "''", "0", "-42", "", "line\nbreak"],
]


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


def completed(service: TaskService, rows: list[list[str]], task_type: str = "copy") -> TaskRecord:
    """A task whose output is what the worker's engine writes for ``rows``, completed as a worker does."""
    task_id = service.create(ADA, "June import", task_type).record.task_id
    data = csv_bytes(rows)
    service.upload_input(ADA, task_id, data)
    service.submit(ADA, task_id)
    result = run_task_type(task_type, data)
    holder = {}

    def claim(r: TaskRecord, now) -> TaskRecord:
        new, holder["lease"] = lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)
        return new

    update_record(service.store, service.layout, task_id, claim)
    key = service.layout.output_key(task_id, 1)
    service.store.put(key, result.output, PutMode.CREATE, content_type="text/csv")
    counts: Progress = result.progress
    return update_record(
        service.store,
        service.layout,
        task_id,
        lambda r, now: lifecycle.complete(
            r, now, lease=holder["lease"], output_path=key, progress=counts, row_count=counts.row_count
        ),
    )


def read(service: TaskService, record: TaskRecord, variant: exports.Variant) -> bytes:
    service.ensure_output(ADA, record.task_id, variant)
    with service.open_output(ADA, record.task_id, variant) as f:
        return f.read()


def test_the_excel_file_holds_every_value_as_text_and_runs_nothing(service: TaskService) -> None:
    record = completed(service, ROWS)
    data = read(service, record, "xlsx")
    assert service.output_filename(record, "xlsx").endswith(".xlsx")
    sheet = openpyxl.load_workbook(io.BytesIO(data)).active
    cells = [list(row) for row in sheet.iter_rows(min_row=1, max_row=sheet.max_row, max_col=len(ROWS[0]))]
    assert len(cells) == len(ROWS)
    for want_row, got_row in zip(ROWS, cells, strict=True):
        for want, cell in zip(want_row, got_row, strict=True):
            if want:
                assert (cell.value, cell.data_type) == (want, "s")  # text, never a number or a formula
            else:
                assert cell.value is None  # an empty cell stays empty
    # The same output always gives the same bytes (two app replicas may both make it).
    other = LocalStore(Path(service.store.root).parent / "replica")  # type: ignore[attr-defined]
    other.put(record.output_object_path, read(service, record, "csv"), PutMode.CREATE)
    assert exports.make(other, record, "xlsx", "copy.xlsx", error_column=None).size == len(data)
    assert other.get("copy.xlsx").body == data


def test_the_csv_has_a_bom_keeps_formulas_harmless_and_the_exact_csv_gives_pandas_the_values(
    service: TaskService,
) -> None:
    record = completed(service, ROWS)
    stored = read(service, record, "csv")
    assert stored.startswith(BOM)  # Windows Excel reads it as UTF-8: "Tomás", not "TomÃ¡s"
    text = stored.decode("utf-8-sig")
    protected = list(csv.reader(io.StringIO(text, newline="")))
    assert protected == [ROWS[0], *([neutralised(cell) for cell in row] for row in ROWS[1:])]
    assert protected[1][1] == "'+44 20 7946 0958" and protected[1][2] == "'=1+1" and protected[1][3] == "''quoted"
    for row in protected[1:]:
        assert not any(cell[:1] in ("=", "+", "@") for cell in row)  # nothing a spreadsheet would run
    assert protected[3][5] == "-42"  # a plain number is left alone

    exact = read(service, record, "exact")
    assert exact.startswith(BOM)
    frame = pd.read_csv(io.BytesIO(exact), dtype=str, keep_default_na=False)
    assert [list(frame.columns), *frame.to_numpy().tolist()] == ROWS
    assert service.output_filename(record, "exact").endswith("-exact.csv")
    # The app's preview shows the same exact values.
    preview = service.read_output(ADA, record.task_id, exact=True)
    assert [list(preview.columns), *preview.to_numpy().tolist()] == ROWS


def test_above_excels_row_limit_the_workbook_is_refused_and_the_csv_still_offered(
    service: TaskService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exports.variants, "EXCEL_MAX_ROWS", 3)  # a header and 2 rows
    record = completed(service, ROWS)  # 3 rows
    state = service.export_state(ADA, record.task_id, "xlsx")
    assert state.kind == "refused"
    assert "3 rows" in state.message and "at most 2" in state.message and "download the CSV" in state.message
    with pytest.raises(exports.CannotExport, match="download the CSV instead"):
        service.ensure_output(ADA, record.task_id, "xlsx")
    assert service.prepare_output(ADA, record.task_id, "xlsx").kind == "refused"
    assert service.output_url(ADA, record.task_id) is None  # the local store's own URLs: none without a signer
    assert read(service, record, "csv").startswith(BOM)


def test_a_copy_that_fails_midway_leaves_nothing_half_made(service: TaskService, monkeypatch) -> None:
    """Without a row count (an older record) the limit is found while writing: the workbook is never published."""
    record = completed(service, ROWS).replace(row_count=None)
    monkeypatch.setattr(exports.variants, "EXCEL_MAX_ROWS", 3)
    target = service.layout.export_key(record.task_id, 1, "xlsx")
    with pytest.raises(exports.CannotExport, match="Excel worksheet holds at most 2"):
        exports.make(service.store, record, "xlsx", target, error_column=None)
    with pytest.raises(NotFound):
        service.store.head(target)


def test_copies_are_made_in_the_background_once(service: TaskService) -> None:
    record = completed(service, ROWS)
    assert service.export_state(ADA, record.task_id, "xlsx").kind == "absent"
    with pytest.raises(exports.NotReady):
        service.output_url(ADA, record.task_id, "xlsx")
    gate = threading.Event()
    made = []
    key = service.layout.export_key(record.task_id, 1, "xlsx")

    def slow() -> object:
        gate.wait(10)
        made.append(1)
        return exports.make(service.store, record, "xlsx", key, error_column=None)

    job = service._outputs.exports.start(key, slow)
    assert service._outputs.exports.start(key, slow) is job  # asked twice while it is being made: made once
    assert service.export_state(ADA, record.task_id, "xlsx").kind == "preparing"
    gate.set()
    job.result(10)
    service._outputs.exports.start(key, slow).result(10)  # asked again once made: nothing more is made
    state = service.export_state(ADA, record.task_id, "xlsx")
    assert state.kind == "ready" and state.size and made == [1]
    # Another replica (its own service) finds it made; making it again is harmless (create-only put).
    other = TaskService(service.store, service.layout)
    assert other.export_state(ADA, record.task_id, "xlsx").kind == "ready"
    assert exports.make(service.store, record, "xlsx", key, error_column=None).size == state.size


def test_only_the_rows_with_errors_error_column_first(service: TaskService) -> None:
    rows = [["name", "email"], ["a", "a@example.com"], ["b", "not an address"], ["=c", "@nope"]]
    record = completed(service, rows, "email_enrichment")
    assert record.error_count == 2
    frame = pd.read_csv(io.BytesIO(read(service, record, "errors")), dtype=str, keep_default_na=False)
    assert list(frame.columns)[:3] == ["error", "name", "email"]
    assert frame["name"].tolist() == ["b", "'=c"]  # still protected: it is opened in a spreadsheet
    assert all(frame["error"] != "")
    assert service.output_filename(record, "errors").endswith("-errors.csv")


def test_no_errors_only_file_without_errors(service: TaskService) -> None:
    record = completed(service, [["email"], ["a@example.com"]], "email_enrichment")
    assert service.export_state(ADA, record.task_id, "errors").kind == "refused"
    copied = completed(service, ROWS)
    assert "marks no row errors" in service.export_state(ADA, copied.task_id, "errors").message


def test_copy_rows_unchanged_adds_no_column() -> None:
    result = run_task_type("copy", csv_bytes(ROWS))
    assert list(result.rows.columns) == ROWS[0]
    assert len(result.rows) == len(ROWS) - 1


def test_an_output_from_before_the_bom_keeps_its_apostrophes() -> None:
    """Older outputs added ' only before formulas: only that one comes off, a value's own ' stays."""
    old = b"name,note\r\n'=1+1,'quoted\r\n"
    legacy, stream = exports.peek_bom(io.BytesIO(old))
    assert legacy
    out = io.BytesIO()
    exports.write_csv(stream, out, legacy=legacy, errors_only=False, error_column=None)
    assert out.getvalue() == BOM + b'"name","note"\r\n"=1+1","\'quoted"\r\n'


def test_an_unknown_variant_is_refused_with_the_choices(service: TaskService) -> None:
    record = completed(service, ROWS)
    with pytest.raises(Exception, match="use one of csv, exact, errors, xlsx"):
        service.output_url(ADA, record.task_id, "pdf")  # type: ignore[arg-type]


def test_the_api_and_the_cli_give_each_variant(service: TaskService, tmp_path: Path, monkeypatch) -> None:
    import requests
    from apps.http_server import serve

    from s3task import cli
    from s3task.config import Settings
    from s3task.web.api import create_app
    from s3task.web.tokens import TokenTable, hash_token
    from s3task.web.transfer import signer_for

    record = completed(service, ROWS)
    root = str(service.store.root)  # type: ignore[attr-defined]
    api_service = TaskService(service.store, service.layout, url_signer=signer_for(service.store))
    app = create_app(Settings.load({"store": root}, {}), service=api_service, tokens=TokenTable({hash_token("t"): ADA}))
    auth = {"Authorization": "Bearer t"}
    with serve(app) as base:
        link = f"{base}/api/tasks/{record.task_id}/output"
        got = requests.get(link, params={"variant": "xlsx"}, headers=auth, timeout=60)  # made on this request
        assert got.status_code == 200, got.text
        assert got.json()["filename"].endswith(".xlsx")
        book = requests.get(got.json()["url"], timeout=30)
        assert book.headers["Content-Type"] == exports.CONTENT_TYPES["xlsx"]
        sheet = openpyxl.load_workbook(io.BytesIO(book.content)).active
        assert sheet["B2"].value == "+44 20 7946 0958"
        exact = requests.get(link, params={"variant": "exact"}, headers=auth, timeout=60).json()
        frame = pd.read_csv(
            io.BytesIO(requests.get(exact["url"], timeout=30).content), dtype=str, keep_default_na=False
        )
        assert frame["formula"].tolist()[0] == "=1+1"
        wrong = requests.get(link, params={"variant": "pdf"}, headers=auth, timeout=30)
        assert (wrong.status_code, wrong.json()["code"]) == (400, "invalid_input")
        none = requests.get(link, params={"variant": "errors"}, headers=auth, timeout=30)
        assert none.status_code == 409 and "marks no row errors" in none.json()["message"]

    monkeypatch.setenv("S3TASK_USER", "ada")
    target = tmp_path / "people.xlsx"
    assert cli.main(["--store", root, "download", record.task_id, "--excel", "-o", str(target)]) == 0
    assert openpyxl.load_workbook(target).active["A2"].value == "Tomás"
    target = tmp_path / "people.csv"
    assert cli.main(["--store", root, "download", record.task_id, "--exact", "-o", str(target)]) == 0
    assert pd.read_csv(target, dtype=str, keep_default_na=False)["quoted"].tolist()[0] == "'quoted"


def test_a_copy_that_takes_long_is_answered_later_not_held(service: TaskService, monkeypatch) -> None:
    """A large Excel file takes minutes: the API says 503 output_preparing with Retry-After, then gives it."""
    import requests
    from apps.http_server import serve
    from conftest import wait_for

    from s3task.config import Settings
    from s3task.web import api
    from s3task.web.tokens import TokenTable, hash_token
    from s3task.web.transfer import signer_for

    record = completed(service, ROWS)
    gate, real = threading.Event(), exports.make

    def held(*args, **kwargs):
        assert gate.wait(60), "the test never let the copy finish"
        return real(*args, **kwargs)

    monkeypatch.setattr(exports, "make", held)
    monkeypatch.setattr(api, "PREPARE_WAIT_SECONDS", 0.2)
    root = str(service.store.root)  # type: ignore[attr-defined]
    api_service = TaskService(service.store, service.layout, url_signer=signer_for(service.store))
    app = api.create_app(
        Settings.load({"store": root}, {}), service=api_service, tokens=TokenTable({hash_token("t"): ADA})
    )
    auth = {"Authorization": "Bearer t"}
    with serve(app) as base:
        link = f"{base}/api/tasks/{record.task_id}/output"
        first = requests.get(link, params={"variant": "xlsx"}, headers=auth, timeout=30)
        assert (first.status_code, first.json()["code"]) == (503, "output_preparing"), first.text
        assert first.headers["Retry-After"] == "5"
        gate.set()
        done = wait_for(
            lambda: (r := requests.get(link, params={"variant": "xlsx"}, headers=auth, timeout=30)).ok and r,
            timeout=30,
            what="the Excel file to be made",
        )
        assert done.json()["filename"].endswith(".xlsx")


# --- Excel's limits as Excel counts them; wide outputs; copies made a few at a time -------------


def test_a_cell_of_emoji_past_excels_limit_is_refused_not_cut(service: TaskService) -> None:
    """Excel counts UTF-16 units: 20,000 emoji are 40,000 of them, refused like 40,000 letters (never cut)."""
    emoji = completed(service, [["note"], ["😀" * 20_000]])
    letters = completed(service, [["note"], ["a" * 40_000]])
    for record in (emoji, letters):
        with pytest.raises(exports.CannotExport) as refused:
            service.ensure_output(ADA, record.task_id, "xlsx")
        assert "row 1 of the result has a value of 40,000 characters" in refused.value.message
        assert "an Excel cell holds at most 32,767; download the CSV instead" in refused.value.message
        with pytest.raises(NotFound):  # nothing half made
            service.store.head(service.layout.export_key(record.task_id, 1, "xlsx"))
    # Exactly at the limit (16,383 emoji and a letter: 32,767 units) the cell comes back whole.
    full = "😀" * 16_383 + "a"
    record = completed(service, [["note"], [full]])
    sheet = openpyxl.load_workbook(io.BytesIO(read(service, record, "xlsx"))).active
    assert sheet["A2"].value == full


def test_an_output_wider_than_the_input_limit_gives_every_copy_but_excel(
    service: TaskService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """email_enrichment adds columns to an input at the column limit: the CSV copies are made; Excel is refused.

    The limits are made small (an input of 16,384 columns takes seconds); the code paths are the same.
    """
    from s3task.csvio import parsing

    MAX_COLUMNS = 12
    monkeypatch.setattr(parsing, "MAX_COLUMNS", MAX_COLUMNS)  # what an input may have
    monkeypatch.setattr(exports.variants, "EXCEL_MAX_COLUMNS", MAX_COLUMNS + 2)  # the output has 4 more
    header = ["email", *(f"c{i}" for i in range(1, MAX_COLUMNS))]
    rows = [header, ["not an address", *(["=x"] * (MAX_COLUMNS - 1))], ["a@example.com", *(["y"] * (MAX_COLUMNS - 1))]]
    record = completed(service, rows, "email_enrichment")
    exact = list(csv.reader(io.StringIO(read(service, record, "exact").decode("utf-8-sig"), newline="")))
    assert len(exact[0]) > MAX_COLUMNS and exact[0][:MAX_COLUMNS] == header
    assert exact[1][1:MAX_COLUMNS] == ["=x"] * (MAX_COLUMNS - 1)  # exact: no ' added
    errors = list(csv.reader(io.StringIO(read(service, record, "errors").decode("utf-8-sig"), newline="")))
    assert len(errors) == 2 and errors[0][0] == "error" and errors[1][1] == "not an address"
    assert errors[1][2] == "'=x"  # protected: it is opened in a spreadsheet
    columns = len(exact[0])
    with pytest.raises(exports.CannotExport, match=f"the result has {columns:,} columns and an Excel worksheet"):
        service.ensure_output(ADA, record.task_id, "xlsx")
    state = service.export_state(ADA, record.task_id, "xlsx")
    assert state.kind == "refused" and f"at most {MAX_COLUMNS + 2}" in state.message


def test_copies_are_made_a_few_at_a_time_and_a_refusal_is_not_tried_again(tmp_path: Path) -> None:
    made = exports.Exports(LocalStore(tmp_path / "store"), max_at_once=2)
    gates = {key: threading.Event() for key in ("a", "b", "c")}
    running: set[str] = set()
    most = []

    def copy(key: str):
        def run():
            running.add(key)
            most.append(len(running))
            gates[key].wait(30)
            running.discard(key)
            made.store.put(key, b"made", PutMode.CREATE)
            return made.store.head(key)

        return run

    jobs = {key: made.start(key, copy(key)) for key in gates}
    wait_for(lambda: len(running) == 2, what="two copies being made")
    waiting = next(key for key in gates if key not in running)
    assert made.state(waiting).kind == "preparing"  # waits its turn
    for key in gates:
        gates[key].set()
    for job in jobs.values():
        job.result(30)
    assert max(most) == 2 and all(made.state(key).kind == "ready" for key in gates)

    tries = []

    def refused():
        tries.append(1)
        raise exports.CannotExport("too big for Excel")

    with pytest.raises(exports.CannotExport):
        made.start("x", refused).result(30)
    with pytest.raises(exports.CannotExport):
        made.start("x", refused).result(30)
    assert tries == [1] and made.state("x") == exports.CopyState("refused", message="too big for Excel")

    def broken():
        tries.append(2)
        raise OSError("network down")

    with pytest.raises(OSError):
        made.start("y", broken).result(30)
    assert made.state("y").kind == "failed"
    with pytest.raises(OSError):
        made.start("y", broken).result(30)
    assert tries == [1, 2, 2]  # a failure that may pass is tried again


TYPED = [
    ["amount", "mixed", "code", "id16", "day", "stamp", "other_date", "text", "phone", "gaps"],
    ["1234.5", "12", "00123", "1234567890123456", "2026-03-01", "2026-03-01T14:30:00", "01/03/2026", "=SUM(A1)",
     "+4420", ""],
    ["-42", "twelve", "0042", "1", "1999-12-31", "1999-12-31 23:59:59", "31/12/1999", "@home", "+31", "7"],
    ["0.1", "3", "7", "2", "", "", "", "-minus", "+1", ""],
]  # fmt: skip


def test_the_excel_copy_writes_numbers_and_dates_where_every_value_is_one(service: TaskService) -> None:
    """Issue 36 item 12: amounts that sum, dates that sort; anything Excel would not keep exactly stays text."""
    import datetime as dt

    record = completed(service, TYPED)
    sheet = openpyxl.load_workbook(io.BytesIO(read(service, record, "xlsx"))).active
    rows = list(sheet.iter_rows(min_row=2, max_row=4, max_col=len(TYPED[0])))
    column = {name: [row[i] for row in rows] for i, name in enumerate(TYPED[0])}
    assert [c.value for c in column["amount"]] == [1234.5, -42, 0.1] and column["amount"][0].data_type == "n"
    for name in ("mixed", "code", "id16", "other_date", "text", "phone"):  # text, exactly as produced
        got = [c.value for c in column[name]]
        assert got == [row[TYPED[0].index(name)] or None for row in TYPED[1:]], name
        assert all(c.data_type == "s" for c in column[name] if c.value is not None), name
    assert [c.value for c in column["day"]] == [dt.datetime(2026, 3, 1), dt.datetime(1999, 12, 31), None]
    assert column["day"][0].is_date and column["day"][0].number_format == "yyyy-mm-dd"
    assert column["stamp"][0].value == dt.datetime(2026, 3, 1, 14, 30) and column["stamp"][0].is_date
    assert [c.value for c in column["gaps"]] == [None, 7, None]  # an empty cell stays empty
    # The CSV keeps its guard: the text that a spreadsheet would run is protected there, not here.
    assert "'=SUM(A1)" in read(service, record, "csv").decode("utf-8-sig")
