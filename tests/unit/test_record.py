"""The task record: its JSON, what it refuses, and the compare-and-set loop that writes it."""

from __future__ import annotations

import json

import pytest
from recordkit import LAYOUT, Wrapper, make_record, submit

from s3task import errors, lifecycle
from s3task.errors import (
    AlreadyExists,
    Conflict,
    CorruptRecord,
    PreconditionFailed,
    StoreUnavailable,
    TaskNotFound,
    TooManyConflicts,
    UnsupportedSchema,
)
from s3task.ids import new_task_id
from s3task.lifecycle import Progress
from s3task.record import MAX_RECORD_BYTES, SCHEMA_VERSION, TaskRecord, record_from_json
from s3task.records import create_record, read_record, update_record
from s3task.store.base import ObjectStore, PutMode


def raw(store: ObjectStore, task_id: str) -> dict:
    return json.loads(store.get(LAYOUT.status_key(task_id)).body)


# --- JSON -------------------------------------------------------------------------------


def test_json_round_trip() -> None:
    record = make_record(status="failed", attempt_id=2, failed_attempts=2, last_error="boom", row_count=None)
    again = record_from_json(record.to_json(), "k")
    assert again == record
    assert json.loads(record.to_json())["task_name"] == "prices ü"


def test_every_seed_field_is_in_the_json() -> None:
    seed = [
        "schema_version",
        "task_id",
        "task_name",
        "status",
        "attempt_id",
        "row_count",
        "processed_count",
        "success_count",
        "error_count",
        "input_object_path",
        "output_object_path",
        "worker_id",
        "lease_expires_at",
        "last_error",
        "created_at",
        "updated_at",
        "created_by",
        "task_type",
        "payload",
        "revision",
        "write_id",
        "lease_token",
        "max_attempts",
        "failed_attempts",
        "release_count",
        "final",
        "retry_at",
        "input_etag",
        "input_size_bytes",
        "bytes_processed",
        "started_at",
        "finished_at",
    ]
    assert set(seed) <= set(json.loads(make_record().to_json()))


def test_store_round_trip(store: ObjectStore) -> None:
    record = make_record()
    _, created_etag = create_record(store, LAYOUT, record)
    got, etag = read_record(store, LAYOUT, record.task_id)
    assert got == record
    assert etag == created_etag == store.head(LAYOUT.status_key(record.task_id)).etag
    with pytest.raises(AlreadyExists):  # another record with the same id (a resend of ours would succeed)
        create_record(store, LAYOUT, record.replace(write_id="another-write"))
    assert create_record(store, LAYOUT, record) == (record, None)  # a lost answer: the object there is ours
    with pytest.raises(TaskNotFound):
        read_record(store, LAYOUT, new_task_id())


def test_unknown_fields_are_preserved_on_rewrite(store: ObjectStore) -> None:
    record = make_record()
    data = {**record.to_dict(), "future_field": {"nested": [1, 2]}, "zz_note": "kept"}
    store.put(LAYOUT.status_key(record.task_id), json.dumps(data).encode(), PutMode.CREATE)
    update_record(store, LAYOUT, record.task_id, submit)
    stored = raw(store, record.task_id)
    assert stored["status"] == "queued"
    assert stored["future_field"] == {"nested": [1, 2]}
    assert stored["zz_note"] == "kept"


def test_a_newer_schema_is_refused_and_never_rewritten(store: ObjectStore) -> None:
    record = make_record()
    key = LAYOUT.status_key(record.task_id)
    data = {**record.to_dict(), "schema_version": SCHEMA_VERSION + 1, "new_thing": True}
    body = json.dumps(data).encode()
    etag = store.put(key, body, PutMode.CREATE)
    with pytest.raises(UnsupportedSchema, match=key):
        read_record(store, LAYOUT, record.task_id)
    calls = []
    with pytest.raises(UnsupportedSchema, match="left untouched"):
        update_record(store, LAYOUT, record.task_id, lambda r, now: calls.append(r) or submit(r, now))
    assert calls == []
    got = store.get(key)
    assert (got.body, got.etag) == (body, etag)


