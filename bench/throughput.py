"""Measurements 1 and 2: worker throughput against the baselines, and peak memory, on one store.

For each input size, in rounds (so that a noisy neighbour hurts every
contender alike): the bare pandas loop, the bare Arrow loop, the store's raw
copy, then for each task type a real ``worker.py --once`` that processes one
task of that file. Every contender starts with its input in the page cache
(:func:`bench.harness.warm`). Each figure is the best of the
round results (best-of-N); the worker's figure is claim → completed from its
own log. Peak RSS comes from /proc (``VmHWM``) of the attempt child and of
the worker process.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import baselines, data
from . import harness as h
from .passthrough import NAME as PASSTHROUGH

HANDLERS = (PASSTHROUGH, "email_enrichment")


def measure_size(
    site: h.Site,
    path: Path,
    rounds: int,
    out: Path,
    *,
    baselines_too: bool = True,
    handlers=HANDLERS,
    pandas_too: bool = True,
) -> dict[str, Any]:
    """``pandas_too=False`` leaves the (slow) pandas loop out, for quick comparisons with the Arrow loop."""
    rows = data.rows_in(path)
    size = path.stat().st_size
    samples = _Samples(tuple(handlers))
    if baselines_too:  # first calls pay for lazy imports and thread pools: not part of any figure
        _warm_up_loops(path, out, pandas_too)
    for r in range(rounds):
        if baselines_too and pandas_too:
            _time_loop(samples, "pandas_loop", baselines.pandas_loop, path, out / "pandas-out.csv", rows)
        if baselines_too:
            _time_loop(samples, "arrow_loop", baselines.arrow_loop, path, out / "arrow-out.csv", rows)
        for i, handler in enumerate(handlers):
            log = out / f"worker-{site.kind}-{size}-{r}-{handler}.log"
            copy_too = baselines_too and i == 0  # the raw copy once a round, before the first task
            _time_task(samples, site, path, handler, f"{handler} {size} r{r}", log, rows, copy_too=copy_too)
    best = samples.best()
    result: dict[str, Any] = {
        "size_mb": round(size / 1e6),
        "bytes": size,
        "rows": rows,
        "rounds": rounds,
        "seconds_best": {k: round(v, 3) for k, v in best.items()},
        "seconds_all": {k: [round(x, 3) for x in v] for k, v in samples.times.items() if v},
        "rows_per_s": {k: round(rows / v) for k, v in best.items()},
        # CPU seconds (least over rounds): the loops' whole process, the worker's attempt process.
        "cpu_s": {k: round(min(v), 3) for k, v in samples.cpu.items() if v},
        "child_peak_rss_mb": {k: round(max(v), 1) for k, v in samples.child_mb.items() if v},
        "worker_peak_rss_mb": round(max(samples.worker_mb), 1) if samples.worker_mb else None,
    }
    if baselines_too:
        result["ratios"] = ratios(best, handlers)
    return result


@dataclass
class _Samples:
    """Every round's figures of each contender, of which a result keeps the best (the largest, for memory)."""

    handlers: tuple[str, ...]
    times: dict[str, list[float]] = field(init=False)
    cpu: dict[str, list[float]] = field(init=False)
    child_mb: dict[str, list[float]] = field(init=False)
    worker_mb: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.times = {k: [] for k in ("pandas_loop", "arrow_loop", "store_copy", *self.handlers)}
        self.cpu = {k: [] for k in ("pandas_loop", "arrow_loop", *self.handlers)}
        self.child_mb = {k: [] for k in self.handlers}

    def best(self) -> dict[str, float]:
        return {k: min(v) for k, v in self.times.items() if v}


def _warm_up_loops(path: Path, out: Path, pandas_too: bool) -> None:
    """Run the bare loops once on the first rows of ``path``, so that no timed run pays for their first call."""
    warm = out / "warm.csv"
    with open(path, "rb") as f:
        head = f.read(200_000)
    warm.write_bytes(head[: data.row_end(head) + 1])
    if pandas_too:
        baselines.pandas_loop(warm, out / "pandas-out.csv")
    baselines.arrow_loop(warm, out / "arrow-out.csv")


def _time_loop(
    samples: _Samples, name: str, loop: Callable[[Path, Path], tuple[float, int]], path: Path, dest: Path, rows: int
) -> None:
    """One run of a bare loop on ``path``, its input in the page cache."""
    h.warm(path)
    t, n = loop(path, dest)
    assert n == rows, (n, rows)
    samples.times[name].append(t)
    samples.cpu[name].append(baselines.LAST_CPU)


