"""The whole path in a real browser: upload a CSV, submit, watch it complete, preview, download.

The browser sends the file to the store itself and fetches the result from it
(``ui/direct.py``; large files, progress and memory: ``tests/browser/test_direct_transfer.py``).

Runs ``streamlit run app.py`` as a subprocess on a free port and drives it
with Playwright on Debian's Chromium. Two stores: a fresh local directory with
the worker embedded in the app, and moto's S3 server with a separate
``worker.py`` process. Screenshots of each page go to ``tests/artifacts/``.
"""

from __future__ import annotations

import csv
import io
import re
import socket
import time
from pathlib import Path

import boto3
import pytest
from browsers import base_env, grid_cells, open_app, open_section, pick_file, settle, shot, streamlit_app
from conftest import CHROMIUM, wait_for
from procs import Procs
from support import csv_bytes

ROOT = Path(__file__).resolve().parents[2]
ROWS = [["name", "age", "note"], ["ann", "007", "first"], ["bob", "42", "=1+1"], ["cy", "", "multi\nline"]]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"{CHROMIUM} not found; install Debian's Chromium (sudo apt-get install chromium) "
        "or run ./test.sh as root, which installs it",
    ),
]


def upload_and_submit(page, url: str, name: str, data: Path, prefix: str) -> str:
    """From the Tasks page to a submitted task's page; returns the task id."""
    from playwright.sync_api import expect

    open_app(page, url)
    shot(page, f"{prefix}-1-tasks-first-visit")
    expect(page.get_by_text("No tasks yet")).to_be_visible()
    page.get_by_role("button", name="Start a new task").click()
    expect(page.get_by_role("heading", name="New task")).to_be_visible()
    settle(page)
    page.get_by_role("textbox", name="Task name").fill(name)
    page.get_by_role("textbox", name="Task name").press("Enter")
    page.get_by_role("combobox", name="What should happen to the rows?").click()
    page.get_by_role("option", name="Copy rows unchanged").click()
    expect(page.get_by_text("Writes every row of the uploaded file").first).to_be_visible()  # one line; more below
    pick_file(page, data, "3 columns: name, age, note")  # the direct uploader (ui/direct.py)
    settle(page)
    expect(page.locator("[data-testid='stDataFrame'] td").first).to_be_attached()
    assert grid_cells(page)[:3] == ["ann", "007", "first"]
    shot(page, f"{prefix}-2-new-task-preview")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=20_000)
    return page.url.rsplit("=", 1)[1]


def watch_until_completed(page, prefix: str) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name="Timeline")).to_be_visible(timeout=20_000)
    shot(page, f"{prefix}-3-task-in-progress")
    expect(page.get_by_role("heading", name="Result")).to_be_visible(timeout=60_000)
    settle(page)
    expect(page.locator("[data-testid='stDataFrame']").first.locator("td").first).to_be_attached()
    cells = grid_cells(page, 0)  # the preview, above the timeline
    assert cells[:4] == ["ann", "007", "first", "bob"]  # name, age, note: copy adds no column
    assert "=1+1" in cells  # the preview shows the value as it is (the CSV file has a ' before it)
    # Beside the Completed badge, one bar and it is full (not the running bar still sliding up).
    expect(page.locator(".stMarkdownBadge", has_text="Completed")).to_be_visible()
    bars = page.get_by_role("progressbar")
    expect(bars).to_have_count(1)
    expect(bars).to_have_attribute("aria-valuenow", "100")
    shot(page, f"{prefix}-4-task-completed")


def assert_rows(path: Path) -> None:
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")  # a BOM: Windows Excel reads it as UTF-8
    assert rows[0] == ["name", "age", "note"]
    assert [r[:2] for r in rows[1:]] == [["ann", "007"], ["bob", "42"], ["cy", ""]]
    assert rows[3][2] == "multi\nline"
    assert rows[2][2] == "'=1+1"


def back_to_list(page, name: str, prefix: str) -> None:
    """The list shows the finished task; its Open button leads back to the task."""
    from playwright.sync_api import expect

    task_url = page.url
    page.get_by_role("link", name="All tasks").click()
    expect(page.get_by_role("heading", name="Tasks")).to_be_visible()
    settle(page)
    expect(page.locator("[data-testid='stDataFrame'] td").first).to_be_attached()
    cells = grid_cells(page)
    assert cells[1] == name and "Completed" in cells
    shot(page, f"{prefix}-5-tasks-list")
    grid = page.locator("[data-testid='stDataFrame']").first.bounding_box()
    page.mouse.click(grid["x"] + 30, grid["y"] + 52)  # the Open button: first column, first row
    page.wait_for_url(task_url)