def _with(**changes) -> bytes:
    return json.dumps({**make_record().to_dict(), **changes}).encode()


def _without(name: str) -> bytes:
    data = make_record().to_dict()
    del data[name]
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe garbage", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b"null", "JSON object"),
        (_without("schema_version"), "schema_version"),
        (_with(schema_version="1"), "schema_version"),
        (_with(schema_version=True), "schema_version"),
        (_without("status"), "missing status"),
        (_without("task_id"), "missing task_id"),
        (_with(attempt_id="3"), "attempt_id"),
        (_with(attempt_id=3.5), "attempt_id"),
        (_with(attempt_id=None), "attempt_id"),
        (_with(final="yes"), "final"),
        (_with(final=1), "final"),
        (_with(revision=True), "revision"),
        (_with(payload=[1]), "payload"),
        (_with(history={"a": 1}), "history"),
        (_with(task_name=7), "task_name"),
        (_with(lease_token=5), "lease_token"),
        (_with(status="exploded"), "status"),
        (_with(status=None), "status"),
        (b'{"schema_version": 1, "padding": "' + b"x" * MAX_RECORD_BYTES + b'"}', "bytes"),
    ],
)
def test_corrupt_records_are_a_clear_error_naming_the_key(local_store: ObjectStore, body: bytes, why: str) -> None:
    task_id = new_task_id()
    key = LAYOUT.status_key(task_id)
    local_store.put(key, body, PutMode.CREATE)
    with pytest.raises(CorruptRecord) as info:
        read_record(local_store, LAYOUT, task_id)
    assert key in str(info.value)
    assert why in str(info.value)
    with pytest.raises(CorruptRecord):
        update_record(local_store, LAYOUT, task_id, submit)
    assert local_store.get(key).body == body


# --- the compare-and-set loop ---------------------------------------------------------------


def test_lost_response_is_recognised_by_write_id(local_store: ObjectStore) -> None:
    """The write landed but the answer said 412 (an SDK retry of our own write): that is a success."""

    class LostResponse(Wrapper):
        def on_update(self, key, body, mode, **kwargs):
            self.inner.put(key, body, mode, **kwargs)
            raise PreconditionFailed(f"{key} changed since it was read")

    record = make_record()
    create_record(local_store, LAYOUT, record)
    store = LostResponse(local_store)
    calls = []
    new = update_record(store, LAYOUT, record.task_id, lambda r, now: calls.append(r) or submit(r, now))
    assert len(calls) == 1 and store.updates == 1  # not recomputed, not written twice
    stored, _ = read_record(local_store, LAYOUT, record.task_id)
    assert stored == new
    assert stored.status == "queued" and stored.revision == record.revision + 1
    assert stored.write_id == new.write_id != record.write_id


def test_timeout_after_the_write_landed_is_a_success(local_store: ObjectStore) -> None:
    class SlowAnswer(Wrapper):
        def on_update(self, key, body, mode, **kwargs):
            self.inner.put(key, body, mode, **kwargs)
            raise StoreUnavailable("read timeout")

    record = make_record()
    create_record(local_store, LAYOUT, record)
    new = update_record(SlowAnswer(local_store), LAYOUT, record.task_id, submit)
    assert read_record(local_store, LAYOUT, record.task_id)[0] == new


def test_timeout_without_a_write_is_an_error(local_store: ObjectStore) -> None:
    class Down(Wrapper):
        def on_update(self, key, body, mode, **kwargs):
            raise StoreUnavailable("connection refused")

    record = make_record()
    create_record(local_store, LAYOUT, record)
    with pytest.raises(StoreUnavailable):
        update_record(Down(local_store), LAYOUT, record.task_id, submit)
    assert read_record(local_store, LAYOUT, record.task_id)[0] == record


