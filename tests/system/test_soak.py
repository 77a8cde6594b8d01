"""Soak: a bounded chaos run with real worker processes on S3 (moto over HTTP), faults on.

Three ``worker.py`` processes, a stream of submissions, and at random (fixed
seed) moments: SIGKILL or SIGTERM of a worker (restarted at once), a cancel
of a live task, an operator retry of a task that failed for good. Every store
call of the workers and of their attempt children goes through
``faults.FaultyStore`` (``--handlers faults``); the client's calls too. Then
the chaos stops, the queue drains, and the invariants are checked: nothing
lost, nothing completed twice, every completed output complete.

Short form (default, 25 s of chaos) runs in the normal suite;
``S3TASK_SOAK_SECONDS=180`` runs the long form.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import time
from collections import Counter
from pathlib import Path

import boto3
from conftest import wait_for
from faults import (
    ENV,
    KINDS,
    LOG_ENV,
    Expect,
    FaultyStore,
    check_audit,
    check_invariants,
    read_fault_log,
    save_figures,
)
from procs import Proc, Procs, child_env
from support import csv_rows

from s3task.errors import InvalidTransition, S3TaskError, StoreError, TooManyConflicts
from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.s3 import S3Store
from s3task.tasks import Actor, TaskService

ROOT = Path(__file__).resolve().parents[2]
ALICE = Actor("alice")
OPERATOR = Actor("olga", operator=True)
SEED = 20261129
WORKERS = 3
RATES = {"error500": 0.01, "error503": 0.01, "timeout": 0.01, "slow": 0.03, "conflict": 0.1, "lost": 0.02}
CHILD_RATES = {"error503": 0.01, "slow": 0.02, "lost": 0.03}


class Chaos:
    def __init__(self, endpoint: str, bucket: str, tmp: Path) -> None:
        self.plan = random.Random(SEED)  # what happens when: the same sequence on every run
        self.rng = random.Random(SEED + 1)  # which worker or task it happens to
        self.tmp = tmp
        self.url = f"s3://{bucket}/batch-tasks"
        self.log = tmp / "faults.jsonl"
        self.env = child_env(
            endpoint=endpoint,
            S3TASK_LEASE_GRACE_SECONDS="0.5",
            S3TASK_RETRY_BACKOFF_SECONDS="0.2",
            **{
                ENV: json.dumps({"seed": SEED, "worker_rates": RATES, "child_rates": CHILD_RATES}),
                LOG_ENV: str(self.log),
            },
        )
        self.harness = Procs(tmp, self.env)
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        self.inner = S3Store(bucket, client=client)
        self.layout = Layout("batch-tasks")
        self.store = FaultyStore(self.inner, seed=SEED, rates=RATES)
        self.service = TaskService(self.store, self.layout, max_attempts=5)
        self.clean = TaskService(self.inner, self.layout)
        self.procs: list[Proc | None] = [None] * WORKERS
        self.started = 0
        self.expected: dict[str, Expect] = {}
        self.events: Counter[str] = Counter()

    # --- workers ---

    def start(self, slot: int) -> None:
        self.started += 1
        args = ["--poll-interval", "0.3", "--lease-seconds", "3", "--max-attempts", "5", "--handlers", "faults"]
        self.procs[slot] = self.harness.worker(self.url, *args, worker_id=f"soak-{self.started}")

    def kill(self, sig: int) -> None:
        slot = self.rng.randrange(WORKERS)
        proc = self.procs[slot]
        assert proc is not None
        if sig == signal.SIGKILL:
            proc.kill()
        else:  # a polite stop that takes too long gets the operator's SIGKILL
            proc.stop(30)
        self.events["sigkill" if sig == signal.SIGKILL else "sigterm"] += 1
        self.start(slot)

    def stop_all(self) -> None:
        self.harness.close()

    # --- the client ---

    def retrying(self, call, tries: int = 30):
        for _ in range(tries):
            try:
                return call()
            except (StoreError, TooManyConflicts):
                continue
        return call()

    def submit(self) -> None:
        rows = self.rng.randint(1, 300)
        pause = self.rng.choice((0.0, 0.2, 0.8, 1.5))
        ragged = self.events["submitted"] % 6 == 5  # fails for good (bad input): operators get something to retry
        created = self.retrying(lambda: self.service.create(ALICE, "soak", "test_slow_copy", {"pause": pause}))
        task_id = created.record.task_id
        data = csv_rows(rows) + (b"1,2,3\n" if ragged else b"")
        self.retrying(lambda: self.service.upload_input(ALICE, task_id, data))

        def submit() -> None:
            try:
                self.service.submit(ALICE, task_id)
            except InvalidTransition:
                assert self.clean.get(ALICE, task_id).status != "created"

        self.retrying(submit)
        if ragged:
            self.expected[task_id] = Expect(error=f"row {rows + 2:,} (id 1): 3 values where the header has 2 columns")
        else:
            self.expected[task_id] = Expect(rows=rows, may_fail=True)
        self.events["submitted"] += 1

    def cancel_one(self) -> None:
        live = [t for t, e in self.expected.items() if not e.may_abandon and not self._terminal(t)]
        if not live:
            return
        task_id = self.rng.choice(live)
        self.expected[task_id].may_abandon = True
        try:
            self.retrying(lambda: self.service.cancel(ALICE, task_id))
            self.events["cancels"] += 1
        except InvalidTransition:  # it finished meanwhile
            pass

    def retry_one(self) -> None:
        failed = [t for t in self.expected if self._failed_for_good(t)]
        if not failed:
            return
        try:
            self.retrying(lambda: self.service.retry(OPERATOR, self.rng.choice(failed)))
            self.events["retries"] += 1
        except InvalidTransition:
            pass

    def _record(self, task_id: str):
        try:
            return read_record(self.inner, self.layout, task_id)[0]
        except S3TaskError:
            return None

    def _terminal(self, task_id: str) -> bool:
        record = self._record(task_id)
        return record is not None and record.is_terminal

    def _failed_for_good(self, task_id: str) -> bool:
        record = self._record(task_id)
        return record is not None and record.status == "failed" and record.final

    # --- the run ---

    def run(self, seconds: float) -> None:
        for slot in range(WORKERS):
            self.start(slot)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            roll = self.plan.random()
            if roll < 0.55:
                self.submit()
            elif roll < 0.67:
                self.kill(signal.SIGKILL)
            elif roll < 0.77:
                self.kill(signal.SIGTERM)
            elif roll < 0.87:
                self.cancel_one()
            else:
                self.retry_one()
            time.sleep(self.plan.uniform(0.1, 0.6))  # the pace of the chaos, not a wait for a condition

    def drain(self, timeout: float) -> None:
        try:
            wait_for(lambda: all(self._terminal(t) for t in self.expected), timeout=timeout, interval=0.5,
                     what="every soak task finished")  # fmt: skip
        except AssertionError:
            markers = set(self.inner.list_keys(self.layout.active_root))
            for task_id in self.expected:  # say what is stuck, and whether it lost its marker
                record = self._record(task_id)
                if record is None or not record.is_terminal:
                    marked = self.layout.active_key(task_id) in markers
                    print("stuck", task_id, record and record.status, "marker", marked, record and record.history[-4:])
            print("workers alive", [p.poll() for p in self.procs if p is not None])
            raise

    def retry_failed(self) -> None:
        """An operator's last round: retry every task that failed for good, once."""
        for task_id in [t for t in self.expected if self._failed_for_good(t)]:
            self.retrying(lambda t=task_id: self.service.retry(OPERATOR, t))
            self.events["retries"] += 1


