"""The counts a task shows — rows read, written, with errors, left out — and that every view shows the same.

Tasks are run through the worker's own engine (``s3task.testing.run_task_type``) and their counts
written into the record with the lifecycle's own functions, as a worker does; then the task page
(AppTest), the task list, the CLI's ``show`` and ``list``, and the API's JSON are read back.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from apps.http_server import serve  # noqa: E402

from s3task import cli, lifecycle  # noqa: E402
from s3task.config import Settings  # noqa: E402
from s3task.counts import counts_of  # noqa: E402
from s3task.layout import Layout  # noqa: E402
from s3task.progress import Progress  # noqa: E402
from s3task.record import TaskRecord  # noqa: E402
from s3task.records import update_record  # noqa: E402
from s3task.store.base import PutMode  # noqa: E402
from s3task.store.local import LocalStore  # noqa: E402
from s3task.tasks import Actor, TaskService  # noqa: E402
from s3task.testing import run_task_type  # noqa: E402
from s3task.web.api import create_app  # noqa: E402
from s3task.web.tokens import TokenTable, hash_token  # noqa: E402

ALICE = Actor("alice")
#: The app's own user when it listens on loopback with no sign-in (so its "Mine" list is this user's).
LOCAL = Actor("local")
#: Six rows, three of them repeats of an earlier row.
DUPLICATES = "name,city\nAda,London\nBob,Paris\nAda,London\nCy,Rome\nBob,Paris\nAda,London\n"
EMAILS = "name,email\nAda,ada@example.org\nBob,not-an-address\nCy,cy@example.com\nDee,\nEve,eve@example.net\n"


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


def finished(
    service: TaskService, task_type: str, csv: str, params: dict | None = None, actor: Actor = ALICE
) -> TaskRecord:
    """A task of ``task_type`` on ``csv``, processed by the worker's engine and completed as a worker does."""
    task_id = service.submit_file(actor, task_type, task_type, params, csv.encode()).task_id
    result = run_task_type(task_type, csv, params)
    lease = _claim(service, task_id)
    key = service.layout.output_key(task_id, lease.attempt_id)
    service.store.put(key, result.output, PutMode.CREATE, content_type="text/csv")

    def complete(r: TaskRecord, now):
        return lifecycle.complete(
            r, now, lease=lease, output_path=key, progress=result.progress, row_count=result.progress.row_count
        )

    return update_record(service.store, service.layout, task_id, complete)


def _claim(service: TaskService, task_id: str) -> lifecycle.Lease:
    held: dict[str, lifecycle.Lease] = {}

    def claim(r: TaskRecord, now):
        new, held["lease"] = lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)
        return new

    update_record(service.store, service.layout, task_id, claim)
    return held["lease"]


# --- what the counts say ---------------------------------------------------------------------


def test_clean_counts_rows_read_written_and_left_out(service: TaskService) -> None:
    record = finished(service, "clean", DUPLICATES)
    counts = counts_of(record)
    assert (counts.rows_read, counts.rows_written, counts.rows_left_out) == (6, 3, 3)
    assert counts.rows_with_errors is None  # clean marks no errors
    assert counts.lines() == [("Rows read", "6"), ("Rows written", "3"), ("Rows left out", "3")]


def test_profile_counts_rows_read_and_summary_rows(service: TaskService) -> None:
    n = 2_500
    csv = "a,b,c\n" + "".join(f"{i},x{i % 7},\n" for i in range(n))
    counts = counts_of(finished(service, "profile", csv))
    assert (counts.rows_read, counts.rows_written, counts.summary) == (n, 3, True)  # one summary row per column
    assert counts.rows_with_errors is None and counts.rows_left_out is None
    assert counts.lines() == [("Rows read", "2,500"), ("Summary rows", "3")]


def test_a_validating_type_counts_its_errors(service: TaskService) -> None:
    counts = counts_of(finished(service, "email_enrichment", EMAILS))
    assert (counts.rows_read, counts.rows_written, counts.rows_with_errors) == (5, 5, 2)
    assert counts.rows_left_out is None  # it keeps every row
    assert [label for label, _ in counts.lines()] == ["Rows read", "Rows written", "Rows with errors"]


def test_counts_move_while_it_runs_and_are_unknown_before(service: TaskService) -> None:
    task_id = service.submit_file(ALICE, "c", "clean", None, DUPLICATES.encode()).task_id
    queued = counts_of(service.get(ALICE, task_id))
    assert (queued.rows_read, queued.rows_written) == (0, None)
    assert queued.lines()[1] == ("Rows written", "–")
    lease = _claim(service, task_id)
    so_far = Progress(processed_count=4, success_count=3, bytes_processed=40, row_count=3)
    update_record(
        service.store,
        service.layout,
        task_id,
        lambda r, now: lifecycle.heartbeat(r, now, lease=lease, lease_seconds=60, progress=so_far),
    )
    running = counts_of(service.get(ALICE, task_id))
    assert (running.rows_read, running.rows_written, running.rows_left_out) == (4, 3, 1)


