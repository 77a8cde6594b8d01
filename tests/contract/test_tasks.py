"""The control API over every store: what a user can do to tasks, and what they are told when they cannot."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import wait_for

from s3task import handlers, lifecycle
from s3task.errors import (
    AccessDenied,
    InvalidInput,
    InvalidTaskId,
    InvalidTransition,
    NotFound,
    NotOwner,
    S3TaskError,
    TaskNotFound,
    UnknownTaskType,
)
from s3task.ids import created_ms, new_task_id
from s3task.lifecycle import Lease, Progress
from s3task.record import MAX_RECORD_BYTES, TaskRecord
from s3task.records import read_record, update_record
from s3task.store.base import ObjectStore, PutMode
from s3task.store.s3 import S3Store
from s3task.tasks import Actor, TaskService

ADA = Actor("ada")
BOB = Actor("bob")
OPERATOR = Actor("root", operator=True)
CSV = b"id,name,code\n1,ada,007\n2,bob,\n"


def new_task(service: TaskService, actor: Actor = ADA, csv: bytes | None = CSV, name: str = "prices") -> str:
    task_id = service.create(actor, name, "copy").record.task_id
    if csv is not None:
        service.upload_input(actor, task_id, csv)
    return task_id


def claim(service: TaskService, task_id: str, worker: str = "w1") -> Lease:
    """What a worker does to take a queued task."""
    holder: dict[str, Lease] = {}

    def change(r: TaskRecord, now) -> TaskRecord:
        new, holder["lease"] = lifecycle.claim(r, now, worker_id=worker, lease_seconds=60)
        return new

    update_record(service.store, service.layout, task_id, change)
    return holder["lease"]


def heartbeat(service: TaskService, task_id: str, lease: Lease, progress: Progress) -> TaskRecord:
    return update_record(
        service.store,
        service.layout,
        task_id,
        lambda r, now: lifecycle.heartbeat(r, now, lease=lease, lease_seconds=60, progress=progress),
    )


def complete(service: TaskService, task_id: str, output: bytes) -> TaskRecord:
    """Claim, write the output object, complete, drop the marker: a worker's whole attempt."""
    lease = claim(service, task_id)
    key = service.layout.output_key(task_id, lease.attempt_id)
    service.store.put(key, output, PutMode.CREATE, content_type="text/csv")
    rows = output.count(b"\n") - 1
    record = update_record(
        service.store,
        service.layout,
        task_id,
        lambda r, now: lifecycle.complete(
            r, now, lease=lease, output_path=key, progress=Progress(rows, rows, 0, len(output)), row_count=rows
        ),
    )
    service.store.delete(service.layout.active_key(task_id))
    return record


def fail(service: TaskService, task_id: str, *, permanent: bool) -> TaskRecord:
    lease = claim(service, task_id)
    return update_record(
        service.store,
        service.layout,
        task_id,
        lambda r, now: lifecycle.fail(r, now, lease=lease, error="handler crashed", permanent=permanent),
    )


def exists(store: ObjectStore, key: str) -> bool:
    try:
        store.head(key)
        return True
    except NotFound:
        return False


# --- create, upload, submit ----------------------------------------------------------------


def test_create_upload_submit(service: TaskService) -> None:
    created = service.create(ADA, "  prices  ", "copy")
    record = created.record
    assert (record.status, record.task_name, record.created_by) == ("created", "prices", "ada")
    assert record.task_type == "copy"
    if isinstance(service.store, S3Store):
        assert created.upload_url and "X-Amz-Signature" in created.upload_url
    meta = service.upload_input(ADA, record.task_id, iter([CSV[:10], CSV[10:]]))  # streamed in chunks
    assert meta.size == len(CSV)
    queued = service.submit(ADA, record.task_id)
    assert queued.status == "queued"
    assert queued.input_etag == service.store.head(record.input_object_path).etag
    assert queued.input_size_bytes == len(CSV)
    assert exists(service.store, service.layout.active_key(record.task_id))
    assert exists(service.store, service.layout.user_key("ada", record.task_id))
    assert service.get(BOB, record.task_id) == queued
    assert service.store.get(record.input_object_path).body == CSV


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (None, "no input file yet"),
        (b"", "empty"),
        (b"\n\n", "empty"),  # blank lines only: no header row
        (b"a,a\n1,2\n", "repeats column names"),
        (b'a,"b\n1,2\n', "is never closed"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8", "not UTF-8"),
        (b"id\x00name\n1\n", "binary"),
    ],
)
def test_submit_refuses_unusable_input_and_loses_nothing(
    service: TaskService, body: bytes | None, message: str
) -> None:
    task_id = new_task(service, csv=body)
    with pytest.raises(InvalidInput, match=message):
        service.submit(ADA, task_id)
    record = service.get(ADA, task_id)
    assert record.status == "created" and record.input_etag is None
    assert not exists(service.store, service.layout.active_key(task_id))
    if body is not None:
        assert service.store.get(record.input_object_path).body == body  # the user's upload is still there
    service.upload_input(ADA, task_id, CSV)  # fix the file and carry on
    assert service.submit(ADA, task_id).status == "queued"