def test_soak(moto_http_bucket, tmp_path: Path) -> None:
    seconds = float(os.environ.get("S3TASK_SOAK_SECONDS") or 25)
    endpoint, bucket = moto_http_bucket
    chaos = Chaos(endpoint, bucket, tmp_path)
    started = time.monotonic()
    try:
        chaos.run(seconds)
        chaos.drain(timeout=90 + seconds / 2)
        chaos.retry_failed()
        chaos.drain(timeout=60)
    finally:
        chaos.stop_all()
    chaos.store.enabled = False
    verdict = check_invariants(chaos.inner, chaos.layout, chaos.expected)
    worker_faults, worker_audit = read_fault_log(chaos.log)
    audit = dict(worker_audit)
    for key, writes in chaos.store.audit.items():
        audit.setdefault(key, []).extend(writes)
    audited = check_audit(audit)
    faults = worker_faults + chaos.store.counts
    figures = {
        "seconds": round(time.monotonic() - started),
        "chaos_seconds": seconds,
        "workers": WORKERS,
        "worker_processes_started": chaos.started,
        "submitted": len(chaos.expected),
        **verdict.as_dict(),
        "kills": chaos.events["sigkill"] + chaos.events["sigterm"],
        "sigkills": chaos.events["sigkill"],
        "sigterms": chaos.events["sigterm"],
        "cancels": chaos.events["cancels"],
        "retries": chaos.events["retries"],
        "faults_by_kind": {k: faults[k] for k in KINDS},
        "audited_status_writes": audited,
    }
    reasons: Counter[str] = Counter()
    for task_id in chaos.expected:
        record = chaos._record(task_id)
        if record is not None and record.status == "failed":
            reasons[re.sub(r"^line [\d,]+: ", "", (record.last_error or "").split(" — ")[0])[:70]] += 1
    figures["failed_because"] = dict(reasons)
    print("\nsoak:", json.dumps(figures))
    assert verdict.ok, verdict
    assert verdict.lost == [] and verdict.duplicated == []
    # How much happens in the time depends on the machine's load; what must hold does not.
    assert figures["submitted"] >= 5 and figures["kills"] >= 2 and verdict.completed >= 1
    assert figures["retries"] >= 1, "no operator retry happened: the retry path went untested"
    for kind in RATES:
        assert faults[kind] > 0, f"no {kind} fault was injected"
    save_figures("soak_long" if os.environ.get("S3TASK_SOAK_SECONDS") else "soak", figures)
