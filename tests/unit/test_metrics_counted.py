"""Prometheus metrics counted in this process: each store request once, with the store keeping its
class, and an expired lease a worker ends (scraped from real processes: tests/system/test_metrics.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import wait_for
from prometheus_client import REGISTRY
from support import csv_rows

import s3task.store as store_mod
from s3task import metrics
from s3task.errors import NotFound
from s3task.layout import Layout
from s3task.records import read_record
from s3task.store import open_store
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ALICE = Actor("alice")


def test_each_store_request_counts_once_and_the_store_keeps_its_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in a fresh process (an earlier test may have enabled metrics in this one); restored afterwards.
    fresh = [w for w in store_mod._WRAPPERS if w is not metrics.count_requests]
    monkeypatch.setattr(store_mod, "_WRAPPERS", fresh)
    monkeypatch.setattr(metrics, "_enabled", False)
    metrics.enable()
    metrics.enable()  # once per process, however often asked
    assert store_mod._WRAPPERS.count(metrics.count_requests) == 1

    def count(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    def total_errors() -> float:
        return sum(s.value for m in REGISTRY.collect() for s in m.samples if s.name == "s3task_store_errors_total")

    store, _ = open_store(str(tmp_path / "store"))
    assert isinstance(store, LocalStore)  # what signer_for and the CLI check
    puts = count("s3task_store_requests_total", operation="put")
    gets = count("s3task_store_requests_total", operation="get")
    missing = count("s3task_store_errors_total", operation="get", error="NotFound")
    store.put("a/one", b"x", PutMode.CREATE)  # the local store's put is an open_write inside: one request
    with store.open_write("a/two", PutMode.CREATE) as w:
        w.write(b"y")
    with pytest.raises(NotFound):
        store.get("a/none")
    assert count("s3task_store_requests_total", operation="put") == puts + 2
    assert count("s3task_store_requests_total", operation="get") == gets + 1
    assert count("s3task_store_errors_total", operation="get", error="NotFound") == missing + 1
    # A failure in the caller's own block aborts the write; it is not the store's error.
    errors = total_errors()
    with pytest.raises(RuntimeError), store.open_write("a/three", PutMode.CREATE):
        raise RuntimeError("the caller's own")
    assert count("s3task_store_requests_total", operation="put") == puts + 3
    assert total_errors() == errors
    assert store.list_keys("a/") == ["a/one", "a/two"]


def test_a_worker_counts_the_expired_lease_it_ends(tmp_path: Path) -> None:
    from s3task import lifecycle
    from s3task.config import Settings
    from s3task.records import update_record
    from s3task.worker import Worker

    store, layout = LocalStore(tmp_path / "store"), Layout()
    service = TaskService(store, layout)
    task_id = service.create(ALICE, "orphan", "copy").record.task_id
    service.upload_input(ALICE, task_id, csv_rows(2))
    service.submit(ALICE, task_id)
    # A worker that claimed it and died: its lease ran out long ago.
    update_record(store, layout, task_id, lambda r, t: lifecycle.claim(r, t, worker_id="gone", lease_seconds=0.01)[0])
    expiries = REGISTRY.get_sample_value("s3task_lease_expiries_total", {"task_type": "copy"}) or 0.0
    worker = Worker(Settings(store=str(tmp_path / "store"), lease_grace_seconds=0), store, layout)
    wait_for(lambda: worker.poll_once() == 0 and read_record(store, layout, task_id)[0].status == "failed")
    assert REGISTRY.get_sample_value("s3task_lease_expiries_total", {"task_type": "copy"}) == expiries + 1
    worker.poll_once()  # nothing more to expire: not counted again
    assert REGISTRY.get_sample_value("s3task_lease_expiries_total", {"task_type": "copy"}) == expiries + 1
    assert REGISTRY.get_sample_value("s3task_queue_depth") == 0