@pytest.mark.parametrize("error", [PreconditionFailed, Conflict])
def test_a_lost_race_is_retried_against_the_fresh_record(local_store: ObjectStore, error: type) -> None:
    """Someone else wrote between our read and our write: re-read and decide again, keeping their change."""
    record = make_record(status="running", attempt_id=1, lease_token="tok", worker_id="w1")
    create_record(local_store, LAYOUT, record)
    lease = lifecycle.Lease(1, "tok", "w1")

    class Interloper(Wrapper):
        def on_update(self, key, body, mode, **kwargs):
            if self.updates == 1:  # a heartbeat lands first
                update_record(
                    self.inner,
                    LAYOUT,
                    record.task_id,
                    lambda r, now: lifecycle.heartbeat(
                        r, now, lease=lease, lease_seconds=60, progress=Progress(7, 6, 1, 70)
                    ),
                )
                if error is Conflict:  # a 409: the boundary gives up on this write at once
                    raise Conflict(f"{key}: a concurrent conditional write is in progress")
            return self.inner.put(key, body, mode, **kwargs)

    seen = []

    def cancel(r: TaskRecord, now) -> TaskRecord:
        seen.append(r)
        return lifecycle.cancel(r, now, by="operator")

    store = Interloper(local_store)
    new = update_record(store, LAYOUT, record.task_id, cancel)
    assert len(seen) == 2
    assert seen[0].processed_count == 0 and seen[1].processed_count == 7  # recomputed on the fresh record
    stored, _ = read_record(local_store, LAYOUT, record.task_id)
    assert stored == new
    assert stored.status == "abandoned"
    assert (stored.processed_count, stored.success_count, stored.error_count) == (7, 6, 1)  # nothing lost
    assert stored.revision == record.revision + 2


def test_a_refusal_on_the_fresh_record_is_raised_not_overwritten(local_store: ObjectStore) -> None:
    record = make_record()
    create_record(local_store, LAYOUT, record)

    class CancelledMeanwhile(Wrapper):
        def on_update(self, key, body, mode, **kwargs):
            if self.updates == 1:
                update_record(self.inner, LAYOUT, record.task_id, lambda r, now: lifecycle.cancel(r, now, by="bob"))
            return self.inner.put(key, body, mode, **kwargs)

    with pytest.raises(errors.InvalidTransition, match="is cancelled"):
        update_record(CancelledMeanwhile(local_store), LAYOUT, record.task_id, submit)
    assert read_record(local_store, LAYOUT, record.task_id)[0].status == "abandoned"


def test_endless_conflicts_give_up_with_a_clear_error(local_store: ObjectStore) -> None:
    class AlwaysLoses(Wrapper):
        def on_update(self, key, body, mode, **kwargs):
            raise PreconditionFailed("changed")

    record = make_record()
    create_record(local_store, LAYOUT, record)
    store = AlwaysLoses(local_store)
    with pytest.raises(TooManyConflicts, match="try again"):
        update_record(store, LAYOUT, record.task_id, submit, tries=3)
    assert store.updates == 3
    assert read_record(local_store, LAYOUT, record.task_id)[0] == record


def test_nothing_to_do_writes_nothing(local_store: ObjectStore) -> None:
    record = make_record()
    create_record(local_store, LAYOUT, record)
    store = Wrapper(local_store)
    assert update_record(store, LAYOUT, record.task_id, lambda r, now: None) == record
    assert store.updates == 0


def test_update_uses_the_store_clock(local_store: ObjectStore) -> None:
    from datetime import UTC, datetime

    class Clock(Wrapper):
        def now(self):
            return datetime(2030, 5, 6, 7, 8, 9, 123_000, tzinfo=UTC)

    record = make_record()
    create_record(local_store, LAYOUT, record)
    new = update_record(Clock(local_store), LAYOUT, record.task_id, submit)
    assert new.updated_at == new.queued_at == "2030-05-06T07:08:09.123Z"
