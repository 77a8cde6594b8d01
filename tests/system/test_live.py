"""Live progress and cancel, with real worker processes (``python worker.py``) on moto's S3 server over HTTP.

Every request of the worker and of the reader goes through a counting proxy of their own, so the
tests see what each costs: the progress object's PUTs and conditional GETs (s3task.live), the
reader's GETs per look at a running task.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import pytest
import requests
import worker_handlers  # noqa: F401  (registers the test task types here too)
from apps.http_server import serve
from conftest import wait_for
from procs import Proc, Procs, child_env
from s3proxy import RequestLog as Log
from s3proxy import counting_proxy

from s3task import live
from s3task.config import Settings
from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.s3 import _RECORD_CONFIG, S3Store
from s3task.tasks import Actor, TaskService
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token
from s3task.worker.attempt import TICK

ALICE = Actor("alice")
#: Long enough that no heartbeat (every lease ÷ 3 = 20 s) falls inside what the tests watch.
LEASE = 60.0
POLL = 0.5
BLOCK = 4 << 20  # the engine's block size: counts move once per block


def blocks(n: int) -> bytes:
    """A CSV of ``n`` engine blocks (and a bit), so a task's counts move ``n`` times."""
    row = "x" * 90
    rows = n * BLOCK // 97 + 100
    return ("id,text\n" + "".join(f"{i:05d},{row}\n" for i in range(rows))).encode()


# --- a proxy that counts requests ----------------------------------------------------------


# --- the set-up ---------------------------------------------------------------------------


@dataclass
class Env:
    store: S3Store  # straight to moto: the test's own set-up, not counted
    reader: TaskService  # through the reader's proxy: what a page or the API does
    reads: Log
    writes: Log  # the worker's requests
    layout: Layout
    url: str
    procs: Procs  # the worker processes, through the worker's proxy
    tmp: Path
    service: TaskService = field(init=False)

    def __post_init__(self) -> None:
        self.service = TaskService(self.store, self.layout)

    def worker(self) -> Proc:
        args = ["--poll-interval", str(POLL), "--lease-seconds", str(LEASE), "--handlers", "worker_handlers"]
        return self.procs.worker(self.url, *args, worker_id=f"live-{len(self.procs.all)}")

    def submit(self, body: bytes, task_type: str, params: dict | None = None) -> str:
        return self.service.submit_file(ALICE, task_type, task_type, params, body).task_id

    def record(self, task_id: str):
        return read_record(self.store, self.layout, task_id)[0]


@pytest.fixture
def s3(moto_http_bucket, tmp_path: Path, procs: Procs) -> Iterator[Env]:
    endpoint, bucket = moto_http_bucket
    with counting_proxy(endpoint) as (worker_url, writes), counting_proxy(endpoint) as (reader_url, reads):
        procs.env = child_env(endpoint=worker_url)
        session = boto3.session.Session(region_name="us-east-1")
        store = S3Store(bucket, client=session.client("s3", endpoint_url=endpoint, config=_RECORD_CONFIG))
        reader_store = S3Store(bucket, client=session.client("s3", endpoint_url=reader_url, config=_RECORD_CONFIG))
        layout = Layout("batch-tasks")
        e = Env(
            store,
            TaskService(reader_store, layout),
            reads,
            writes,
            layout,
            f"s3://{bucket}/batch-tasks",
            procs,
            tmp_path,
        )
        yield e
        procs.close()  # while their proxy still answers


def running(e: Env, task_id: str):
    record = e.record(task_id)
    return record if record.status == "running" else None


def gone(pid: int) -> bool:
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


# --- live progress -------------------------------------------------------------------------


