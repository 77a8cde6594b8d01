"""What a refused upload leaves in the store: nothing (issue 36 item 4). A task whose file was declared as
1 KB accepted a much larger PUT on its upload URL; finishing refused it and cancelled the task, but the
file stayed in the bucket until someone noticed. On moto over HTTP, on SeaweedFS (an S3 server no one
here wrote), on Azurite, on fake-gcs-server and on the local store, through the URL a browser is given;
in parts (a part sent larger than its place in the file) on moto over HTTP and Azurite; a continued
upload and the CLI's continue the same way. Each time the store is listed afterwards: no input, no open
upload."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import requests
from conftest import make_store

from s3task.errors import InvalidInput, NotFound
from s3task.fingerprint import of_stream
from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.base import MultipartStore, ObjectStore
from s3task.tasks import Actor, TaskService
from s3task.tasks.resumable import PART_SIZE, PARTS_ABOVE
from s3task.web.transfer import signer_for

ADA = Actor("ada")
LAYOUT = Layout("batch-tasks")
BIG = b"id,value\n" + b"1,2\n" * 250_000  # about 1 MB, sent where 1 KB was declared
#: A file just over the size that goes in parts (three parts: 8, 8 and 1 MiB), as declared.
DECLARED = b"id,value\n" + b"%08d,%08d\n" % (1, 1) * ((PARTS_ABOVE + 2**20) // 18)


def left_of(store: ObjectStore, key: str) -> list[str]:
    """What the store holds of the task's input, listed: the object, and any upload in parts still open."""
    held = [k for k in store.list_keys(key.rsplit("/", 1)[0] + "/") if k == key]
    if isinstance(store, MultipartStore) and hasattr(store, "open_uploads"):
        held += [f"open upload {u}" for k, u in store.open_uploads(key) if k == key]
    return held


@pytest.mark.parametrize("kind", ["local", "moto_http", "seaweedfs", "azurite", "fake_gcs"])
def test_a_file_larger_than_declared_is_refused_and_removed_with_its_task(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind != "local":
        request.applymarker(pytest.mark.slow)
    store = make_store(kind, tmp_path, request)
    service = TaskService(store, LAYOUT, url_signer=signer_for(store, key="k" * 32))
    plan = service.begin_browser_upload(ADA, "declared small", "copy", None, None, 1_024)
    key = read_record(store, LAYOUT, plan.task_id)[0].input_object_path
    if kind == "local":  # the app's signed /transfer route: sent as the route would store it
        service.upload_input(ADA, plan.task_id, BIG)
    else:
        assert plan.url is not None and plan.url.startswith("http")
        sent = requests.put(plan.url, data=BIG, headers=dict(plan.headers or {}), timeout=30)
        if kind == "seaweedfs":  # it checks the URL's signature, which binds the 1,024 bytes (test_sized_urls.py)
            assert sent.status_code == 403 and left_of(store, key) == []
            store.client.put_object(Bucket=store.bucket, Key=key, Body=BIG)  # a sender no URL binds, then
        else:
            assert sent.status_code in (200, 201), sent.text
    assert store.head(key).size == len(BIG)
    with pytest.raises(InvalidInput, match=f"the store holds {len(BIG):,} bytes of the file's 1,024"):
        service.finish_browser_upload(ADA, plan)
    assert read_record(store, LAYOUT, plan.task_id)[0].status == "abandoned"
    with pytest.raises(NotFound):
        store.head(key)  # what was sent went with the task
    assert left_of(store, key) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["moto_http", "azurite", "fake_gcs"])
