"""Measurement 5: pickup latency, submit → running, at the default poll interval.

A real ``worker.py`` runs continuously with its default settings. Tasks (tiny
inputs) are created and uploaded ahead, then submitted one at a time at a
random moment after the previous one finished, so submissions fall at every
phase of the worker's poll cycle. Latency = the worker's "claimed" log line
minus the moment ``submit`` returned (the task was queued), both read off
this machine's clock in milliseconds.
"""

from __future__ import annotations

import logging
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from . import harness as h

POLL_DEFAULT = 3.0


def measure(site: h.Site, tiny: Path, n: int, out: Path, seed: int = 5) -> dict[str, Any]:
    rng = random.Random(seed)
    worker = h.WorkerProcess(site, out / f"worker-pickup-{site.kind}.log", once=False)
    latencies: list[float] = []
    try:
        worker.wait_ready()
        for i in range(n):
            task_id = h.create_task(site, tiny, "copy", name=f"pickup {i}")
            # Wait a random part of a poll cycle: the worker polled right after its last task finished.
            time.sleep(rng.uniform(0, POLL_DEFAULT))
            submitted = h.submit(site, task_id)
            run = worker.wait_completed(task_id, timeout=60)
            latencies.append(run.claimed - submitted)
    finally:
        worker.stop()
        worker.finish(60)
    return _summary(latencies, store=site.kind, poll_interval_s=POLL_DEFAULT)


def _summary(latencies: list[float], **about: Any) -> dict[str, Any]:
    latencies = sorted(latencies)
    return {
        **about,
        "tasks": len(latencies),
        "median_s": round(statistics.median(latencies), 3),
        "p95_s": round(_percentile(latencies, 0.95), 3),
        "max_s": round(max(latencies), 3),
        "min_s": round(min(latencies), 3),
        "all_s": [round(x, 3) for x in latencies],
    }


def _percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (values sorted)."""
    if len(values) == 1:
        return values[0]
    pos = q * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


class _Claims(logging.Handler):
    """The wall time of each "claimed" log line of this process's worker, by task id."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.at: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "event", None) == "claimed":
            self.at[str(getattr(record, "task_id", ""))] = record.created


def measure_embedded(site: h.Site, tiny: Path, n: int, seed: int = 7) -> dict[str, Any]:
    """The app's embedded worker (the product's own ``ensure_embedded`` and ``wake_embedded``) with the
    default poll interval: latency = its "claimed" log line minus the moment ``submit`` returned."""
    from s3task.config import Settings
    from s3task.tasks import TaskService
    from s3task.worker import ensure_embedded, stop_embedded, wake_embedded

    rng = random.Random(seed)
    claims = _Claims()
    logger = logging.getLogger("s3task.worker")
    logger.addHandler(claims)
    level, logger.level = logger.level, logging.INFO
    saved = dict(os.environ)
    os.environ.update(site.env)  # the attempts' processes open the store as a worker process would
    settings = Settings.load({"store": site.url, "worker_id": f"bench-embedded-{site.kind}"})
    service = TaskService(site.store, site.layout, on_queued=wake_embedded)
    latencies: list[float] = []
    try:
        problem = ensure_embedded(settings)
        if problem:
            raise RuntimeError(problem)
        for i in range(n):
            task_id = h.create_task(site, tiny, "copy", name=f"embedded pickup {i}")
            time.sleep(rng.uniform(0, POLL_DEFAULT))  # at every phase of the poll cycle
            service.submit(h.ALICE, task_id)
            submitted = time.time()
            deadline = time.monotonic() + 60
            while task_id not in claims.at and time.monotonic() < deadline:
                time.sleep(0.005)
            if task_id not in claims.at:
                raise RuntimeError(f"the embedded worker did not claim {task_id} within 60 s")
            latencies.append(claims.at[task_id] - submitted)
            while site.service.get(h.ALICE, task_id).status != "completed" and time.monotonic() < deadline:
                time.sleep(0.02)
    finally:
        stop_embedded()
        logger.removeHandler(claims)
        logger.level = level
        os.environ.clear()
        os.environ.update(saved)
    return _summary(latencies, store=site.kind, worker="embedded", poll_interval_s=settings.poll_interval)
