"""Excel workbooks through every door but the page: ``s3task submit BOOK.xlsx`` (a real CLI process), the HTTP
API (a real API server process, and one in this process for the refusals), and a real worker process.

The workbooks are written by xlsxwriter and openpyxl (tests/workbooks.py): a title over the table, a
blank row, the header in row 3, number formats, a formula, a merged range, two sheets. Each output is
checked row for row against what Excel shows; each workbook that cannot be read is refused at submit
with its one sentence, before anything is queued.
"""

from __future__ import annotations

import csv
import io
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
from apiclient import TOKEN, api_call, api_get, api_submit
from apps.http_server import serve
from conftest import boto_client, wait_for
from procs import ROOT, Procs, child_env, cli
from workbooks import HEADER, OPENPYXL_SHOWN, PRICES, SHOWN, bad_workbooks, openpyxl_book, xlsxwriter_book

from s3task.config import Settings
from s3task.layout import Layout
from s3task.record import TaskRecord
from s3task.records import read_record
from s3task.store.base import ObjectStore
from s3task.store.local import LocalStore
from s3task.store.s3 import S3Store
from s3task.tasks import Actor, TaskService
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token
from s3task.web.transfer import signer_for

LAYOUT = Layout()
OPERATOR = Actor("olga", operator=True)


def run_cli(store: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m s3task --store STORE ARGS`` as ada."""
    return cli("--store", str(store), *args, cwd=cwd, env=child_env(path=(ROOT,), S3TASK_USER="ada"), timeout=120)


def submitted(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return result.stdout.strip().splitlines()[-1]


def refused(result: subprocess.CompletedProcess[str], words: str) -> str:
    """One line on stderr, non-zero exit, no traceback, the reader's sentence in it."""
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert words in lines[0], lines[0]
    return lines[0]


def tasks(store: Path) -> list[TaskRecord]:
    return TaskService(LocalStore(store), LAYOUT).list(OPERATOR, limit=100).tasks


def output_rows(store: Path, record: TaskRecord) -> list[list[str]]:
    body = LocalStore(store).get(record.output_object_path).body
    return list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))


def completed(store: Path, task_id: str) -> TaskRecord | None:
    record = read_record(LocalStore(store), LAYOUT, task_id)[0]
    assert record.status in ("queued", "running", "completed"), (record.status, record.last_error)
    return record if record.status == "completed" else None


def assert_read_whole(store: Path, record: TaskRecord, book: Path) -> None:
    """The stored input is the workbook as uploaded, and progress reached its last byte."""
    assert LocalStore(store).get(record.input_object_path).body == book.read_bytes()
    assert record.bytes_processed == record.input_size_bytes == book.stat().st_size
    assert record.progress == 1.0


