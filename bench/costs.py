"""Measurement 3: store requests per task and per idle worker-hour, and what they cost on S3.

Everything runs against the counting moto server (``bench/motoserver.py``)
over HTTP, so every request of every process — the benchmark acting as the
app (create, upload, submit, download), the worker, its attempt child — is
counted once, by kind and by the key it touched. A task's requests are those
whose key holds its id; the worker's polls (a HEAD of the active-bell, a
LIST of ``active/`` when there is work) and its presence writes are shared
overhead and are counted separately.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import requests

from s3task.config import Settings
from s3task.record import TaskRecord
from s3task.tasks import TaskService
from s3task.tasks.inbox_sweep import LEASE_INTERVALS
from s3task.worker.presence import PRESENCE_IDLE_INTERVAL, PRESENCE_INTERVAL

from . import harness as h

#: S3 Standard request prices, US East (N. Virginia), USD per 1,000 requests (aws.amazon.com/s3/pricing).
PRICE_PER_1000 = {
    "PUT, COPY, POST, LIST": 0.005,
    "GET, HEAD and other": 0.0004,
    "DELETE, abort multipart": 0.0,
}
KIND_CLASS = {
    "LIST": "PUT, COPY, POST, LIST",
    "PUT": "PUT, COPY, POST, LIST",
    "PART": "PUT, COPY, POST, LIST",
    "MPU_CREATE": "PUT, COPY, POST, LIST",
    "MPU_COMPLETE": "PUT, COPY, POST, LIST",
    "GET": "GET, HEAD and other",
    "HEAD": "GET, HEAD and other",
    "DELETE": "DELETE, abort multipart",
    "MPU_ABORT": "DELETE, abort multipart",
}
HOURS_PER_MONTH = 730


def dollars(counts: dict[str, float]) -> float:
    return sum(n * PRICE_PER_1000[KIND_CLASS.get(kind, "GET, HEAD and other")] / 1000 for kind, n in counts.items())


def measure(
    moto: h.MotoServer, paths: list[Path], handler: str, out: Path, window: float, poll_interval: float | None = None
) -> dict[str, Any]:
    """One worker on a fresh bucket: first idle for ``window`` seconds, then one task per path, each
    from create to download."""
    site = h.s3_site(moto)
    worker = h.WorkerProcess(site, out / "worker-requests.log", once=False, poll_interval=poll_interval)
    try:
        worker.wait_ready()
        time.sleep(0.5)
        result = {"idle": _idle(moto, window, poll_interval or 3.0)}
        result["task_life"] = [_task_life(moto, site, worker, path, handler) for path in paths]
        # The New task page on S3: create, the browser's PUT to a presigned URL, then the submit.
        result["task_life"].insert(1, _task_life(moto, site, worker, paths[0], handler, browser=True))
    finally:
        worker.stop()
        worker.finish(60)
    return result


def _idle(moto: h.MotoServer, window: float, interval: float) -> dict[str, Any]:
    """Nothing in ``active/`` for ``window`` seconds, extrapolated to an hour and a month.

    An idle worker HEADs the active-bell once a poll (measured), lists ``active/`` only as a safety
    net every ``idle_list_seconds`` and beats its presence every ``PRESENCE_IDLE_INTERVAL``; holding the
    inbox sweep's lease, it lists ``inbox/`` every ``inbox_interval`` and renews the lease once in three
    sweeps (docs/INBOXES.md): all rarer than a short window sees, so each is counted by its rule or by
    what was measured, if more.
    """
    moto.reset_counts()
    time.sleep(window)
    measured = dict(h.by_kind(moto.counts()))
    polls = max(1, round(window / interval))
    net = Settings.__dataclass_fields__["idle_list_seconds"].default
    sweeps = 3600 / Settings.__dataclass_fields__["inbox_interval"].default  # a sweep: one LIST
    renewals = sweeps * 2 / LEASE_INTERVALS  # the lease, LEASE_INTERVALS sweeps long, renewed when half is left
    rate = {k: n / window * 3600 for k, n in measured.items()}
    per_hour = {
        "HEAD": round(max(rate.get("HEAD", 0), measured.get("HEAD", 0) / polls * 3600 / interval)),
        "LIST": round(max(rate.get("LIST", 0), 3600 / net + sweeps)),
        "PUT": round(max(rate.get("PUT", 0), 3600 / PRESENCE_IDLE_INTERVAL + renewals)),
    }
    month = {k: v * HOURS_PER_MONTH for k, v in per_hour.items()}
    # The design before the bell, for comparison: a LIST every poll and a presence PUT every minute.
    before = {k: round(3600 / every) * HOURS_PER_MONTH for k, every in (("LIST", interval), ("PUT", PRESENCE_INTERVAL))}
    return {
        "poll_interval_s": interval,
        "window_s": window,
        "measured": measured,
        "head_per_poll": round(measured.get("HEAD", 0) / polls, 2),
        "list_per_poll": round(measured.get("LIST", 0) / polls, 2),
        "safety_net_s": net,
        "presence_idle_s": PRESENCE_IDLE_INTERVAL,
        "per_hour": per_hour,
        "per_month": month,
        "dollars_per_idle_worker_month": round(dollars(month), 3),
        "before_bell_per_month": before,
        "before_bell_dollars_per_idle_worker_month": round(dollars(before), 2),
    }


def _task_life(
    moto: h.MotoServer, site: h.Site, worker: h.WorkerProcess, path: Path, handler: str, browser: bool = False
) -> dict[str, Any]:
    """One task from create to download, the requests on its keys counted at the server, in order.

    ``browser``: the input goes as the New task page sends it (a PUT to the presigned URL, then
    the submit); otherwise in one call (``submit_file``: the page's uploader through the app, the
    CLI's ``submit``). A submit by another process than the create's reads the record once more
    (tests/unit/test_requests_counted.py)."""
    moto.reset_counts()
    started = time.monotonic()
    task_id = _submit(site.service, path, handler, browser)
    submitted = len(moto.trail())
    run = worker.wait_completed(task_id)
    worked = len(moto.trail())
    record = _download(site.service, task_id)
    elapsed = time.monotonic() - started
    counts = moto.counts()
    steps = []
    for i, (kind, key) in enumerate(moto.trail()):
        if task_id in key:
            phase = "submit" if i < submitted else "worker" if i < worked else "download"
            steps.append({"phase": phase, "kind": kind, "object": _object(key, site.layout.prefix, task_id)})
    per_task = dict(h.by_kind(counts, "task:" + task_id))
    polls = dict(h.by_kind(counts, "active"))
    presence = dict(h.by_kind(counts, "workers"))
    bell = dict(h.by_kind(counts, "other"))  # <prefix>/active-bell: the submit's ring, the worker's HEADs
    return {
        "input_mb": round(path.stat().st_size / 1e6, 1),
        "flow": "browser" if browser else "one call",
        "task_type": handler,
        "rows": record.processed_count,
        "running_seconds": round(run.seconds or 0, 2),
        "life_seconds": round(elapsed, 2),
        "requests": dict(sorted(per_task.items())),
        "requests_total": sum(per_task.values()),
        "dollars_per_1000_tasks": round(dollars(per_task) * 1000, 4),
        "steps": _squeezed(steps),
        "shared_during_life": {
            "poll LIST of active/": polls.get("LIST", 0),
            "poll HEAD of active-bell": bell.get("HEAD", 0),
            "ring PUT of active-bell": bell.get("PUT", 0),
            "presence PUT": presence.get("PUT", 0),
        },
    }


def _submit(service: TaskService, path: Path, handler: str, browser: bool) -> str:
    """Create and submit a task of ``path``: in one call, or as the New task page on S3 does (``browser``)."""
    with open(path, "rb") as f:
        if not browser:
            return service.submit_file(h.ALICE, "requests", handler, None, f).task_id
        created = service.create(h.ALICE, "requests", handler)
        task_id = created.record.task_id
        assert created.upload_url is not None
        size = path.stat().st_size
        requests.put(created.upload_url, data=f, headers={"Content-Type": "text/csv"}, timeout=600).raise_for_status()
        service.finish_upload(h.ALICE, task_id, size=size)
        return task_id


def _download(service: TaskService, task_id: str) -> TaskRecord:
    """Download as the app does: read the record, get a presigned URL, the browser GETs it."""
    record = service.get(h.ALICE, task_id)
    url = service.output_url(h.ALICE, task_id)
    with requests.get(url, stream=True, timeout=60) as resp:
        resp.raise_for_status()
        for _ in resp.iter_content(1 << 20):
            pass
    return record


def _object(key: str, prefix: str, task_id: str) -> str:
    """The key as the report names it: without the prefix, the user as ``<user>``, the task id as ``<id>``."""
    key = key.removeprefix(prefix + "/")
    if key.startswith("by-user/"):
        return "by-user/<user>/<id>"
    return key.replace(task_id, "<id>")


def _squeezed(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of the same request (the parts of a multipart upload) as one step with a count."""
    out: list[dict[str, Any]] = []
    for step in steps:
        if out and {k: out[-1][k] for k in step} == step:
            out[-1]["n"] += 1
        else:
            out.append({**step, "n": 1})
    return out
