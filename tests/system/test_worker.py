"""Real worker processes (``python worker.py``) against moto's S3 server over HTTP."""

from __future__ import annotations

import signal
from datetime import timedelta
from pathlib import Path

import pytest
import worker_handlers  # noqa: F401  (registers the test task types here too)
from conftest import wait_for
from procs import S3Workers, child_env, run, worker_args
from s3proxy import proxy_server
from support import csv_rows, no_active_markers

from s3task import errors, lifecycle
from s3task.records import update_record
from s3task.tasks import Actor

ALICE = Actor("alice")
LEASE = S3Workers.lease


@pytest.fixture
def s3(s3_workers: S3Workers) -> S3Workers:
    return s3_workers


# --- tests ----------------------------------------------------------------------------


def test_five_workers_complete_forty_tasks_exactly_once(s3: S3Workers) -> None:
    ids = [s3.submit(f"t{i}", csv_rows(i + 1)) for i in range(40)]
    workers = [s3.worker(name=f"race{i}") for i in range(5)]
    for task_id in ids:
        wait_for(lambda t=task_id: s3.done(t), timeout=120 + s3.start, what=f"{task_id} completed")
    for n, task_id in enumerate(ids):
        record = s3.record(task_id)
        assert record.attempt_id == 1, (task_id, record.history)
        assert s3.outputs(task_id) == [s3.layout.output_key(task_id, 1)]
        out = s3.store.get(record.output_object_path).body.decode().splitlines()
        assert len(out) - 1 == n + 1 == record.row_count == record.processed_count
    claimers = {e.get("note") for t in ids for e in s3.record(t).history if e["event"] == "claim"}
    assert len(claimers) > 1, "the tasks should be spread over several workers"
    no_active_markers(s3.store, s3.layout, 20 + s3.start)
    for w in workers:  # a worker that lost every race may still be starting: stop it once it runs
        w.worker_ready(20 + s3.start)
        w.send_signal(signal.SIGTERM)
    for w in workers:
        assert w.wait(20 + s3.start) == 0, w.output()


def test_sigkill_mid_task_is_recovered_by_another_worker_on_attempt_two(s3: S3Workers) -> None:
    gate = s3.tmp / "gate"
    task_id = s3.submit("held", csv_rows(5), "test_gated", {"gate": str(gate)})
    first = s3.worker(name="victim")
    wait_for(lambda: s3.done(task_id, "running"), timeout=30 + s3.start, what="claimed")
    first.kill()
    first.wait(10 + s3.start)
    gate.touch()
    second = s3.worker(name="rescuer")
    record = wait_for(lambda: s3.done(task_id), timeout=60 + s3.start, what="completed by the rescuer")
    assert record.attempt_id == 2
    assert record.failed_attempts == 1
    assert "victim" in (record.history[-3].get("note") or "") or any(
        "stopped sending heartbeats" in (h.get("note") or "") for h in record.history
    )
    assert record.output_object_path == s3.layout.output_key(task_id, 2)
    # The killed attempt never completed its output; nothing overwrote attempt 2's.
    assert s3.outputs(task_id) == [s3.layout.output_key(task_id, 2)]
    second.terminate()
    assert second.wait(20 + s3.start) == 0


def test_sigterm_releases_the_task_without_charging_an_attempt(s3: S3Workers) -> None:
    gate = s3.tmp / "gate"
    task_id = s3.submit("held", csv_rows(3), "test_gated", {"gate": str(gate)})
    w = s3.worker(name="polite")
    wait_for(lambda: s3.done(task_id, "running"), timeout=30 + s3.start, what="claimed")
    w.send_signal(signal.SIGTERM)
    assert w.wait(20 + s3.start) == 0, w.output()
    record = s3.record(task_id)
    assert record.status == "queued"
    assert record.failed_attempts == 0 and record.release_count == 1
    assert s3.store.list_keys(s3.layout.active_root) == [s3.layout.active_key(task_id)]
    gate.touch()
    s3.worker("--once", name="finisher").wait(60 + s3.start)
    record = s3.record(task_id)
    assert record.status == "completed" and record.attempt_id == 2 and record.failed_attempts == 0


