"""Measurement 5: pickup latency, submit → running, at the default poll interval.

A real ``worker.py`` runs continuously with its default settings. Tasks (tiny
inputs) are created and uploaded ahead, then submitted one at a time at a
random moment after the previous one finished, so submissions fall at every
phase of the worker's poll cycle. Latency = the worker's "claimed" log line
minus the moment ``submit`` returned (the task was queued), both read off
this machine's clock in milliseconds.
"""

from __future__ import annotations

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
    latencies.sort()
    return {
        "store": site.kind,
        "poll_interval_s": POLL_DEFAULT,
        "tasks": n,
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