def test_workbooks_submitted_with_the_cli_are_processed_as_excel_shows_them(
    tmp_path: Path, procs: Procs, startup: float
) -> None:
    store = tmp_path / "store"
    first, second = xlsxwriter_book(tmp_path / "export.xlsx"), openpyxl_book(tmp_path / "openpyxl.xlsx")
    found = run_cli(store, "submit", str(first), "--name", "March export", cwd=tmp_path)
    assert "read as: Excel workbook · sheet 'Customers' · header in row 3" in found.stderr
    ids = {
        "found": submitted(found),
        "openpyxl": submitted(run_cli(store, "submit", str(second), "--name", "Data", cwd=tmp_path)),
        "sheet": submitted(run_cli(store, "submit", str(second), "--name", "p", "--sheet", "Prices", cwd=tmp_path)),
        "row": submitted(run_cli(store, "submit", str(first), "--name", "r", "--header-row", "4", cwd=tmp_path)),
    }
    procs.worker(str(store), "--poll-interval", "0.2")
    done = {
        name: wait_for(lambda t=task_id: completed(store, t), timeout=60 + startup, what=f"{name} completed")
        for name, task_id in ids.items()
    }
    assert output_rows(store, done["found"]) == [HEADER, *SHOWN]
    assert output_rows(store, done["openpyxl"]) == [HEADER, *OPENPYXL_SHOWN]
    assert output_rows(store, done["sheet"]) == PRICES
    assert output_rows(store, done["row"]) == [SHOWN[0], SHOWN[1]]  # row 4 taken as the header, as asked
    for name, book in (("found", first), ("openpyxl", second), ("sheet", second), ("row", first)):
        assert_read_whole(store, done[name], book)
    assert done["sheet"].input_format.to_dict() == {"kind": "xlsx", "sheet": "Prices", "header_row": 1}
    shown = run_cli(store, "show", ids["row"], cwd=tmp_path)
    assert "read as: Excel workbook · sheet 'Customers' · header in row 4" in shown.stdout, shown.stdout
    saved = run_cli(store, "download", ids["found"], "-o", str(tmp_path / "out.csv"), cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert list(csv.reader(io.StringIO((tmp_path / "out.csv").read_text("utf-8-sig")))) == [HEADER, *SHOWN]


def test_the_cli_refuses_workbook_flags_on_a_csv_and_a_sheet_the_workbook_has_not(tmp_path: Path) -> None:
    store = tmp_path / "store"
    plain = tmp_path / "plain.csv"
    plain.write_bytes(b"id,name\n1,a\n")
    line = refused(run_cli(store, "submit", str(plain), "--name", "x", "--sheet", "Data", cwd=tmp_path), "--sheet is")
    assert "for Excel workbooks (.xlsx, .xlsm); " in line and "plain.csv is not one" in line
    flags = ["--sheet", "Data", "--header-row", "2"]
    refused(run_cli(store, "submit", str(plain), "--name", "x", *flags, cwd=tmp_path), "--sheet and --header-row are")
    assert tasks(store) == []  # refused before any task was made
    book = xlsxwriter_book(tmp_path / "export.xlsx")
    nope = run_cli(store, "submit", str(book), "--name", "x", "--sheet", "Nope", cwd=tmp_path)
    refused(nope, "the workbook has no sheet called 'Nope'; its sheets are 'Customers', 'Prices'")
    far = run_cli(store, "submit", str(book), "--name", "x", "--header-row", "40", cwd=tmp_path)
    refused(far, "sheet 'Customers' has nothing in row 40 or under it")
    # The CLI leaves nothing half-made: a refused submit removes the task it made, its input with it.
    assert tasks(store) == []
    assert list((store / "batch-tasks").glob("*/input.csv")) == []


def test_each_bad_workbook_is_refused_at_submit_in_one_sentence_and_nothing_is_queued(tmp_path: Path) -> None:
    store = tmp_path / "store"
    bad = bad_workbooks(tmp_path)
    for name, (data, words) in bad.items():
        path = tmp_path / f"{name.replace(' ', '-')}.xlsx"
        path.write_bytes(data)
        refused(run_cli(store, "submit", str(path), "--name", name, cwd=tmp_path), words)
    assert tasks(store) == []  # each refused submit removed the task it made
    with api_in_process(tmp_path / "api-store") as base:
        for name, (data, words) in bad.items():
            task = api_submit(base, data)
            r = task.response
            assert (r.status_code, r.json()["code"]) == (400, "invalid_input"), r.text
            assert words in r.json()["message"]
            # As for a CSV refused here: the task waits for a file that can be read.
            assert api_get(base, task.task_id)["status"] == "created", name
        task.put(xlsxwriter_book(tmp_path / "good.xlsx").read_bytes())
        assert api_call(base, "POST", f"/api/tasks/{task.task_id}/submit").json()["task"]["status"] == "queued"
    statuses = [t.status for t in tasks(tmp_path / "api-store")]
    assert statuses.count("queued") == 1 and statuses.count("created") == len(bad) - 1
    for where in (store, tmp_path / "api-store"):  # no marker: no worker ever looks at a refused task
        assert len(LocalStore(where).list_keys(LAYOUT.active_root)) == (where != store)


def test_on_s3_the_submit_opens_the_workbook_it_pins(tmp_path: Path, moto_http_bucket: tuple[str, str]) -> None:
    """Through presigned URLs to moto's S3 over HTTP: the ranged first bytes tell a workbook, the whole
    object is read back at the pinned ETag and opened; a bad one is refused the same way."""
    endpoint, bucket = moto_http_bucket
    store = S3Store(bucket, client=boto_client(endpoint))
    with api_in_process(tmp_path, store) as base:
        good = api_submit(base, xlsxwriter_book(tmp_path / "export.xlsx").read_bytes(), {"sheet": "Prices"})
        assert good.upload["url"].startswith(endpoint)  # straight to the store
        task = good.response.json()["task"]
        assert (task["status"], task["input_format"]) == (
            "queued",
            {"kind": "xlsx", "sheet": "Prices", "header_row": 1},
        )
        assert task["input_etag"] == store.head(task["input_object_path"]).etag
        data, words = bad_workbooks(tmp_path)["encrypted"]
        r = api_submit(base, data).response
        assert r.status_code == 400 and words in r.json()["message"], r.text


def test_workbooks_through_the_api_server_and_a_worker(tmp_path: Path, procs: Procs, startup: float) -> None:
    store = tmp_path / "store"
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[{hash_token(TOKEN)}]\nuser = "ada"\nrole = "user"\n')
    api = procs.api(env={"S3TASK_STORE": str(store), "S3TASK_API_TOKENS_FILE": str(tokens)})
    first, second = xlsxwriter_book(tmp_path / "export.xlsx"), openpyxl_book(tmp_path / "openpyxl.xlsx")
    asked: dict[str, tuple[Path, dict[str, Any] | None]] = {
        "found": (first, None),
        "sheet": (second, {"sheet": "Prices"}),
        "row": (first, {"header_row": 4, "delimiter": "detect", "encoding": "detect"}),
    }
    ids, formats = {}, {}
    for name, (book, read_as) in asked.items():
        task = api_submit(api.url, book.read_bytes(), read_as)
        assert task.response.status_code == 200, task.response.text
        ids[name], formats[name] = task.task_id, task.response.json()["task"]["input_format"]
    assert formats == {
        "found": {"kind": "xlsx", "sheet": "Customers", "header_row": 3},
        "sheet": {"kind": "xlsx", "sheet": "Prices", "header_row": 1},
        "row": {"kind": "xlsx", "sheet": "Customers", "header_row": 4},
    }
    r = api_submit(api.url, b"id;name\n1;a\n", {"delimiter": "detect", "sheet": "Data"}).response
    assert r.status_code == 400 and "the file is CSV text, not an Excel workbook" in r.json()["message"], r.text
    csv_task = api_submit(api.url, b"id;name\n1;a\n", {"delimiter": "detect"})
    assert csv_task.response.json()["task"]["input_format"] == {"delimiter": ";", "encoding": "utf-8"}  # as ever
    plain = csv_task.task_id
    procs.worker(str(store), "--poll-interval", "0.2")
    done = {
        name: wait_for(lambda t=task_id: completed(store, t), timeout=60 + startup, what=f"{name} completed")
        for name, task_id in {**ids, "csv": plain}.items()
    }
    for name, expected in (("found", [HEADER, *SHOWN]), ("sheet", PRICES), ("row", SHOWN)):
        link = api_call(api.url, "GET", f"/api/tasks/{ids[name]}/output").json()
        got = requests.get(link["url"], timeout=30)
        assert list(csv.reader(io.StringIO(got.content.decode("utf-8-sig")))) == expected, name
        assert api_get(api.url, ids[name])["progress"] == 1.0
        assert_read_whole(store, done[name], asked[name][0])
    assert output_rows(store, done["csv"]) == [["id", "name"], ["1", "a"]]


# --- the API, as a client calls it -------------------------------------------------------------------


@contextmanager
def api_in_process(where: Path, store: ObjectStore | None = None) -> Iterator[str]:
    """The API on a real socket in this process, on ``store`` (default: a local store in ``where``); its base URL."""
    tokens = TokenTable({hash_token(TOKEN): Actor("ada")})
    store = store or LocalStore(where)
    service = TaskService(store, LAYOUT, url_signer=signer_for(store))
    with serve(create_app(Settings.load({"store": str(where)}, {}), service=service, tokens=tokens)) as base:
        yield base
