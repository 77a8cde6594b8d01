"""The task page's words agree with what happens (issue 23.6): what a cancel keeps, that a task was run
again, and where a result too long for Excel shows values without their protecting '."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from app_pages import app, goto, options, run_as_worker, service, store_dir, submitted, texts  # noqa: F401

from s3task import exports
from s3task.errors import S3TaskError
from s3task.records import update_record
from s3task.tasks import Actor

ROOT = Path(__file__).resolve().parents[2]
BAD = "row 3 (name bob): 3 values where the header has 2 columns — a value that contains a comma must be in"


def open_task(at, task_id: str):
    at.query_params["id"] = task_id
    return goto(at, "pages/task.py")


def button(at, label: str):
    return next(b for b in at.button if b.label == label)


def test_the_cancel_confirmation_says_what_a_cancel_keeps(app, service) -> None:  # noqa: F811
    task_id = submitted(service, "user", "Customers")
    at = open_task(app("user"), task_id)
    button(at, "Cancel task…").click().run()
    warning = " ".join(str(w.value) for w in at.warning)
    assert "gives no result: the rows it has processed so far are not kept, only their counts" in warning
    assert "thrown away" not in warning
    button(at, "Yes, cancel the task").click().run()
    assert service.get(Actor("user"), task_id).status == "abandoned"
    with pytest.raises(S3TaskError):  # and so it is: there is no result to fetch
        service.output_url(Actor("user"), task_id, "csv")
    assert "Download result (CSV)" not in [b.label for b in at.button]
    docs = (ROOT / "docs" / "APP.md").read_text()
    assert "keeps what it wrote" not in docs and "a cancelled task gives no\n  result" in docs


def test_running_the_same_file_again_says_so_at_the_top(app, service) -> None:  # noqa: F811
    task_id = submitted(service, "user", "Customers")
    run_as_worker(service, task_id, error=BAD)
    at = open_task(app("boss"), task_id)
    before = [str(e.value) for e in at.error]
    assert "run again" not in " ".join(before)
    button(at, "Run the same file again").click().run()
    run_as_worker(service, task_id, error=BAD)
    at = open_task(app("boss"), task_id)
    top = " ".join(str(e.value) for e in at.error)
    assert top != " ".join(before)
    record = service.get(Actor("boss"), task_id)
    retried = next(e["at"] for e in reversed(record.history) if e["event"] == "retry")
    shown = retried[:19].replace("T", " ")  # the page's local time, UTC in a test
    assert f"It was run again at {shown} UTC (run 2 of this file)" in top, top
    assert top.endswith("with the same problem.")


def test_a_result_with_no_excel_file_points_to_where_values_are_shown_as_they_are(
    app,  # noqa: F811
    service,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(exports.variants, "EXCEL_MAX_ROWS", 2)  # as a result of 1,048,576 rows and more
    task_id = submitted(service, "user", "Formulas", b"a\n=1+1\n@x\n")
    run_as_worker(service, task_id, output=b"a\n'=1+1\n'@x\n")
    store, layout = service.store, service.layout
    update_record(store, layout, task_id, lambda r, now: dataclasses.replace(r, protected_count=2, revision=r.revision))
    said = texts(open_task(app("user"), task_id))
    assert "No Excel file: the result has 2 rows" in said
    assert "2 values have a ' in front" in said
    assert "the Excel file show them" not in said
    assert "The preview and the CSV with exact values (under “For pandas and scripts”) show them as they are" in said
