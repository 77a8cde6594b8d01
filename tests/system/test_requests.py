"""What an attempt asks of the store, request by request (BENCHMARKS.md section 3 lists each and why).

An attempt writes its record on the ETag of its own last write; a change made in
between by someone else (a cancel) fails its condition and wins. These run a
worker's attempt processes; what a submit and a poll ask: tests/unit/test_requests_counted.py.
On the local store, every call counted.
"""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for
from support import CountingStore, csv_rows

from s3task.config import Settings
from s3task.layout import Layout
from s3task.records import read_record
from s3task.tasks import Actor, TaskService
from s3task.worker.loop import Worker

ALICE = Actor("alice")
LAYOUT = Layout("batch-tasks")
CSV = csv_rows(50)


class CancelBeforeComplete(CountingStore):
    """Cancels the task (as its owner, through another service) just before the worker's completing write."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.cancelled = threading.Event()

    def put(self, key: str, body: bytes, *args: Any, **kwargs: Any) -> Any:
        if key.endswith("/status.json") and b'"status": "completed"' in body and not self.cancelled.is_set():
            self.cancelled.set()
            other = TaskService(CountingStore(self.root), LAYOUT)
            other.cancel(ALICE, key.split("/")[-2])
        return super().put(key, body, *args, **kwargs)


@pytest.fixture(autouse=True)
def plain_main(monkeypatch: pytest.MonkeyPatch) -> None:
    """An in-process worker's attempt processes import the host's ``__main__`` by its path; a Streamlit
    AppTest run earlier in this pytest process leaves one there that only runs inside AppTest."""
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))


def run_one(store: CountingStore, tmp_path: Path) -> tuple[str, Worker]:
    """Submit one task and let a worker claim it with one poll (no other polls read its record)."""
    service = TaskService(store, LAYOUT)
    task_id = service.submit_file(ALICE, "worked", "copy", None, CSV).task_id
    settings = Settings(store=str(store.root), worker_id="w1", poll_interval=60, lease_seconds=60)
    worker = Worker(settings, store=store, layout=LAYOUT)
    worker.prove_store()
    store.calls.clear()
    assert worker.poll_once() == 1
    wait_for(lambda: not worker.task_ids(), timeout=settings.lease_seconds / 2, what="the attempt to end")
    worker.stop()
    return task_id, worker


def test_the_attempt_writes_its_record_on_the_claims_etag(tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "store")
    task_id, _ = run_one(store, tmp_path)
    status = f"batch-tasks/{task_id}/status.json"
    on_record = [kind for kind, key in store.calls if key == status]
    assert read_record(store, LAYOUT, task_id)[0].status == "completed"
    # The poll's read, the claim, the complete (no read before it), then the marker drop's read
    # (which catches a retry that queued the task again while the marker was being deleted).
    assert on_record == ["get", "put", "put", "get"]


def test_a_cancel_after_the_claim_wins_over_the_complete(tmp_path: Path) -> None:
    store = CancelBeforeComplete(tmp_path / "store")
    task_id, _ = run_one(store, tmp_path)
    assert store.cancelled.is_set()
    stored = read_record(store, LAYOUT, task_id)[0]
    assert stored.status == "abandoned"  # the complete's condition failed; the cancel stands
    assert [h["event"] for h in stored.history][-1] == "cancel"
