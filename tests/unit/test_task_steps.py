"""A task's step list is kept beside its record (``<task>/steps.json``) and pinned there by ETag
(s3task.task_steps, ../shared/DESIGN.md "Where a step list lives"): a list longer than the parameters cap
is taken; the record keeps no copy; every door reads the list the task was made with; a maker that dies
between the list and the record leaves no task; one made again with the same list (an inbox sweeper taking
over) finds its list; a list gone or changed since is refused in words, never run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import wait_for
from support import csv_bytes

from s3task import task_steps
from s3task.errors import AlreadyExists, InvalidInput, StoreUnavailable
from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.tasks.limits import CreateLimits

ANN = Actor("ann")
ROWS = csv_bytes([["Name", "City"], ["Ada", "Oslo"], ["Bob", "Rome"]])
#: 600 replacements: about 30 KiB of JSON, over the 16 KiB parameters cap, under the list's own 48 KiB.
PAIRS = [[f"the old city {i:03d}", f"the new city {i:03d}"] for i in range(600)]
LONG = [{"step": "replace", "columns": ["City"], "pairs": PAIRS}]


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout(), limits=CreateLimits(params_bytes=16 * 1024))


def test_a_list_over_the_parameters_cap_is_kept_beside_the_record_and_read_back_whole(service: TaskService) -> None:
    assert len(json.dumps({"steps": LONG})) > 16 * 1024
    made = service.submit_file(ANN, "Long", "steps", {"steps": LONG}, ROWS)
    record, _etag = read_record(service.store, service.layout, made.task_id)
    assert record.payload == {} and record.status == "queued"  # the record keeps no copy
    kept = service.store.get(service.layout.steps_key(made.task_id))
    assert record.steps_etag == kept.etag
    assert json.loads(kept.body)["steps"][0]["pairs"] == PAIRS
    assert service.steps.parameters(record)["steps"] == service.steps.parameters(made)["steps"]
    assert len(service.steps.parameters(record)["steps"][0]["pairs"]) == 600


def test_a_list_gone_or_changed_since_the_task_was_made_is_refused_in_words(service: TaskService) -> None:
    made = service.submit_file(ANN, "Trim", "steps", {"steps": [{"step": "trim"}]}, ROWS)
    key = service.layout.steps_key(made.task_id)
    service.store.put(key, json.dumps({"steps": [{"step": "drop_columns", "columns": ["City"]}]}).encode(),
                      PutMode.OVERWRITE)  # fmt: skip
    with pytest.raises(InvalidInput, match=r"was changed after the task was made; make the task again"):
        service.steps.parameters(made)
    service.store.delete(key)
    with pytest.raises(InvalidInput, match=r"is gone from the store; make the task again"):
        service.steps.parameters(made)


def test_a_maker_that_dies_between_the_list_and_the_record_leaves_no_task(
    service: TaskService, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_put = service.store.put

    def dies_at_the_marker(key: str, *args, **kwargs):
        if "/by-user/" in key:
            raise StoreUnavailable("the process died here")
        return real_put(key, *args, **kwargs)

    monkeypatch.setattr(service.store, "put", dies_at_the_marker)
    with pytest.raises(StoreUnavailable):
        service.submit_file(ANN, "Trim", "steps", {"steps": [{"step": "trim"}]}, ROWS)
    monkeypatch.undo()
    assert service.list(ANN).tasks == []  # a list no record names is no task
    assert service.submit_file(ANN, "Trim", "steps", {"steps": [{"step": "trim"}]}, ROWS).status == "queued"


def test_keeping_the_same_list_again_finds_it_and_another_list_is_refused(service: TaskService) -> None:
    store, layout, task_id = service.store, service.layout, "7YBQ1XV696XJJ9C28N7D5D92E0"
    first = task_steps.keep(store, layout, task_id, [{"step": "trim"}])
    assert task_steps.keep(store, layout, task_id, [{"step": "trim"}]) == first  # a sweeper taking over
    with pytest.raises(AlreadyExists):
        task_steps.keep(store, layout, task_id, [{"step": "collapse_spaces"}])
    assert json.loads(store.get(layout.steps_key(task_id)).body) == {"steps": [{"step": "trim"}]}


def test_other_task_types_keep_every_parameter_in_the_record(service: TaskService) -> None:
    made = service.submit_file(ANN, "Mails", "email_enrichment", {"email_column": "Name"}, ROWS)
    record = read_record(service.store, service.layout, made.task_id)[0]
    assert (record.payload, record.steps_etag) == ({"email_column": "Name"}, None)
    assert service.steps.parameters(record) == {"email_column": "Name"}
    assert not service.store.list_keys(service.layout.steps_key(made.task_id))


def test_on_the_local_store_a_list_written_into_in_place_is_a_changed_list(service: TaskService) -> None:
    """An editor or a shell's ``>`` writes into the same file (its inode): the local store keeps the ETag on the
    inode, so it also keeps the size and time it sealed, and a file changed since is its bytes' ETag now
    (found by the outside review: the worker ran such an edited list)."""
    made = service.submit_file(ANN, "Trim", "steps", {"steps": [{"step": "trim"}]}, ROWS)
    path = service.store.root / service.layout.steps_key(made.task_id)
    before = path.stat()
    probe = path.parent / "probe"

    def clock_moved_on() -> bool:  # a filesystem's clock ticks coarsely: an edit is a tick after the write
        probe.write_bytes(b"x")
        return probe.stat().st_mtime_ns > before.st_mtime_ns

    wait_for(clock_moved_on, timeout=5, what="the file clock to move on")
    probe.unlink()
    with path.open("r+b") as f:  # the same inode, the same length, other bytes
        f.write(json.dumps({"steps": [{"step": "upper"}]}).encode()[: before.st_size].ljust(before.st_size, b" "))
    assert path.stat().st_ino == before.st_ino
    with pytest.raises(InvalidInput, match=r"was changed after the task was made"):
        service.steps.parameters(made)
