"""A browser's upload in parts, continued from the task's page, through the service's door
(s3task.tasks.browser_uploads; the parts from s3task.tasks.resumable ``browser_parts``): noted on the task
before its first part, continued only with the file recorded on the task, presigning only the parts the
store does not hold (on the S3 store over moto)."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
from pathlib import Path

import pytest
from conftest import make_store
from support import four_parts

from s3task.errors import InvalidInput
from s3task.fingerprint import Fingerprint, of_stream
from s3task.layout import Layout
from s3task.records import read_record
from s3task.tasks import Actor, TaskService
from s3task.tasks.resumable import PART_SIZE
from ui import direct

pytestmark = pytest.mark.slow  # files of four parts, over moto

ADA = Actor("ada")
LAYOUT = Layout("batch-tasks")


@pytest.fixture
def s3(request: pytest.FixtureRequest, tmp_path: Path):
    return make_store("moto", tmp_path, request)


def chosen(data: bytes, name: str = "data.csv") -> direct.Chosen:
    """What the browser reports of a picked file: its name, size, first bytes and edge digest."""
    file = of_stream(io.BytesIO(data), name, len(data))
    value = {"id": "f1", "name": name, "size": len(data), "head": base64.b64encode(data[:100]).decode(),
             "edges_sha256": file.edges_sha256}  # fmt: skip
    got = direct.Chosen.from_state(value)
    assert got is not None
    return got


def part(data: bytes, n: int) -> bytes:
    return data[(n - 1) * PART_SIZE : n * PART_SIZE]


def test_a_browser_upload_is_noted_then_continued_with_only_the_missing_parts(s3) -> None:
    service = TaskService(s3, LAYOUT)
    picked = chosen(four_parts())
    file = picked.fingerprint()
    assert file is not None and file == of_stream(io.BytesIO(four_parts()), "data.csv", len(four_parts()))
    first = service.begin_browser_upload(ADA, "big", "copy", None, None, len(four_parts()), file)
    task_id = first.task_id
    assert first.parts is not None and len(first.parts) == 4 and all(first.parts) and first.held == {}
    noted = read_record(s3, LAYOUT, task_id)[0]
    assert noted.status == "created" and noted.input_upload == {"upload_id": first.upload_id, "part_size": PART_SIZE}
    assert noted.input_fingerprint == file.to_dict()

    key = noted.input_object_path
    assert first.upload_id is not None
    sent = {n: s3.upload_part(key, first.upload_id, n, part(four_parts(), n)) for n in (1, 3)}
    s3.upload_part(key, first.upload_id, 4, part(four_parts(), 4)[:-1])  # cut short: not kept

    again = TaskService(s3, LAYOUT)  # the page reloaded, or another app process: nothing remembered
    plan = again.continue_browser_upload(ADA, task_id, file)
    assert plan.upload_id == first.upload_id and plan.held == sent
    assert plan.parts is not None and [bool(u) for u in plan.parts] == [False, True, False, True]
    browser_sent = {"parts": [[2, s3.upload_part(key, first.upload_id, 2, part(four_parts(), 2))],
                              [4, s3.upload_part(key, first.upload_id, 4, part(four_parts(), 4))]]}  # fmt: skip
    queued = again.finish_browser_upload(ADA, plan, direct.sent_parts(browser_sent))
    assert (queued.task_id, queued.status) == (task_id, "queued")
    assert hashlib.sha256(s3.get(key).body).digest() == hashlib.sha256(four_parts()).digest()


def test_another_file_is_refused_in_words_and_the_task_and_its_upload_stay(s3) -> None:
    service = TaskService(s3, LAYOUT)
    picked = chosen(four_parts())
    file = picked.fingerprint()
    assert file is not None
    task_id = service.begin_browser_upload(ADA, "big", "copy", None, None, len(four_parts()), file).task_id
    before = read_record(s3, LAYOUT, task_id)

    def other(data: bytes, name: str = "data.csv") -> Fingerprint:
        found = chosen(data, name).fingerprint()
        assert found is not None
        return found

    edited = four_parts()[:-10] + b"9999999999"  # the same size and name, another end
    with pytest.raises(InvalidInput) as refused:
        service.continue_browser_upload(ADA, task_id, other(edited))
    assert str(refused.value) == (
        f"this is not the file task {task_id} was made for ('data.csv' has the same size but other content at its "
        "start or end); nothing was sent, and the task still waits for 'data.csv'"
    )
    with pytest.raises(InvalidInput, match=r"made for 'data\.csv', not 'other\.csv'"):
        service.continue_browser_upload(ADA, task_id, other(four_parts(), "other.csv"))
    assert read_record(s3, LAYOUT, task_id) == before  # nothing written, nothing started


def test_a_browser_without_a_digest_uploads_as_before_and_the_task_cannot_be_continued(s3) -> None:
    service = TaskService(s3, LAYOUT)
    picked = chosen(four_parts())
    blind = direct.Chosen(picked.id, picked.name, picked.size, picked.head)  # no Web Crypto on the page
    plan = service.begin_browser_upload(ADA, "big", "copy", None, None, blind.size, blind.fingerprint())
    assert plan.parts is not None and len(plan.parts) == 4 and plan.upload_id and not plan.continuable
    record = read_record(s3, LAYOUT, plan.task_id)[0]
    assert record.input_upload == {} and record.input_fingerprint == {}
    with pytest.raises(InvalidInput, match="has no record of the file it was made for"):
        service.same_file(record, of_stream(io.BytesIO(four_parts()), "data.csv", len(four_parts())))


def test_the_store_failing_at_the_join_keeps_the_task_and_its_parts_to_continue(s3, monkeypatch) -> None:
    """Found by the second outside review: a 5xx/timeout at Complete Multipart Upload cancelled the task and
    aborted its parts, though the upload was noted on the task to be continued."""
    from s3task.errors import StoreUnavailable, UploadInterrupted

    service = TaskService(s3, LAYOUT)
    picked = chosen(four_parts())
    file = picked.fingerprint()
    assert file is not None
    plan = service.begin_browser_upload(ADA, "big", "copy", None, None, len(four_parts()), file)
    task_id = plan.task_id
    assert plan.upload_id is not None
    key = read_record(s3, LAYOUT, task_id)[0].input_object_path
    report = {"parts": [[n, s3.upload_part(key, plan.upload_id, n, part(four_parts(), n))] for n in (1, 2, 3, 4)]}

    def unavailable(*args, **kwargs):
        raise StoreUnavailable(f"the store failed on {key} (InternalError)")

    with monkeypatch.context() as patched:
        patched.setattr(s3, "complete_multipart", unavailable)
        with pytest.raises(UploadInterrupted, match="the task store failed while joining the file's parts"):
            service.finish_browser_upload(ADA, plan, direct.sent_parts(report))
    waiting = read_record(s3, LAYOUT, task_id)[0]
    assert waiting.status == "created"  # still waiting, not cancelled
    assert len(s3.list_parts(key, plan.upload_id)) == 4  # every part still held
    again = TaskService(s3, LAYOUT).continue_browser_upload(ADA, waiting.task_id, file)
    assert again.parts == (None, None, None, None)  # continuing sends nothing: the store holds it all
    queued = service.finish_browser_upload(ADA, again)
    assert queued.status == "queued"
    assert hashlib.sha256(s3.get(key).body).digest() == hashlib.sha256(four_parts()).digest()


def test_a_refusal_at_the_join_still_cancels_the_task_and_drops_its_parts(s3) -> None:
    """Not every failure keeps the task: a file of another size than the browser said is refused for good."""
    service = TaskService(s3, LAYOUT)
    picked = chosen(four_parts())
    file = picked.fingerprint()
    assert file is not None
    plan = service.begin_browser_upload(ADA, "big", "copy", None, None, len(four_parts()), file)
    task_id = plan.task_id
    assert plan.upload_id is not None
    key = read_record(s3, LAYOUT, task_id)[0].input_object_path
    report = {"parts": [[n, s3.upload_part(key, plan.upload_id, n, part(four_parts(), n))] for n in (1, 2, 3, 4)]}
    with pytest.raises(InvalidInput):
        service.finish_browser_upload(
            ADA, dataclasses.replace(plan, size=len(four_parts()) + 1), direct.sent_parts(report)
        )
    assert read_record(s3, LAYOUT, task_id)[0].status == "abandoned"