def test_a_reader_sees_progress_move_every_few_seconds_between_heartbeats(s3: Env) -> None:
    task_id = s3.submit(blocks(8), "test_slow", {"seconds": 1.0})
    w = s3.worker()
    claimed = wait_for(lambda: running(s3, task_id), timeout=120, interval=0.05, what="claimed")
    started = time.monotonic()
    seen: list[tuple[float, int]] = []  # (when, rows read) each time the reader's view changed
    api_rows = None
    settings = Settings.load({"store": s3.url}, {})
    with serve(create_app(settings, service=s3.reader, tokens=TokenTable({hash_token("t"): ALICE}))) as base:
        while True:
            raw = s3.record(task_id)
            record = s3.reader.get(ALICE, task_id)
            if record.status != "running" or raw.status != "running":
                break
            # No heartbeat while we watch: whatever moves comes from the attempt's progress object.
            assert raw.revision == claimed.revision, "a heartbeat came before the task ended; use a longer lease"
            if not seen or record.bytes_processed != seen[-1][1]:
                seen.append((time.monotonic(), record.bytes_processed))
            if api_rows is None and record.processed_count and raw.processed_count == 0:
                got = requests.get(f"{base}/api/tasks/{task_id}", headers={"Authorization": "Bearer t"}, timeout=30)
                api_rows = got.json()["task"]["rows_read"]
            assert time.monotonic() - started < 60, "the task took too long"
            time.sleep(0.1)
    ended = time.monotonic()
    assert s3.record(task_id).status == "completed", w.output()
    assert api_rows, "the API showed no rows read while the record had none yet"
    # The first counts come with the first block (the process starting, reading 4 MB, the handler's second);
    # from then on the view moves at least every 3 s, to the end.
    assert seen[1][0] - started < 6.0, seen
    times = [*(t for t, _ in seen[1:]), ended]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(seen) >= 5 and max(gaps) < 3.0, (gaps, seen)

    # What it cost: the worker's requests on the progress object, per minute of running.
    key = s3.layout.progress_key(task_id, 1)
    progress = s3.writes.between(started, ended, key)
    minutes = (ended - started) / 60
    per_minute = len(progress) / minutes
    assert all(method == "PUT" for _, method, _ in progress)  # counts moved all along: no checks needed
    assert 60 / 3.0 <= per_minute <= 60 / live.LIVE_SECONDS + 2, (len(progress), ended - started)
    # The reader: one GET of the record and one of the progress object per look at a running task.
    reads = s3.reads.between(started, ended, task_id)
    status_reads = sum(1 for _, method, path in reads if method == "GET" and path.endswith("/status.json"))
    progress_reads = sum(1 for _, method, path in reads if method == "GET" and path.endswith(key.rsplit("/", 1)[1]))
    assert len(reads) == status_reads + progress_reads and status_reads - 1 <= progress_reads <= status_reads
    print(f"progress PUTs: {per_minute:.1f} a minute; reader GETs per look: {len(reads) / status_reads:.2f}")
    del w


# --- cancel --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_blocks", "seconds"),
    [(8, 1.0), (1, 120.0)],
    ids=["counts-moving", "counts-standing-still"],
)
def test_cancel_stops_the_attempts_process_within_seconds(s3: Env, n_blocks: int, seconds: float) -> None:
    pidfile = s3.tmp / "pid"
    task_id = s3.submit(blocks(n_blocks), "test_slow", {"seconds": seconds, "pidfile": str(pidfile)})
    w = s3.worker()
    wait_for(pidfile.exists, timeout=120, what="the attempt's process to start")
    pid = int(pidfile.read_text())
    claimed_at = time.monotonic()
    time.sleep(3 * live.LIVE_SECONDS)  # let the attempt run a while (its saves, or its checks)
    before_cancel = set(s3.store.list_keys(s3.layout.task_prefix(task_id)))
    cancelled_at = time.monotonic()
    s3.service.cancel(ALICE, task_id)
    # The worker notices at its next save of the progress object (every LIVE_SECONDS while the counts move)
    # or, while they stand still, at its next poll (which reads the cancelled record), checked each TICK;
    # it kills the process and waits for it: a few seconds, nowhere near a heartbeat (lease ÷ 3).
    deadline = 2 * live.LIVE_SECONDS + POLL + TICK + 5
    assert deadline < LEASE / 3
    wait_for(lambda: gone(pid), timeout=deadline, interval=0.05, what="the attempt's process to be stopped")
    stopped_after = time.monotonic() - cancelled_at
    wait_for(lambda: "it was cancelled" in w.output(), timeout=10, what="the worker to say why it stopped")

    record = s3.record(task_id)
    assert record.status == "abandoned" and record.history[-1]["event"] == "cancel", record.history
    assert w.poll() is None, "the worker itself goes on"
    # Nothing was dropped: the input, the record and the progress object are all still there.
    assert before_cancel <= set(s3.store.list_keys(s3.layout.task_prefix(task_id)))
    # Before the cancel, the attempt's only requests on its task were its progress saves: PUTs while the
    # counts moved (fewer than one a second), none while they stood still (the first save aside); no
    # record write. Noticing the cancel cost nothing of its own: the worker's poll reads the record anyway.
    key = s3.layout.progress_key(task_id, 1)
    own = s3.writes.between(claimed_at, cancelled_at, key)
    methods = [method for _, method, _ in own]
    assert set(methods) <= {"PUT"}, own
    if seconds < 2:
        assert 2 <= len(own) <= (cancelled_at - claimed_at) / live.LIVE_SECONDS + 1, own
    else:
        assert len(own) <= 1, own
    status_writes = [
        r for r in s3.writes.between(claimed_at, cancelled_at, task_id) if r[1] == "PUT" and "status" in r[2]
    ]
    assert status_writes == []
    # The worker picks up the next task as usual.
    nxt = s3.submit(b"id\n1\n", "copy")
    wait_for(lambda: s3.record(nxt).status == "completed", timeout=60, what="the next task")
    print(f"attempt stopped {stopped_after:.2f} s after the cancel")