def test_a_part_larger_than_its_place_is_refused_at_the_join_and_removed(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The report's second case, smaller: a file declared in three parts, part 1 sent with more bytes than its
    place in the file holds through its URL, the others as they are. The join gives a file of another size:
    refused in words, the task cancelled, and the joined file deleted, with no upload left open."""
    store = make_store(kind, tmp_path, request)
    service = TaskService(store, LAYOUT)
    file = of_stream(io.BytesIO(DECLARED), "declared.csv", len(DECLARED))
    plan = service.begin_browser_upload(ADA, "declared in parts", "copy", None, None, len(DECLARED), file)
    assert plan.upload_id is not None and plan.parts is not None and len(plan.parts) == 3
    pieces = [DECLARED[i : i + PART_SIZE] for i in range(0, len(DECLARED), PART_SIZE)]
    pieces[0] += b"9,9\n" * (2**20 // 4)  # a MiB more than part 1's place
    sent = []
    for number, (url, body) in enumerate(zip(plan.parts, pieces, strict=True), start=1):
        assert url is not None
        put = requests.put(url, data=body, timeout=60)  # no headers, as the browser sends a part
        assert put.status_code in (200, 201), put.text
        sent.append((number, put.headers.get("ETag", "")))
    key = read_record(store, LAYOUT, plan.task_id)[0].input_object_path
    too_big = len(DECLARED) + 2**20
    with pytest.raises(InvalidInput, match=f"the store holds {too_big:,} bytes of the file's {len(DECLARED):,}"):
        service.finish_browser_upload(ADA, plan, sent)
    assert read_record(store, LAYOUT, plan.task_id)[0].status == "abandoned"
    assert left_of(store, key) == []


def test_a_continued_upload_refused_for_its_size_is_removed(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Continue upload (the task's page) finishes through the same door: a file of another size than the one
    the task was made for is refused at the finish, and what was sent goes with the task."""
    store = make_store("local", tmp_path, request)
    service = TaskService(store, LAYOUT, url_signer=signer_for(store, key="k" * 32))
    small = b"id,value\n1,2\n"
    file = of_stream(io.BytesIO(small), "small.csv", len(small))
    first = service.begin_browser_upload(ADA, "continued", "copy", None, None, len(small), file)
    plan = TaskService(store, LAYOUT, url_signer=signer_for(store, key="k" * 32)).continue_browser_upload(
        ADA, first.task_id, file
    )
    service.upload_input(ADA, plan.task_id, BIG)  # where the link was used with more than was declared
    key = read_record(store, LAYOUT, plan.task_id)[0].input_object_path
    with pytest.raises(InvalidInput, match=f"the store holds {len(BIG):,} bytes of the file's {len(small):,}"):
        service.finish_browser_upload(ADA, plan)
    assert read_record(store, LAYOUT, plan.task_id)[0].status == "abandoned"
    assert left_of(store, key) == []


def test_the_clis_continue_refused_for_its_size_is_removed(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """``submit --resume`` of a file that grew while it was sent (more bytes than its fingerprint says): the
    finish refuses it, and the copy sent is deleted with the task."""
    store = make_store("local", tmp_path, request)
    service = TaskService(store, LAYOUT)
    small = b"id,value\n1,2\n"
    file = of_stream(io.BytesIO(small), "small.csv", len(small))
    waiting = service.create(ADA, "continued", "copy").record
    key = waiting.input_object_path
    with pytest.raises(InvalidInput, match=f"the store holds {len(BIG):,} bytes of the file's {len(small):,}"):
        service.resume_upload(ADA, waiting, io.BytesIO(BIG), file)
    assert read_record(store, LAYOUT, waiting.task_id)[0].status == "abandoned"
    assert left_of(store, key) == []


def test_a_refusal_leaves_a_task_queued_meanwhile_and_its_file(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal racing another window must not cost a task the file it needs: this finish reads the file too
    large, and before it gives up, the other window sends its own file and queues the task. The give-up cancels
    only a task still waiting for its file (and deletes after): the task stays queued and its file stays."""
    from s3task.tasks import transitions

    store = make_store("local", tmp_path, request)
    service, other = TaskService(store, LAYOUT), TaskService(store, LAYOUT)
    task_id = service.create(ADA, "raced", "copy").record.task_id
    service.upload_input(ADA, task_id, BIG)
    real_check, queued = transitions.check_input, []

    def check_then_the_other_window(
        store: ObjectStore, record: object, params: object, size: int | None = None
    ) -> object:
        try:
            return real_check(store, record, params, size)  # type: ignore[arg-type]
        finally:
            if not queued:  # once: the other window's own finish goes through the real check
                queued.append(True)
                other.upload_input(ADA, task_id, b"id,value\n1,2\n")
                queued.append(other.submit(ADA, task_id))

    monkeypatch.setattr(transitions, "check_input", check_then_the_other_window)
    with pytest.raises(InvalidInput, match=f"the store holds {len(BIG):,} bytes of the file's 1,024"):
        TaskService(store, LAYOUT).finish_upload(ADA, task_id, size=1_024)  # a process that did not make it
    record = read_record(store, LAYOUT, task_id)[0]
    assert (record.status, record.input_etag) == ("queued", queued[1].input_etag)
    assert store.head(record.input_object_path).etag == record.input_etag


def test_repair_deletes_what_a_cancel_that_died_before_its_delete_left(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A process that dies between the cancel's record write and its delete leaves the file of a cancelled task
    (never a queued task without one): ``s3task repair`` deletes it, and only it — a queued task's file and a
    file that was queued before its task was cancelled stay."""
    import argparse

    from s3task import cli_store
    from s3task.tasks import transitions

    store = make_store("local", tmp_path, request)
    service = TaskService(store, LAYOUT)
    ids = [service.create(ADA, name, "copy").record.task_id for name in ("died", "queued", "ran")]
    for task_id in ids:
        service.upload_input(ADA, task_id, b"id,value\n1,2\n")
    service.submit(ADA, ids[1])
    service.submit(ADA, ids[2])
    with monkeypatch.context() as died:
        died.setattr(transitions, "drop_unsent", lambda store, before: None)  # the process died here
        service.cancel(ADA, ids[0])
    service.cancel(ADA, ids[2])
    keys = [read_record(store, LAYOUT, task_id)[0].input_object_path for task_id in ids]
    assert [left_of(store, key) for key in keys] == [[key] for key in keys]
    assert cli_store.cmd_repair(argparse.Namespace(), store, LAYOUT) == 0
    assert "files of cancelled uploads deleted: 1" in capsys.readouterr().out
    assert [left_of(store, key) for key in keys] == [[], [keys[1]], [keys[2]]]
