"""The issue's case end to end: a real worker fails the 20,000-customer file with a stray quote on line
5,000, and the task page names row 4,376 and says how many rows were read before it (issue 23.5)."""

from __future__ import annotations

from pathlib import Path

from app_pages import app, goto, options, service, store_dir, texts  # noqa: F401 (fixtures)
from customers import customers

from s3task.config import Settings
from s3task.tasks import Actor
from s3task.worker.loop import Worker

MESSAGE = "row 4,376 (customer_id C04375; line 5,000 in a text editor): a quote opened in `notes` is never closed"


def test_the_failed_task_names_the_row_and_counts_the_rows_read_before_it(service, store_dir: Path, app) -> None:  # noqa: F811
    task_id = service.submit_file(Actor("user"), "customers", "copy", None, customers(stray_line=5_000)).task_id
    Worker(Settings(store=str(store_dir)), service.store, service.layout).run_once()
    record = service.get(Actor("user"), task_id)
    assert record.status == "failed" and record.final_reason == "input"
    assert (record.last_error or "").startswith(MESSAGE)
    assert record.processed_count == 4_374  # the customers before the bad row

    at = app("user")
    at.query_params["id"] = task_id
    goto(at, "pages/task.py")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rows read"] == "4,374"
    assert MESSAGE in texts(at)