def test_local_store_with_embedded_worker(browser, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    data = tmp_path / "people.csv"
    data.write_bytes(csv_bytes(ROWS))
    env = base_env(S3TASK_STORE=str(tmp_path / "store"))
    page = browser.new_page(viewport={"width": 1400, "height": 1100}, accept_downloads=True)
    # The app must work on a network with no internet: nothing it serves may fetch from elsewhere.
    outside: list[str] = []
    page.on(
        "request",
        lambda r: None if r.url.startswith(("http://127.0.0.1:", "data:", "blob:")) else outside.append(r.url),
    )
    try:
        with streamlit_app(env, tmp_path / "streamlit.log") as url:
            # A shared link as the very first request of a fresh server still goes through app.py.
            open_app(page, url + "/task?id=7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
            expect(page.get_by_text("There is no task with this id")).to_be_visible()
            upload_and_submit(page, url, "People *list*", data, "local")
            watch_until_completed(page, "local")
            with page.expect_download() as download:
                page.get_by_role("button", name="Download result (CSV)").click()
            saved = tmp_path / download.value.suggested_filename
            download.value.save_as(saved)
            assert saved.name.startswith("People-list-") and saved.suffix == ".csv"
            assert_rows(saved)
            back_to_list(page, "People *list*", "local")
        assert outside == [], f"the app fetched from outside this machine: {outside}"
    finally:
        page.close()


def test_a_file_from_european_excel_is_read_as_it_is_and_the_user_can_change_how(browser, tmp_path: Path) -> None:
    """Excel's "CSV" in much of Europe: semicolons, Windows-1252. The preview says so in words and reads it right;
    changing the choice re-reads the preview.
    (The worker's side: tests/system/test_app.py, tests/unit/test_dialect.py.)"""
    from playwright.sync_api import expect

    data = tmp_path / "Kunden.csv"
    data.write_bytes("Name;Straße;Betrag\r\nMüller;Hauptstraße 5;€ 1.234,50\r\n".encode("cp1252"))
    env = base_env(S3TASK_STORE=str(tmp_path / "store"), S3TASK_EMBEDDED_WORKER="0")
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    try:
        with streamlit_app(env, tmp_path / "streamlit.log") as url:
            page.goto(url + "/new_task")
            settle(page)
            pick_file(page, data, "Separated by semicolons · Windows (Western European) text")
            settle(page)
            expect(page.locator("[data-testid='stDataFrame'] td").first).to_be_attached()
            assert grid_cells(page)[:3] == ["Müller", "Hauptstraße 5", "€ 1.234,50"]
            shot(page, "new-task-european-excel")
            # A wrong choice is read at once, and says what is wrong; the right one reads the file again.
            page.get_by_role("combobox", name="Values separated by").click()
            page.get_by_role("option", name="Commas").click()
            expect(page.get_by_text("2 values where the header has 1 column")).to_be_visible()  # on row 2
            page.get_by_role("combobox", name="Values separated by").click()
            page.get_by_role("option", name="Semicolons").click()
            expect(page.get_by_text("Separated by semicolons · Windows (Western European) text")).to_be_visible()
            settle(page)
            expect(page.locator("[data-testid='stDataFrame'] td").first).to_be_attached()
            assert grid_cells(page)[:3] == ["Müller", "Hauptstraße 5", "€ 1.234,50"]
    finally:
        page.close()


def test_s3_store_with_separate_worker(browser, tmp_path: Path, moto_http_bucket: tuple[str, str]) -> None:
    from playwright.sync_api import expect

    endpoint, bucket = moto_http_bucket
    data = tmp_path / "people.csv"
    data.write_bytes(csv_bytes(ROWS))
    aws = {
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    store_url = f"s3://{bucket}/batch-tasks"
    env = base_env(S3TASK_STORE=store_url, S3TASK_EMBEDDED_WORKER="0", **aws)
    page = browser.new_page(viewport={"width": 1400, "height": 1100}, accept_downloads=True)
    try:
        with streamlit_app(env, tmp_path / "streamlit.log") as url, Procs(tmp_path, env) as procs:
            worker_proc = procs.worker(store_url, "--poll-interval", "0.3")
            upload_and_submit(page, url, "People on S3", data, "s3")
            watch_until_completed(page, "s3")
            with page.expect_download() as download:
                page.get_by_role("button", name="Download result (CSV)").click()
            href = download.value.url
            assert href.startswith(endpoint) and "X-Amz-Signature" in href  # straight from the store
            saved = tmp_path / download.value.suggested_filename
            download.value.save_as(saved)
            assert saved.name.startswith("People-on-S3-")
            assert_rows(saved)
            # Workers are an operator's business: folded away in the task's details (the local development
            # user is an operator). The separate worker did the work.
            history = open_section(page, "Details for operators", lambda s: s.locator("[data-testid='stDataFrame']"))
            expect(history.locator("td").first).to_be_attached()
            assert f"worker {socket.gethostname()}-{worker_proc.pid}" in history.locator("td").all_inner_texts()
            back_to_list(page, "People on S3", "s3")
    finally:
        page.close()


def test_app_on_a_store_that_ignores_conditions_processes_nothing_and_says_why(
    browser, tmp_path: Path, moto_http_bucket: tuple[str, str]
) -> None:
    """The embedded worker runs the same conditional-write probe as worker.py: on a store that
    ignores If-Match / If-None-Match it never starts, the log says why, every page says so,
    and a queued task stays queued."""
    from playwright.sync_api import expect
    from s3proxy import proxy_server

    from s3task.layout import Layout
    from s3task.records import read_record
    from s3task.store.s3 import S3Store
    from s3task.tasks import Actor, TaskService

    endpoint, bucket = moto_http_bucket
    store = S3Store(bucket, client=boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1"))
    layout = Layout("batch-tasks")
    service = TaskService(store, layout)
    alice = Actor("local")
    task_id = service.create(alice, "waits", "copy").record.task_id
    service.upload_input(alice, task_id, csv_bytes(ROWS))
    service.submit(alice, task_id)

    log = tmp_path / "streamlit.log"
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    with proxy_server(endpoint, forget=True) as (unsafe, _):
        env = base_env(
            S3TASK_STORE=f"s3://{bucket}/batch-tasks",
            AWS_ENDPOINT_URL_S3=unsafe,
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_DEFAULT_REGION="us-east-1",
        )
        try:
            with streamlit_app(env, log) as url:
                refused = "the embedded worker is not running"
                wait_for(lambda: refused in log.read_text(), timeout=30, what="the refusal in the app's log")
                line = next(x for x in log.read_text().splitlines() if refused in x)
                assert "does not enforce conditional writes" in line and "If-Match" in line, line
                for where in ("", f"/task?id={task_id}", "/new_task"):
                    open_app(page, url + where)
                    banner = page.get_by_text("Tasks will not be processed by this app")
                    expect(banner).to_be_visible()
                    expect(page.get_by_text("does not enforce conditional writes").first).to_be_visible()
                shot(page, "unsafe-store-banner")
                # Watch the task over several of the app's poll intervals: nobody claims it.
                poll = float(env["S3TASK_POLL_INTERVAL"])
                deadline = time.monotonic() + 10 * poll
                while time.monotonic() < deadline:
                    record = read_record(store, layout, task_id)[0]
                    assert record.status == "queued" and record.attempt_id == 0, record.history
                    time.sleep(poll / 3)
                assert "Traceback" not in log.read_text()
        finally:
            page.close()


def test_operator_finds_tasks_sees_workers_and_reads_a_profile(browser, tmp_path: Path) -> None:
    """Operators' views and the analyst's profile in Chromium: the task list's search, the Workers page
    (the app's own worker), and a profile's charts on its task page, at desktop and phone widths."""
    from playwright.sync_api import expect

    from s3task.layout import Layout
    from s3task.records import read_record
    from s3task.store.local import LocalStore
    from s3task.tasks import Actor, TaskService

    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    header = ["status", "amount", *(f"column_{i}" for i in range(28))]
    rows = [header] + [
        ["ok" if i % 3 else ("broken@" if i % 2 else ""), str(i % 17), *(str(i % (j + 2)) for j in range(28))]
        for i in range(3000)
    ]
    me = Actor("local")  # the development user: an operator
    profile_id = service.submit_file(me, "Customer file", "profile", None, csv_bytes(rows)).task_id
    service.submit_file(me, "Supplier list", "copy", None, csv_bytes(ROWS))
    env = base_env(S3TASK_STORE=str(store))
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    try:
        with streamlit_app(env, tmp_path / "streamlit.log") as url:
            # The app's worker has reported (it does when it takes a task) once it has done the profile.
            wait_for(
                lambda: read_record(service.store, service.layout, profile_id)[0].status == "completed",
                timeout=60,
                what="the profile task completed by the app's worker",
            )
            open_app(page, url + "/workers")
            expect(page.get_by_text(re.compile(r"^1 worker · "))).to_be_visible()
            expect(page.get_by_text(re.compile(r"^Last beat \d+ s ago · 20"))).to_be_visible()
            shot(page, "operators-workers")

            open_app(page, url)
            page.get_by_role("textbox", name="Search by name").fill("customer")
            page.get_by_role("textbox", name="Search by name").press("Enter")
            expect(page.get_by_text("Showing 1 of 2: search and filters cover all 2 of your tasks.")).to_be_visible()
            settle(page)
            grid = page.locator("[data-testid='stDataFrame'] td")  # re-drawn while the other task is live
            expect(grid.filter(has_text="Customer file")).to_have_count(1)
            expect(grid.filter(has_text="Supplier list")).to_have_count(0)
            shot(page, "operators-tasks-search")

            page.set_viewport_size({"width": 1400, "height": 2600})  # the page scrolls inside: show it all
            open_app(page, url + f"/task?id={profile_id}")
            expect(page.get_by_role("heading", name="Profile")).to_be_visible(timeout=20_000)
            charts = page.locator("[data-testid='stVegaLiteChart']")
            expect(charts).to_have_count(3)  # filled/empty of every column; the picked column's two
            expect(page.get_by_text("2,500 filled · 500 empty · 2 different values")).to_be_visible()
            shot(page, "profile-charts")
            page.get_by_role("combobox", name="Column").click()
            page.get_by_role("option", name="2. amount").click()
            expect(page.get_by_text("3,000 filled · 0 empty · 17 different values")).to_be_visible()
            expect(charts).to_have_count(3)
            page.set_viewport_size({"width": 390, "height": 2600})
            settle(page)
            shot(page, "profile-charts-phone")
    finally:
        page.close()
