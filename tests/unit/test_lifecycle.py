"""The lifecycle: every allowed transition and every refused one, through the public functions."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from s3task import lifecycle
from s3task.errors import InvalidTransition, NotOwner
from s3task.lifecycle import Lease, Progress, Status
from s3task.record import TaskRecord, parse_iso
from s3task.states import State

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
LEASE = 60.0
WORKER = "worker-1"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def new_record(**changes) -> TaskRecord:
    record = TaskRecord(
        task_id="7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
        task_name="prices",
        created_by="ada",
        task_type="copy",
        revision=1,
        write_id="w0",
        created_at="2026-01-01T12:00:00.000Z",
        updated_at="2026-01-01T12:00:00.000Z",
    )
    return record.replace(**changes)


def submitted(record: TaskRecord | None = None) -> TaskRecord:
    return lifecycle.submit(record or new_record(), at(1), input_etag='"abc"', input_size=100)


def claimed(record: TaskRecord | None = None, now: datetime | None = None) -> tuple[TaskRecord, Lease]:
    return lifecycle.claim(record or submitted(), now or at(2), worker_id=WORKER, lease_seconds=LEASE)


def in_state(state: str) -> tuple[TaskRecord, Lease]:
    """A record in ``state`` reached through the public functions, with the lease of its last claim."""
    running, lease = claimed()
    if state == "created":
        return new_record(), lease
    if state == "queued":
        return submitted(), lease
    if state == "running":
        return running, lease
    if state == "completed":
        done = lifecycle.complete(running, at(3), lease=lease, output_path="o.csv", progress=Progress(), row_count=0)
        return done, lease
    if state == "failed":
        return lifecycle.fail(running, at(3), lease=lease, error="boom", permanent=False), lease
    if state == "failed-final":
        return lifecycle.fail(running, at(3), lease=lease, error="bad input", permanent=True), lease
    if state == "abandoned":
        return lifecycle.cancel(running, at(3), by="ada"), lease
    raise ValueError(state)


STATES = ["created", "queued", "running", "completed", "failed", "failed-final", "abandoned"]

# Each public transition function, the state it moves to, and how to call it on (record, lease).
MOVES: dict[str, tuple[Status, Callable[[TaskRecord, Lease], TaskRecord | None]]] = {
    "upload": (Status.CREATED, lambda r, _: lifecycle.note_upload(r, at(10), upload={"upload_id": "u"})),
    "submit": (Status.QUEUED, lambda r, _: lifecycle.submit(r, at(10), input_etag='"e"', input_size=1)),
    "claim": (Status.RUNNING, lambda r, _: lifecycle.claim(r, at(10), worker_id="w2", lease_seconds=LEASE)[0]),
    "heartbeat": (
        Status.RUNNING,
        lambda r, lease: lifecycle.heartbeat(
            r, at(10), lease=lease, lease_seconds=LEASE, progress=Progress(1, 1, 0, 9)
        ),
    ),
    "release": (Status.QUEUED, lambda r, lease: lifecycle.release(r, at(10), lease=lease)),
    "complete": (
        Status.COMPLETED,
        lambda r, lease: lifecycle.complete(
            r, at(10), lease=lease, output_path="o.csv", progress=Progress(2, 2, 0, 100), row_count=2
        ),
    ),
    "fail": (Status.FAILED, lambda r, lease: lifecycle.fail(r, at(10), lease=lease, error="boom", permanent=False)),
    "fail-for-good": (
        Status.FAILED,
        lambda r, lease: lifecycle.fail(r, at(10), lease=lease, error="bad input", permanent=True),
    ),
    "expire": (Status.FAILED, lambda r, _: lifecycle.expire(r, at(LEASE + 1000), grace_seconds=10)),
    "correct": (Status.COMPLETED, lambda r, _: lifecycle.note_correction(r, at(10), correction_id="7" + "0" * 25)),
    "retry": (Status.QUEUED, lambda r, _: lifecycle.retry(r, at(10_000), automatic=False)),
    "auto-retry": (Status.QUEUED, lambda r, _: lifecycle.retry(r, at(10_000), automatic=True)),
    "cancel": (Status.ABANDONED, lambda r, _: lifecycle.cancel(r, at(10), by="ada")),
}

# Which states each function may start from (the spec, written out independently of the table).
ALLOWED_FROM = {
    "upload": {"created"},
    "submit": {"created"},
    "claim": {"queued"},
    "heartbeat": {"running"},
    "release": {"running"},
    "complete": {"running"},
    "fail": {"running"},
    "fail-for-good": {"running"},
    "expire": {"running"},
    "retry": {"failed", "failed-final"},  # a person may grant a final failure one more attempt
    "auto-retry": {"failed"},
    "cancel": {"created", "queued", "running", "failed"},
    "correct": {"completed"},
}


def base(state: str) -> State:
    """The lifecycle state a name of STATES stands for."""
    return State.FAILED_FOR_GOOD if state == "failed-final" else State(state)


def test_the_table_is_the_documented_state_machine() -> None:
    S = State
    assert set(lifecycle.TRANSITIONS) == {
        (S.CREATED, S.CREATED),
        (S.CREATED, S.QUEUED),
        (S.QUEUED, S.RUNNING),
        (S.RUNNING, S.RUNNING),
        (S.RUNNING, S.QUEUED),
        (S.RUNNING, S.COMPLETED),
        (S.RUNNING, S.FAILED),
        (S.RUNNING, S.FAILED_FOR_GOOD),
        (S.FAILED, S.QUEUED),
        (S.FAILED_FOR_GOOD, S.QUEUED),
        (S.CREATED, S.ABANDONED),
        (S.QUEUED, S.ABANDONED),
        (S.RUNNING, S.ABANDONED),
        (S.FAILED, S.ABANDONED),
        (S.COMPLETED, S.COMPLETED),  # its corrected rows' task listed on it
    }
    assert {s for s in State if s.terminal} == {S.COMPLETED, S.FAILED_FOR_GOOD, S.ABANDONED}
    assert {s for s in State if s.live} == {S.QUEUED, S.RUNNING, S.FAILED}
    for state in STATES:  # allows() answers from the table
        record, _ = in_state(state)
        for action in set(lifecycle.TRANSITIONS.values()):
            expected = any(a == action and src is base(state) for (src, _), a in lifecycle.TRANSITIONS.items())
            assert lifecycle.allows(record, action) == expected, (state, action)


@pytest.mark.parametrize(("move", "state"), [(m, s) for m in MOVES for s in sorted(ALLOWED_FROM[m])])
def test_allowed_transition(move: str, state: str) -> None:
    target, call = MOVES[move]
    record, lease = in_state(state)
    new = call(record, lease)
    assert new is not None
    assert new.status == target
    assert (base(state), new.state) in lifecycle.TRANSITIONS
    assert new.revision == record.revision + 1
    assert new.write_id != record.write_id
    assert record.state == base(state)  # the input record is never changed in place


@pytest.mark.parametrize(("move", "state"), [(m, s) for m in MOVES for s in STATES if s not in ALLOWED_FROM[m]])
def test_refused_transition(move: str, state: str) -> None:
    _, call = MOVES[move]
    record, lease = in_state(state)
    if move == "expire":
        assert call(record, lease) is None  # not running: nothing to expire, nothing to write
        return
    with pytest.raises(InvalidTransition) as info:
        call(record, lease)
    if not isinstance(info.value, NotOwner) and move != "auto-retry":
        # The message tells a user the state (in words where its value is none: "cancelled") and what is possible.
        said = str(info.value)
        assert f"is {base(state).value}" in said or "failed for good" in said or "is cancelled" in said


def test_every_pair_outside_the_table_is_refused_by_every_function_leading_there() -> None:
    """The complement of the table: no public function performs a transition the table does not list."""
    performed = set()
    for _target, call in MOVES.values():
        for state in STATES:
            record, lease = in_state(state)
            try:
                new = call(record, lease)
            except InvalidTransition:
                continue
            if new is not None:
                performed.add((base(state), new.state))
    assert performed == set(lifecycle.TRANSITIONS)
    refused = set(itertools.product(State, State)) - performed
    assert (State.COMPLETED, State.QUEUED) in refused and (State.ABANDONED, State.QUEUED) in refused
    assert (State.FAILED_FOR_GOOD, State.ABANDONED) in refused


# --- ownership ------------------------------------------------------------------------


@pytest.mark.parametrize("write", ["heartbeat", "release", "complete", "fail"])
def test_only_the_owner_writes(write: str) -> None:
    running, lease = claimed()
    _, call = MOVES[write]
    for stranger in (
        Lease(lease.attempt_id + 1, lease.lease_token, WORKER),  # wrong attempt
        Lease(lease.attempt_id - 1, lease.lease_token, WORKER),
        Lease(lease.attempt_id, "not-the-token", WORKER),  # wrong token
    ):
        with pytest.raises(NotOwner, match="no longer owns"):
            call(running, stranger)
    for state in ("queued", "completed", "failed", "abandoned"):  # not running
        record, _ = in_state(state)
        with pytest.raises(NotOwner):
            call(record, lease)
    assert call(running, lease).revision == running.revision + 1


def test_a_stale_holder_is_fenced_after_a_reclaim() -> None:
    running, old = claimed()
    queued = lifecycle.release(running, at(3), lease=old)
    again, new = claimed(queued, at(4))
    assert new.attempt_id == old.attempt_id + 1 and new.lease_token != old.lease_token
    with pytest.raises(NotOwner):
        lifecycle.heartbeat(again, at(5), lease=old, lease_seconds=LEASE, progress=Progress())
    lifecycle.check_owner(again, new)


def test_attempt_id_only_grows() -> None:
    record = submitted()
    seen = [record.attempt_id]
    record, lease = claimed(record)
    seen.append(record.attempt_id)
    record = lifecycle.heartbeat(record, at(3), lease=lease, lease_seconds=LEASE, progress=Progress())
    seen.append(record.attempt_id)
    record = lifecycle.release(record, at(4), lease=lease)
    seen.append(record.attempt_id)
    record, lease = claimed(record, at(5))
    seen.append(record.attempt_id)
    record = lifecycle.fail(record, at(6), lease=lease, error="boom", permanent=False)
    seen.append(record.attempt_id)
    record = lifecycle.retry(record, at(7), automatic=False)
    seen.append(record.attempt_id)
    record, lease = claimed(record, at(8))
    seen.append(record.attempt_id)
    record = lifecycle.expire(record, at(8 + LEASE + 100), grace_seconds=10)
    seen.append(record.attempt_id)
    record = lifecycle.cancel(record, at(500), by="ada")
    seen.append(record.attempt_id)
    assert seen == [0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert seen == sorted(seen)


def test_claim_starts_a_fresh_attempt() -> None:
    record, lease = claimed()
    assert record.worker_id == WORKER
    assert record.lease_token == lease.lease_token
    assert parse_iso(record.lease_expires_at) == at(2 + LEASE)
    assert record.started_at == "2026-01-01T12:00:02.000Z"
    assert (record.processed_count, record.bytes_processed, record.row_count) == (0, 0, None)


def test_heartbeat_extends_the_lease_and_records_progress() -> None:
    record, lease = claimed()
    beat = lifecycle.heartbeat(record, at(30), lease=lease, lease_seconds=LEASE, progress=Progress(10, 9, 1, 50))
    assert parse_iso(beat.lease_expires_at) == at(30 + LEASE)
    assert (beat.processed_count, beat.success_count, beat.error_count, beat.bytes_processed) == (10, 9, 1, 50)
    assert beat.progress == 0.5  # by bytes: 50 of the 100 pinned at submit
    assert beat.history == record.history  # heartbeats do not flood the history


# --- failures, releases, expiry, retry ----------------------------------------------------


def test_fail_counts_failed_attempts_and_turns_final_at_max_attempts() -> None:
    record = submitted(new_record(max_attempts=3))
    for n in (1, 2, 3):
        record, lease = claimed(record, at(10 * n))
        record = lifecycle.fail(record, at(10 * n + 1), lease=lease, error=f"boom {n}", permanent=False)
        assert record.failed_attempts == n
        assert record.last_error == f"boom {n}"
        if n < 3:
            assert not record.final and not record.is_terminal and record.final_reason is None
            assert parse_iso(record.retry_at) > at(10 * n + 1)
            assert record.finished_at is None
            with pytest.raises(InvalidTransition, match="not due"):
                lifecycle.retry(record, at(10 * n + 2), automatic=True)
            record = lifecycle.retry(record, parse_iso(record.retry_at), automatic=True)
    assert record.final and record.is_terminal and record.retry_at is None
    assert record.final_reason == "attempts"  # a retry may help: the app offers one
    assert record.finished_at == to_stamp(at(31))
    with pytest.raises(InvalidTransition):
        lifecycle.retry(record, at(10_000), automatic=True)
    with pytest.raises(InvalidTransition, match="failed for good"):
        lifecycle.cancel(record, at(10_000), by="ada")


def to_stamp(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def test_a_permanent_error_is_final_at_once() -> None:
    record, lease = claimed()
    failed = lifecycle.fail(record, at(3), lease=lease, error="bad input", permanent=True)
    assert failed.final and failed.failed_attempts == 1 and failed.is_terminal
    assert failed.final_reason == "input"  # the same file fails the same way: the app offers a fresh start


def test_a_person_may_retry_a_final_failure_which_grants_one_more_attempt() -> None:
    record = submitted(new_record(max_attempts=1))
    record, lease = claimed(record)
    record = lifecycle.fail(record, at(3), lease=lease, error="boom", permanent=False)
    assert record.final
    again = lifecycle.retry(record, at(100), automatic=False)
    assert again.status == "queued" and not again.final and again.final_reason is None
    assert again.max_attempts == 2
    record, lease = claimed(again, at(101))
    assert lifecycle.fail(record, at(102), lease=lease, error="boom", permanent=False).final


def test_backoff_grows() -> None:
    delays = [lifecycle.backoff_seconds(n) for n in range(1, 12)]
    assert delays == sorted(delays)
    assert delays[-1] == lifecycle.BACKOFF_MAX_SECONDS


def test_release_charges_no_failed_attempt_and_is_capped() -> None:
    record = submitted()
    for n in range(1, lifecycle.MAX_RELEASES):
        record, lease = claimed(record, at(n))
        record = lifecycle.release(record, at(n), lease=lease)
        assert record.status == "queued"
        assert record.failed_attempts == 0 and record.release_count == n
        assert record.worker_id is None and record.lease_token is None and record.lease_expires_at is None
    record, lease = claimed(record, at(100))
    stopped = lifecycle.release(record, at(101), lease=lease)
    assert stopped.status == "failed" and stopped.final
    assert "released" in stopped.last_error


def test_expire_respects_the_grace_by_the_given_clock() -> None:
    record, _ = claimed(now=at(0))
    expires = at(LEASE)
    assert lifecycle.expire(record, expires, grace_seconds=10) is None
    assert lifecycle.expire(record, expires + timedelta(seconds=10), grace_seconds=10) is None
    expired = lifecycle.expire(record, expires + timedelta(seconds=10.001), grace_seconds=10)
    assert expired is not None
    assert expired.status == "failed" and expired.failed_attempts == 1 and not expired.final
    assert WORKER in expired.last_error
    # The lease is judged by the clock it is given, not the machine's: a year-old "now" expires nothing.
    assert lifecycle.expire(record, at(-365 * 86400), grace_seconds=0) is None


def test_cancel_clears_ownership() -> None:
    record, lease = claimed()
    cancelled = lifecycle.cancel(record, at(5), by="operator")
    assert cancelled.status == "abandoned" and cancelled.is_terminal
    assert cancelled.lease_token is None and cancelled.finished_at == "2026-01-01T12:00:05.000Z"
    assert "operator" in cancelled.history[-1]["note"]
    with pytest.raises(NotOwner):
        lifecycle.check_owner(cancelled, lease)


def test_cancel_keeps_the_live_counts_of_the_attempt_it_stops_and_only_those() -> None:
    record, lease = claimed()
    seen = Progress(processed_count=170, success_count=170, bytes_processed=9_000, row_count=170)
    kept = lifecycle.cancel(record, at(5), by="ann", seen=seen, attempt=lease.attempt_id)
    assert (kept.processed_count, kept.row_count, kept.bytes_processed) == (170, 170, 9_000)
    # Counts of another attempt, or older than the record's, are not the cancelled attempt's: ignored.
    other = lifecycle.cancel(record, at(5), by="ann", seen=seen, attempt=lease.attempt_id + 1)
    assert other.processed_count == record.processed_count == 0
    newer = record.replace(processed_count=500, bytes_processed=20_000)
    assert lifecycle.cancel(newer, at(5), by="ann", seen=seen, attempt=lease.attempt_id).processed_count == 500


def test_revision_and_write_id_change_on_every_write() -> None:
    record = new_record()
    revisions, write_ids = [record.revision], [record.write_id]
    record = submitted(record)
    revisions.append(record.revision)
    write_ids.append(record.write_id)
    record, lease = claimed(record)
    revisions.append(record.revision)
    write_ids.append(record.write_id)
    for i in range(3):  # identical heartbeats still differ: S3 ETags of identical bytes would match
        record = lifecycle.heartbeat(record, at(3), lease=lease, lease_seconds=LEASE, progress=Progress(i))
        revisions.append(record.revision)
        write_ids.append(record.write_id)
    record = lifecycle.complete(record, at(4), lease=lease, output_path="o", progress=Progress(), row_count=0)
    revisions.append(record.revision)
    write_ids.append(record.write_id)
    assert revisions == list(range(1, len(revisions) + 1))
    assert len(set(write_ids)) == len(write_ids)


def test_history_records_each_step() -> None:
    record, lease = claimed()
    record = lifecycle.complete(record, at(4), lease=lease, output_path="o", progress=Progress(), row_count=0)
    assert [e["event"] for e in record.history] == ["submit", "claim", "complete"]
    assert record.history[1]["attempt"] == 1