def test_second_signal_exits_at_once(s3: S3Workers) -> None:
    gate = s3.tmp / "never"
    task_id = s3.submit("held", csv_rows(3), "test_gated", {"gate": str(gate)})
    with proxy_server(s3.env["AWS_ENDPOINT_URL_S3"], slow_status_puts=True) as (proxy, slow):
        w = s3.worker(env={"AWS_ENDPOINT_URL_S3": proxy}, name="impatient")
        wait_for(lambda: s3.done(task_id, "running"), timeout=30 + s3.start, what="claimed")
        slow.set()  # from now on the store takes ages to accept a record write
        w.send_signal(signal.SIGINT)
        wait_for(lambda: "releasing tasks" in w.output(), timeout=10 + s3.start, what="first signal seen")
        w.send_signal(signal.SIGINT)
        assert w.wait(5 + s3.start) == 128 + signal.SIGINT
    assert s3.record(task_id).status == "running"  # it left without writing; the lease will expire


def test_hung_handler_is_killed_after_stall_timeout_and_retried(s3: S3Workers) -> None:
    # Small tasks first, until one completes: the fork server has loaded before the hung one is claimed (one
    # still loading after the 2 s fails an attempt as "not ready" instead, on a busy machine).
    warm = [s3.submit("warm-up", csv_rows(2))]
    w = s3.worker("--stall-timeout", "2", "--max-attempts", "2", name="stall")

    def warmed() -> bool:
        record = s3.record(warm[-1])
        if record.final:  # both its attempts met a fork server still loading: another
            warm.append(s3.submit("warm-up", csv_rows(2)))
        return record.status == "completed"

    wait_for(warmed, timeout=60 + s3.start, what="a warm-up task completed")
    task_id = s3.submit("hangs", csv_rows(3), "test_hang")
    record = wait_for(lambda: s3.done(task_id, "failed") if s3.record(task_id).final else None, timeout=60 + s3.start)
    assert record.failed_attempts == 2 and record.attempt_id == 2
    assert "stalled" in record.last_error
    no_active_markers(s3.store, s3.layout, 20 + s3.start)
    w.terminate()
    w.wait(20 + s3.start)


def test_deterministic_failure_stops_after_max_attempts(s3: S3Workers) -> None:
    task_id = s3.submit("fails", csv_rows(3), "test_boom")
    ok_id = s3.submit("fine", csv_rows(4))
    w = s3.worker("--max-attempts", "3", name="boom")
    record = wait_for(lambda: s3.record(task_id) if s3.record(task_id).final else None, timeout=60 + s3.start)
    assert record.status == "failed" and record.failed_attempts == 3 and record.attempt_id == 3
    assert "deliberate failure" in record.last_error
    assert wait_for(lambda: s3.done(ok_id), timeout=30 + s3.start).row_count == 4
    no_active_markers(s3.store, s3.layout, 20 + s3.start)
    w.terminate()
    w.wait(20 + s3.start)


def test_cancel_during_processing_stops_the_attempt_and_stays_abandoned(s3: S3Workers) -> None:
    gate = s3.tmp / "gate"
    task_id = s3.submit("cancel me", csv_rows(3), "test_gated", {"gate": str(gate)})
    w = s3.worker(name="cancelled")
    wait_for(lambda: s3.done(task_id, "running"), timeout=30 + s3.start, what="claimed")
    s3.service.cancel(ALICE, task_id)
    # The gated task's counts stand still, so no progress save fails its condition: the worker's next poll
    # (which reads the cancelled record) or at the latest its next heartbeat (lease/3) notices; it lets go.
    wait_for(
        lambda: "it was cancelled" in w.output() or "lost lease" in w.output(),
        timeout=LEASE + 2 + s3.start,
        what="worker noticed the cancel",
    )
    gate.touch()
    record = s3.record(task_id)
    assert record.status == "abandoned"
    assert s3.outputs(task_id) == []
    w.terminate()
    assert w.wait(20 + s3.start) == 0