def test_a_type_this_process_does_not_know_shows_what_its_counts_say() -> None:
    base = {"task_id": "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", "task_name": "n", "created_by": "a", "task_type": "elsewhere"}
    record = TaskRecord(**base, status="completed", attempt_id=1, processed_count=10, row_count=8, error_count=0)
    counts = counts_of(record)
    assert (counts.rows_read, counts.rows_written, counts.rows_with_errors, counts.rows_left_out) == (10, 8, None, 2)
    with_errors = counts_of(record.replace(row_count=10, error_count=1))
    assert (with_errors.rows_with_errors, with_errors.rows_left_out) == (1, None)


# --- the same words and numbers everywhere ---------------------------------------------------------


@pytest.fixture
def app_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    from streamlit import config as st_config

    store = tmp_path / "store"
    monkeypatch.setenv("S3TASK_STORE", str(store))
    monkeypatch.setenv("S3TASK_EMBEDDED_WORKER", "0")
    monkeypatch.setenv("S3TASK_USER", LOCAL.name)
    saved = st_config.get_option("server.address")
    st_config.set_option("server.address", "127.0.0.1")
    yield store
    st_config.set_option("server.address", saved)


def _page(path: str, task_id: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    at.run()
    if task_id:
        at.query_params["id"] = task_id
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


def test_page_list_cli_and_api_show_the_same_counts(app_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    service = TaskService(LocalStore(app_env), Layout())
    clean = finished(service, "clean", DUPLICATES, actor=LOCAL)
    profile = finished(service, "profile", DUPLICATES, actor=LOCAL)
    want = {clean.task_id: [("Rows read", "6"), ("Rows written", "3"), ("Rows left out", "3")]}
    want[profile.task_id] = [("Rows read", "6"), ("Summary rows", "2")]

    for task_id, lines in want.items():
        # The task page: one metric per count, the same words and numbers.
        at = _page("pages/task.py", task_id)
        assert [(m.label, m.value) for m in at.metric] == lines
        # Completed: the full bar (not where the running one was), and how long it took in plain words.
        bars = at.get("progress")
        assert len(bars) == 1 and bars[0].proto.value == 100, bars
        assert bars[0].proto.text.startswith("Done in ") and " 0 s" not in bars[0].proto.text
        # The CLI's show.
        assert cli.main(["--store", str(app_env), "--as", LOCAL.name, "show", task_id]) == 0
        shown = capsys.readouterr().out
        for label, value in lines:
            assert f"{label:>18}: {value}" in shown

    # The task list: rows read, written, with errors (empty: clean and profile mark none), left out.
    listed = _page("pages/tasks.py").dataframe[0].value.set_index("id")
    assert listed.loc[clean.task_id, ["rows", "written", "left_out"]].tolist() == [6, 3, 3]
    assert listed.loc[profile.task_id, ["rows", "written"]].tolist() == [6, 2]
    assert listed[["errors"]].isna().all().all() and bool(listed["left_out"].isna()[profile.task_id])
    # The CLI's list: the same columns, "-" where a count does not apply.
    assert cli.main(["--store", str(app_env), "--as", LOCAL.name, "list"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert "ROWS READ  ROWS WRITTEN  ROWS WITH ERRORS  ROWS LEFT OUT" in table[0]
    row = next(line for line in table if line.startswith(clean.task_id))
    assert row.split()[5:9] == ["6", "3", "-", "3"]

    # The API's JSON, over HTTP.
    settings = Settings.load({"store": str(app_env)}, {})
    tokens = TokenTable({hash_token("t"): LOCAL})
    with serve(create_app(settings, service=service, tokens=tokens)) as base:
        got = requests.get(f"{base}/api/tasks/{clean.task_id}", headers={"Authorization": "Bearer t"}, timeout=30)
        task = got.json()["task"]
        assert (task["rows_read"], task["rows_written"], task["rows_with_errors"], task["rows_left_out"]) == (
            6,
            3,
            None,
            3,
        )
        assert task["output_kind"] == "rows"
        got = requests.get(f"{base}/api/tasks/{profile.task_id}", headers={"Authorization": "Bearer t"}, timeout=30)
        task = got.json()["task"]
        assert (task["rows_read"], task["rows_written"], task["output_kind"]) == (6, 2, "summary")
    # And the CLI's JSON carries the API's names.
    assert cli.main(["--store", str(app_env), "--as", LOCAL.name, "show", "--json", clean.task_id]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["rows_read"], data["rows_written"], data["rows_left_out"]) == (6, 3, 3)


def test_how_long_a_finished_task_took_reads_well() -> None:
    from ui import format as fmt

    assert fmt.done_in(0.0) == fmt.done_in(0.4) == fmt.done_in(None) == "less than a second"
    assert fmt.done_in(4.23) == "4.2 s" and fmt.done_in(42) == "42 s" and fmt.done_in(600) == "10 min"