def _time_task(
    samples: _Samples, site: h.Site, path: Path, handler: str, name: str, log: Path, rows: int, copy_too: bool
) -> None:
    """One task per worker run, its input read just before, like the loops' inputs; ``copy_too``: first
    time the store's raw copy of that input."""
    task_id = h.create_task(site, path, handler, name=name)
    if copy_too:
        key = site.layout.input_key(task_id)
        h.warm_input(site, task_id)
        samples.times["store_copy"].append(baselines.store_copy(site.store, key, key.rsplit("/", 1)[0] + "/copy.csv"))
    h.submit(site, task_id)
    h.warm_input(site, task_id)
    run = h.run_once(site, log)
    if run.returncode != 0:
        raise RuntimeError("the worker failed:\n" + run.log[-3000:])
    samples.worker_mb.append(run.worker_hwm_mb)
    task = run.tasks.get(task_id)
    if task is None or task.seconds is None:
        raise RuntimeError(f"{handler} task did not complete:\n" + run.log[-3000:])
    record = site.service.get(h.ALICE, task_id)
    assert record.processed_count == rows, (record.processed_count, rows)
    samples.times[handler].append(task.seconds)
    if task.child_hwm_mb:
        samples.child_mb[handler].append(task.child_hwm_mb)
    if task.child_cpu_s:
        samples.cpu[handler].append(task.child_cpu_s)
    h.drop_task(site, task_id)


def ratios(best: dict[str, float], handlers=HANDLERS) -> dict[str, float]:
    """Throughput ratios (higher = the worker is faster): baseline seconds / worker seconds."""
    out: dict[str, float] = {}
    for handler in handlers:
        if handler not in best:
            continue
        for base in ("pandas_loop", "arrow_loop", "store_copy"):
            if base in best:
                out[f"{handler}/{base}"] = round(best[base] / best[handler], 3)
    return out


def measure_memory_only(site: h.Site, path: Path, out: Path, handler: str = PASSTHROUGH) -> dict[str, Any]:
    """One task of ``handler`` on ``path`` (the 2 GB point of the memory curve): peak RSS and its time."""
    task_id = h.create_task(site, path, handler, name=f"memory {path.name}")
    h.submit(site, task_id)
    h.warm_input(site, task_id)
    started = time.time()
    run = h.run_once(site, out / f"worker-memory-{path.stat().st_size}.log")
    task = run.tasks.get(task_id)
    if run.returncode != 0 or task is None or task.seconds is None:
        raise RuntimeError("the worker failed:\n" + run.log[-3000:])
    rows = data.rows_in(path)
    h.drop_task(site, task_id)
    return {
        "size_mb": round(path.stat().st_size / 1e6),
        "rows": rows,
        "seconds": round(task.seconds, 3),
        "rows_per_s": round(rows / task.seconds),
        "child_peak_rss_mb": {handler: round(task.child_hwm_mb or 0, 1)},
        "worker_peak_rss_mb": round(run.worker_hwm_mb, 1),
        "wall_seconds": round(time.time() - started, 1),
    }


def measure_fixed(site: h.Site, tiny: Path, per_handler: int, out: Path, handlers=HANDLERS) -> dict[str, Any]:
    """Claim → completed of a two-row task: the per-task cost that no file size amortises
    (an attempt process, opening the store, the output object, two compare-and-set writes)."""
    ids = {}
    for handler in handlers:
        for i in range(per_handler):
            ids[h.create_task(site, tiny, handler, name=f"tiny {i}")] = handler
    for task_id in ids:
        h.submit(site, task_id)
    run = h.run_once(site, out / f"worker-fixed-{site.kind}.log")
    seconds: dict[str, list[float]] = {k: [] for k in handlers}
    for task_id, handler in ids.items():
        task = run.tasks.get(task_id)
        if task is None or task.seconds is None:
            raise RuntimeError("a tiny task did not complete:\n" + run.log[-3000:])
        seconds[handler].append(task.seconds)
        h.drop_task(site, task_id)
    return {
        "tasks_per_handler": per_handler,
        "median_s": {k: round(sorted(v)[len(v) // 2], 3) for k, v in seconds.items()},
        "best_s": {k: round(min(v), 3) for k, v in seconds.items()},
    }