def test_late_heartbeat_never_resurrects_an_expired_task(s3: S3Workers) -> None:
    task_id = s3.submit("expired", csv_rows(2))
    record, lease = lifecycle.claim(s3.record(task_id), s3.store.now(), worker_id="slow", lease_seconds=0.01)
    update_record(s3.store, s3.layout, task_id, lambda r, t: record)
    # Another worker judges the lease expired and the task is retried.
    later = timedelta(seconds=5)
    update_record(s3.store, s3.layout, task_id, lambda r, t: lifecycle.expire(r, t + later, grace_seconds=0))
    update_record(s3.store, s3.layout, task_id, lambda r, t: lifecycle.retry(r, t, automatic=False))
    before = s3.record(task_id)
    with pytest.raises(errors.NotOwner):
        update_record(
            s3.store,
            s3.layout,
            task_id,
            lambda r, t: lifecycle.heartbeat(r, t, lease=lease, lease_seconds=60, progress=lifecycle.Progress()),
        )
    assert s3.record(task_id) == before


def test_skewed_clocks_neither_steal_nor_keep_leases(s3: S3Workers) -> None:
    gate = s3.tmp / "gate"
    task_id = s3.submit("held", csv_rows(3), "test_gated", {"gate": str(gate)})
    honest = s3.worker(name="honest")
    wait_for(lambda: s3.done(task_id, "running"), timeout=30 + s3.start, what="claimed")
    # A worker whose clock runs ten minutes fast sees the same live lease.
    fast = s3.worker(name="fast", env={"S3TASK_CLOCK_SKEW_SECONDS": "600"})
    fast.worker_ready(30 + s3.start)
    leases_seen = set()
    deadline = 3 * LEASE
    wait_for(
        lambda: leases_seen.add(s3.record(task_id).lease_expires_at) or len(leases_seen) >= 3,
        timeout=deadline,
        what="several renewals",
    )
    record = s3.record(task_id)
    assert record.status == "running" and record.attempt_id == 1, record.history
    # A worker whose clock runs ten minutes slow gets a normal-length lease, so when it
    # dies the task is recovered promptly rather than ten minutes late.
    honest.kill()
    honest.wait(10 + s3.start)
    slow_id = s3.submit("slow clock", csv_rows(3), "test_gated", {"gate": str(gate) + "-slow"})
    fast.terminate()
    fast.wait(20 + s3.start)
    slow = s3.worker(name="slowclock", env={"S3TASK_CLOCK_SKEW_SECONDS": "-600"})
    wait_for(lambda: s3.done(slow_id, "running"), timeout=30 + s3.start)
    slow.kill()
    slow.wait(10 + s3.start)
    gate.touch()
    (s3.tmp / "gate-slow").touch()
    rescuer = s3.worker(name="rescuer")
    wait_for(lambda: s3.done(task_id), timeout=30 + s3.start, what="first task recovered")
    wait_for(lambda: s3.done(slow_id), timeout=30 + s3.start, what="slow-clock task recovered")
    assert s3.record(slow_id).attempt_id == 2
    rescuer.terminate()
    rescuer.wait(20 + s3.start)


def test_worker_refuses_a_store_that_ignores_conditions(s3: S3Workers) -> None:
    with proxy_server(s3.env["AWS_ENDPOINT_URL_S3"], forget=True) as (proxy, _):
        w = s3.worker("--once", env={"AWS_ENDPOINT_URL_S3": proxy}, name="unsafe")
        assert w.wait(60 + s3.start) == 1
    text = w.output()
    assert "refusing to start" in text and "does not enforce conditional writes" in text, text
    assert "Traceback" not in text


def test_worker_says_so_when_the_store_is_unreachable(tmp_path: Path) -> None:
    env = child_env(AWS_ENDPOINT_URL_S3="http://127.0.0.1:9", AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x",
                    AWS_DEFAULT_REGION="us-east-1")  # fmt: skip
    proc = run(worker_args("s3://no-such-bucket/x", "--once"), env=env, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: refusing to start")
    assert "Traceback" not in proc.stderr
