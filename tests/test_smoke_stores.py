from __future__ import annotations

from s3task.store.probe import cas_probe


def test_cas_probe_passes_on_every_store(store) -> None:
    cas_probe(store, "batch-tasks")
    assert store.list_keys("batch-tasks/") == []