def test_header_with_bom_and_crlf_is_accepted(service: TaskService) -> None:
    task_id = new_task(service, csv=b"\xef\xbb\xbfid,name\r\n1,ada\r\n")
    assert service.submit(ADA, task_id).status == "queued"


def test_input_is_replaceable_until_submit_not_after(service: TaskService) -> None:
    task_id = new_task(service, csv=b"a\n1\n")
    service.upload_input(ADA, task_id, b"b\n2\n")
    queued = service.submit(ADA, task_id)
    key = queued.input_object_path
    assert service.store.get(key).body == b"b\n2\n"
    assert queued.input_etag == service.store.head(key).etag
    with pytest.raises(InvalidTransition, match=r"cannot replace the input: task .* is queued"):
        service.upload_input(ADA, task_id, b"c\n3\n")
    with pytest.raises(InvalidTransition, match=r"cannot submit task .* is queued"):
        service.submit(ADA, task_id)
    assert service.store.get(key).body == b"b\n2\n"


def test_create_validates(service: TaskService) -> None:
    with pytest.raises(InvalidInput, match="name"):
        service.create(ADA, "   ", "copy")
    with pytest.raises(InvalidInput, match="longer"):
        service.create(ADA, "x" * 201, "copy")
    with pytest.raises(UnknownTaskType, match="nope"):
        service.create(ADA, "t", "nope")
    with pytest.raises(InvalidInput, match="no parameter"):
        service.create(ADA, "t", "copy", {"bogus": 1})
    with pytest.raises(AccessDenied):
        Actor("")
    assert service.list(ADA).tasks == []


class Note(handlers.TaskType):
    """A task type with a free-text parameter, as a form would offer."""

    name = "test-note"
    title = "Note"
    description = "Copies rows and keeps a note."
    params = (handlers.Param("note", "str", default=""),)


