"""A file's fingerprint (name, size, SHA-256 of its first and last MiB), as recorded on a task made for
an upload, and records written before there was one."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest

from s3task import lifecycle
from s3task.errors import InvalidTransition
from s3task.fingerprint import EDGE, Fingerprint, of_file, of_stream
from s3task.layout import Layout
from s3task.record import record_from_json
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

MB = 1 << 20


def test_the_digest_is_of_the_first_mib_then_the_rest_of_the_last(tmp_path: Path) -> None:
    data = bytes(range(256)) * (5 * MB // 256) + b"end"
    path = tmp_path / "export.csv"
    path.write_bytes(data)
    got = of_file(path)
    assert (got.name, got.size) == ("export.csv", len(data))
    assert got.edges_sha256 == hashlib.sha256(data[:EDGE] + data[-EDGE:]).hexdigest()
    # Small files: the bytes once, however short (a browser's file.slice computes the same).
    for small in (b"", b"a,b\n", b"x" * (EDGE + 10)):
        digest = hashlib.sha256(small[:EDGE] + small[EDGE:]).hexdigest()
        assert of_stream(io.BytesIO(small), "s.csv", len(small)).edges_sha256 == digest


def test_what_the_fingerprint_sees_and_says(tmp_path: Path) -> None:
    data = bytearray(b"a,b\n" + b"1,2\n" * (MB))
    first = of_stream(io.BytesIO(bytes(data)), "f.csv", len(data))
    data[-2] = ord("3")  # the last MiB
    last_changed = of_stream(io.BytesIO(bytes(data)), "f.csv", len(data))
    assert last_changed != first
    assert last_changed.differs_from(first) == "'f.csv' has the same size but other content at its start or end"
    longer = of_stream(io.BytesIO(bytes(data) + b"4,5\n"), "f.csv", len(data) + 4)
    assert (
        longer.differs_from(first) == f"it was made for {len(data):,} bytes of 'f.csv'; this file has {len(data) + 4:,}"
    )
    assert first.differs_from(first) == ""
    assert Fingerprint.from_dict(first.to_dict()) == first


def test_a_record_written_before_fingerprints_still_reads() -> None:
    old = {
        "schema_version": 1, "task_id": "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", "task_name": "old", "created_by": "ada",
        "task_type": "copy", "status": "created", "created_at": "2026-01-01T00:00:00.000Z",
    }  # fmt: skip
    record = record_from_json(json.dumps(old).encode(), "status.json")
    assert record.input_fingerprint == {} and record.input_upload == {}
    assert Fingerprint.from_dict(record.input_fingerprint) is None  # found by no --resume


def test_the_fingerprint_is_in_the_first_write_and_the_upload_noted_by_the_lifecycle(tmp_path: Path) -> None:
    store, layout = LocalStore(tmp_path / "store"), Layout()
    service, ada = TaskService(store, layout), Actor("ada")
    file = of_stream(io.BytesIO(b"a,b\n1,2\n"), "in.csv", 8)
    created = service._transitions.create(ada, "t", "copy", None, None, file.to_dict())
    stored, _ = service._records.read(created.task_id)
    assert stored.input_fingerprint == file.to_dict() and stored.revision == 1
    noted = service._records.update(
        created.task_id, lambda r, now: lifecycle.note_upload(r, now, upload={"upload_id": "u1", "part_size": 8})
    )
    assert noted.input_upload == {"upload_id": "u1", "part_size": 8} and noted.input_fingerprint == file.to_dict()
    assert noted.history[-1]["event"] == "upload" and noted.status == "created"
    queued = lifecycle.submit(noted, store.now(), input_etag='"e"', input_size=8)
    with pytest.raises(InvalidTransition, match="cannot upload"):
        lifecycle.note_upload(queued, store.now(), upload={})