def test_parameters_too_large_for_a_record_are_refused_up_front(
    service: TaskService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record bigger than a record may be could be written once and never read again."""
    handlers.all_types()  # load the built-ins, then add ours for this test only
    monkeypatch.setitem(handlers._REGISTRY, Note.name, Note)
    with pytest.raises(InvalidInput, match="parameters"):
        service.create(ADA, "huge", "test-note", {"note": "x" * MAX_RECORD_BYTES})
    assert service.list(ADA).tasks == [] and service.list(ADA).problems == []
    task_id = service.create(ADA, "fine", "test-note", {"note": "x" * 10_000}).record.task_id
    assert service.get(ADA, task_id).payload == {"note": "x" * 10_000}


def test_unknown_and_invalid_ids(service: TaskService) -> None:
    with pytest.raises(TaskNotFound, match="does not exist"):
        service.get(ADA, new_task_id())
    for bad in ("../x", "%2e%2e", "/abs", "abc"):
        with pytest.raises(InvalidTaskId):
            service.get(ADA, bad)
        with pytest.raises(InvalidTaskId):
            service.cancel(ADA, bad)


# --- listing -------------------------------------------------------------------------------


def test_list_newest_first_across_pages(service: TaskService) -> None:
    made = [new_task(service, ADA if i % 2 else BOB, name=f"t{i}") for i in range(7)]
    for task_id in made[::2]:
        service.submit(BOB if made.index(task_id) % 2 == 0 else ADA, task_id)  # active/ markers exist too
    seen: list[str] = []
    pages = []
    cursor = None
    while True:
        page = service.list(BOB, limit=3, cursor=cursor)
        pages.append(len(page.tasks))
        seen += [t.task_id for t in page.tasks]
        assert page.problems == []
        cursor = page.next_cursor
        if cursor is None:
            break
        assert len(pages) < 10
    assert pages == [3, 3, 1]
    six = service.list(ADA, limit=6)
    assert [t.task_id for t in six.tasks] == sorted(made)[:6]
    assert service.list(ADA, limit=6, cursor=six.next_cursor).next_cursor is None
    assert service.list(ADA, limit=7).next_cursor is None  # exactly all of them: no empty next page
    assert seen == sorted(made)  # ascending ids = newest first
    times = [created_ms(t) for t in seen]
    assert times == sorted(times, reverse=True)
    # The newest first, the oldest last: to the millisecond, the ids' time (two tasks made in one millisecond
    # are in either order, their ids' random part; on a fast disk most of these seven are).
    assert created_ms(seen[0]) == created_ms(made[-1]) and created_ms(seen[-1]) == created_ms(made[0])


def test_list_mine(service: TaskService) -> None:
    ada = [new_task(service, ADA, csv=None) for _ in range(4)]
    bob = [new_task(service, BOB, csv=None) for _ in range(2)]
    first = service.list(ADA, mine=True, limit=3)
    second = service.list(ADA, mine=True, limit=3, cursor=first.next_cursor)
    assert [t.task_id for t in first.tasks + second.tasks] == sorted(ada)
    assert second.next_cursor is None
    first_half = service.list(ADA, mine=True, limit=2)
    second_half = service.list(ADA, mine=True, limit=2, cursor=first_half.next_cursor)
    assert [t.task_id for t in first_half.tasks + second_half.tasks] == sorted(ada)
    assert second_half.next_cursor is None  # an exact multiple of the limit: no cursor to an empty page
    assert [t.task_id for t in service.list(BOB, mine=True).tasks] == sorted(bob)
    assert service.list(Actor("carol"), mine=True).tasks == []


def test_list_limits_and_bad_cursor(service: TaskService) -> None:
    with pytest.raises(InvalidInput, match="limit"):
        service.list(ADA, limit=0)
    with pytest.raises(InvalidInput, match="limit"):
        service.list(ADA, limit=201)
    with pytest.raises(InvalidInput, match="cursor"):
        service.list(ADA, cursor="../../x")


def test_list_reports_an_unreadable_record_and_goes_on(service: TaskService) -> None:
    good = new_task(service, csv=None)
    bad = new_task(service, csv=None)
    service.store.put(service.layout.status_key(bad), b"{broken", PutMode.OVERWRITE)
    page = service.list(ADA)
    assert [t.task_id for t in page.tasks] == [good]
    assert len(page.problems) == 1 and bad in page.problems[0]


# --- access and refusals ----------------------------------------------------------------------


def test_only_the_creator_or_an_operator_acts(service: TaskService) -> None:
    task_id = new_task(service)
    for action in (
        lambda: service.cancel(BOB, task_id),
        lambda: service.retry(BOB, task_id),
        lambda: service.submit(BOB, task_id),
        lambda: service.upload_input(BOB, task_id, b"x\n1\n"),
    ):
        with pytest.raises(AccessDenied, match="belongs to ada"):
            action()
    service.submit(ADA, task_id)
    complete(service, task_id, b"id,error\n1,\n")
    with pytest.raises(AccessDenied):
        service.read_output(BOB, task_id)
    with pytest.raises(AccessDenied):
        service.output_url(BOB, task_id)
    assert service.get(BOB, task_id).status == "completed"  # anyone may look
    assert [t.task_id for t in service.list(BOB).tasks] == [task_id]
    assert list(service.read_output(OPERATOR, task_id)["id"]) == ["1"]

    other = new_task(service)
    service.submit(ADA, other)
    assert service.cancel(OPERATOR, other).status == "abandoned"
    assert "cancelled by root" in service.get(ADA, other).history[-1]["note"]


def test_retry_refused_says_the_state_and_what_is_possible(service: TaskService) -> None:
    task_id = new_task(service)
    with pytest.raises(InvalidTransition, match=r"is created; it can be submitted or cancelled.*only failed"):
        service.retry(ADA, task_id)
    service.submit(ADA, task_id)
    with pytest.raises(InvalidTransition, match=r"is queued; .*can be cancelled; only failed tasks can be retried"):
        service.retry(ADA, task_id)
    complete(service, task_id, b"id\n1\n")
    with pytest.raises(InvalidTransition, match=r"is completed; .*downloaded"):
        service.retry(ADA, task_id)
    with pytest.raises(InvalidTransition, match=r"cannot cancel task .* is completed"):
        service.cancel(ADA, task_id)


def test_cancel_then_cancel_again(service: TaskService) -> None:
    task_id = new_task(service)
    service.submit(ADA, task_id)
    cancelled = service.cancel(ADA, task_id)
    assert cancelled.status == "abandoned"
    assert not exists(service.store, service.layout.active_key(task_id))
    with pytest.raises(InvalidTransition, match="is cancelled; nothing more can be done"):
        service.cancel(ADA, task_id)
    with pytest.raises(InvalidTransition, match="is cancelled"):
        service.retry(ADA, task_id)


def test_retry_of_a_failed_task_queues_it_with_its_marker(service: TaskService) -> None:
    task_id = new_task(service)
    service.submit(ADA, task_id)
    failed = fail(service, task_id, permanent=True)
    assert failed.final
    service.store.delete(service.layout.active_key(task_id))  # a worker drops the marker of a final failure
    queued = service.retry(ADA, task_id)
    assert queued.status == "queued" and not queued.final and queued.attempt_id == 1
    assert exists(service.store, service.layout.active_key(task_id))
    assert service.can_cancel(ADA, queued) and not service.can_retry(ADA, queued)
    assert not service.can_cancel(BOB, queued)


# --- races ---------------------------------------------------------------------------------

PROGRESS = Progress(processed_count=40, success_count=39, error_count=1, bytes_processed=400)


def test_cancel_racing_a_heartbeat_has_one_consistent_outcome(service: TaskService) -> None:
    """Whichever write lands first, the other re-reads: no lost field, no zombie heartbeat."""
    outcomes = set()
    for round_ in range(4):
        task_id = new_task(service, name=f"race {round_}")
        service.submit(ADA, task_id)
        lease = claim(service, task_id)
        barrier = threading.Barrier(2, timeout=30)

        def beat(lease: Lease = lease, task_id: str = task_id, barrier: threading.Barrier = barrier) -> str:
            barrier.wait()
            try:
                heartbeat(service, task_id, lease, PROGRESS)
                return "beat"
            except NotOwner:
                return "fenced"

        def cancel(task_id: str = task_id, barrier: threading.Barrier = barrier) -> str:
            barrier.wait()
            return service.cancel(ADA, task_id).status

        with ThreadPoolExecutor(2) as pool:
            beating, cancelling = pool.submit(beat), pool.submit(cancel)
            beat_result, cancel_result = beating.result(timeout=60), cancelling.result(timeout=60)
        stored, _ = read_record(service.store, service.layout, task_id)
        assert cancel_result == stored.status == "abandoned"
        assert stored.lease_token is None
        if beat_result == "beat":  # the heartbeat landed first and the cancel kept its counts
            assert (stored.processed_count, stored.error_count, stored.bytes_processed) == (40, 1, 400)
            assert [e["event"] for e in stored.history][-2:] == ["claim", "cancel"]
        else:  # cancelled first: the worker learnt it no longer owns the task and wrote nothing
            assert (stored.processed_count, stored.bytes_processed) == (0, 0)
        outcomes.add(beat_result)
        with pytest.raises(NotOwner):
            heartbeat(service, task_id, lease, PROGRESS)
    assert outcomes <= {"beat", "fenced"}


def test_cancel_during_a_stream_of_heartbeats(service: TaskService) -> None:
    task_id = new_task(service)
    service.submit(ADA, task_id)
    lease = claim(service, task_id)
    landed: list[int] = []
    stop = threading.Event()

    def worker() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                heartbeat(service, task_id, lease, Progress(n, n, 0, n * 10))
            except NotOwner:
                return
            landed.append(n)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        wait_for(lambda: len(landed) >= 3, timeout=20, what="a few heartbeats")
        service.cancel(ADA, task_id)
        thread.join(20)
        assert not thread.is_alive()  # the worker stopped by itself: it was told it no longer owns the task
    finally:
        stop.set()
        thread.join()
    stored, _ = read_record(service.store, service.layout, task_id)
    assert stored.status == "abandoned"
    assert stored.processed_count == landed[-1]  # the last heartbeat that landed is the one kept
    assert stored.bytes_processed == landed[-1] * 10


def test_a_submit_that_loses_to_a_submit_and_claim_does_not_requeue(service: TaskService) -> None:
    """Double submit (a double click) while a fast worker claims in between: the task stays with the worker."""
    task_id = new_task(service)
    inner = service.store

    class ClaimInBetween:
        description = "claims in between"

        def __init__(self) -> None:
            self.done = False

        def put(self, key, body, mode, **kwargs):
            if key == service.layout.status_key(task_id) and mode.kind == "update" and not self.done:
                self.done = True
                TaskService(inner, service.layout).submit(ADA, task_id)
                claim(TaskService(inner, service.layout), task_id)
            return inner.put(key, body, mode, **kwargs)

        def __getattr__(self, name):
            return getattr(inner, name)

    racing = TaskService(ClaimInBetween(), service.layout)
    with pytest.raises(InvalidTransition, match=r"cannot submit task .* is running"):
        racing.submit(ADA, task_id)
    stored, _ = read_record(inner, service.layout, task_id)
    assert stored.status == "running" and stored.attempt_id == 1 and stored.worker_id == "w1"


# --- output --------------------------------------------------------------------------------


OUTPUT = b"id,name,code,error\n1,ada,007,\n2,bob,,missing code\n3,cy,042,\n4,di,,missing code\n"


def test_read_output_of_a_completed_task(service: TaskService) -> None:
    task_id = new_task(service)
    service.submit(ADA, task_id)
    with pytest.raises(InvalidTransition, match=r"no output yet: task .* is queued"):
        service.read_output(ADA, task_id)
    done = complete(service, task_id, OUTPUT)
    assert done.output_object_path == service.layout.output_key(task_id, 1)
    frame = service.read_output(ADA, task_id)
    assert list(frame.columns) == ["id", "name", "code", "error"]
    assert list(frame["code"]) == ["007", "", "042", ""]  # text stays text, empty stays empty
    assert len(service.read_output(ADA, task_id, rows=2)) == 2
    errors = service.read_output(ADA, task_id, errors_only=True)
    assert list(errors["id"]) == ["2", "4"]
    assert list(errors["error"]) == ["missing code", "missing code"]
    assert len(service.read_output(ADA, task_id, rows=1, errors_only=True)) == 1
    with service.open_output(ADA, task_id) as f:
        assert f.read() == OUTPUT
    url = service.output_url(ADA, task_id)
    if isinstance(service.store, S3Store):
        assert url and "X-Amz-Signature" in url
    assert service.output_filename(done).endswith(".csv") and service.output_filename(done).startswith("prices-")


def test_a_retry_racing_the_pollers_marker_removal_keeps_its_marker(local_store) -> None:
    """A poller removes the marker of a task that failed for good just as a person retries it."""
    from s3task import markers
    from s3task.layout import Layout

    layout = Layout("batch-tasks")
    service = TaskService(local_store, layout)
    task_id = new_task(service)
    service.submit(ADA, task_id)
    record, lease = lifecycle.claim(
        read_record(local_store, layout, task_id)[0], local_store.now(), worker_id="w", lease_seconds=60
    )
    update_record(local_store, layout, task_id, lambda r, t: record)
    update_record(
        local_store, layout, task_id, lambda r, t: lifecycle.fail(r, t, lease=lease, error="bad", permanent=True)
    )
    # The poller has read the final record; before it deletes the marker, the person retries.
    service.retry(ADA, task_id)
    markers.drop(local_store, layout, task_id)
    assert read_record(local_store, layout, task_id)[0].status == "queued"
    assert local_store.list_keys(layout.active_root) == [layout.active_key(task_id)]


# --- the whole upload, as the page, the CLI and the API use it ------------------------------


def test_submit_file_queues_a_good_file_and_leaves_nothing_half_made_for_a_bad_one(service: TaskService) -> None:
    record = service.submit_file(ADA, "good", "copy", None, CSV)
    assert record.status == "queued" and record.input_size_bytes == len(CSV)
    with pytest.raises(InvalidInput, match="repeats column names"):
        service.submit_file(ADA, "bad", "copy", None, b"a,a\n1,2\n")
    statuses = {t.task_name: t.status for t in service.list(ADA).tasks}
    assert statuses == {"good": "queued"}  # the refused one is gone: not even a cancelled task is left


def test_finish_upload_checks_the_size_and_cancels_what_it_cannot_queue(service: TaskService) -> None:
    task_id = service.create(ADA, "browser upload", "copy").record.task_id
    service.upload_input(ADA, task_id, CSV)  # what the browser's PUT puts there
    assert service.finish_upload(ADA, task_id, size=len(CSV)).status == "queued"

    short = service.create(ADA, "cut short", "copy").record.task_id
    service.upload_input(ADA, short, CSV[:10])
    with pytest.raises(InvalidInput, match=f"holds 10 bytes of the file's {len(CSV)}"):
        service.finish_upload(ADA, short, size=len(CSV))
    assert service.get(ADA, short).status == "abandoned"
    assert not exists(service.store, service.layout.active_key(short))

    missing = service.create(ADA, "never arrived", "copy").record.task_id
    with pytest.raises(S3TaskError):
        service.finish_upload(ADA, missing, size=len(CSV))
    assert service.get(ADA, missing).status == "abandoned"
