"""Measurement 4: the newest 50 tasks cost the same with 100 or 10,000 tasks in the store.

A store is filled with a realistic history (each task: status.json, input,
output, its by-user marker; the newest five still running, with active
markers), written straight into moto's backend (or the local directory) —
set-up only, nothing of it is timed. Then, through the real TaskService:

- ``list(limit=50)`` with a fresh service (every record read), best of N;
- the same split into the LIST alone and the 50 record reads, parallel (the
  service's thread pool) and sequential (one after another);
- the requests one refresh of an open Tasks page costs (the page's fragment
  calls ``list`` again on the same service, which has cached the finished
  records) — counted by the moto server.

Moto answers every request from Python on this same 2-core machine, in about a
millisecond, and scans every key of the bucket for each LIST (real S3 reads
an index). So the moto figures are repeated with an added 20 ms per request,
roughly S3's own latency for small objects, where parallel reads matter.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from s3task import ids
from s3task.layout import Layout
from s3task.record import TaskRecord, to_iso
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.store.local_files import XATTR
from s3task.tasks import TaskService

from . import harness as h

LIVE = 5
PAGE = 50


def history(n: int) -> list[TaskRecord]:
    """``n`` tasks, one a minute up to now; the newest ``LIVE`` are running, the rest completed."""
    now_ms = int(time.time() * 1000)
    records = []
    for i in range(n):
        ms = now_ms - i * 60_000
        task_id = ids.new_task_id(ms)
        at = to_iso(ids.created_at(task_id))
        live = i < LIVE
        records.append(
            TaskRecord(
                task_id=task_id,
                task_name=f"import {i}",
                created_by="alice",
                task_type="email_enrichment",
                status="running" if live else "completed",
                attempt_id=1,
                revision=5,
                write_id="bench",
                input_object_path=f"batch-tasks/{task_id}/input.csv",
                output_object_path=None if live else f"batch-tasks/{task_id}/output-attempt-1.csv",
                row_count=None if live else 1000,
                processed_count=500 if live else 1000,
                success_count=500 if live else 990,
                error_count=0 if live else 10,
                created_at=at,
                updated_at=at,
                started_at=at,
                finished_at=None if live else at,
                lease_expires_at=at if live else None,
                history=[{"at": at, "event": "create", "attempt": 0}],
            )
        )
    return records


def objects(records: list[TaskRecord]) -> list[tuple[str, str]]:
    layout = Layout("batch-tasks")
    items: list[tuple[str, str]] = []
    for r in records:
        items.append((layout.status_key(r.task_id), r.to_json().decode()))
        items.append((layout.input_key(r.task_id), "email\na@example.com\n"))
        if r.output_object_path:
            items.append((r.output_object_path, "email,error\na@example.com,\n"))
        else:
            items.append((layout.active_key(r.task_id), ""))
        items.append((layout.user_key(r.created_by, r.task_id), ""))
    return items


def fill_local(root: Path, items: list[tuple[str, str]]) -> None:
    """Write the objects as the local store would (ETag and metadata in its xattr), without fsyncs."""
    import hashlib

    LocalStore(root)
    for key, text in items:
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        body = text.encode()
        path.write_bytes(body)
        attrs = {"etag": f'"{hashlib.md5(body, usedforsecurity=False).hexdigest()}"', "metadata": {}}
        with contextlib.suppress(OSError):  # no xattrs: the store recomputes the ETag
            os.setxattr(path, XATTR, json.dumps(attrs).encode())


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def timings(store: Any, layout: Layout, repeats: int) -> dict[str, float]:
    """Seconds (best of ``repeats``) for the page, its LIST alone, and its reads in parallel / in sequence."""
    actor = h.ALICE
    page = TaskService(store, layout).list(actor, limit=PAGE)
    assert len(page.tasks) == PAGE, len(page.tasks)
    page_ids = [r.task_id for r in page.tasks]

    def full() -> None:
        TaskService(store, layout).list(actor, limit=PAGE)

    def mine() -> None:
        TaskService(store, layout).list(actor, limit=PAGE, mine=True)

    def listing() -> None:
        store.list_prefixes(layout.root, limit=PAGE + 1)

    def parallel() -> None:
        TaskService(store, layout)._transitions.looking.read_many(actor, page_ids)

    def sequential() -> None:
        for task_id in page_ids:
            read_record(store, layout, task_id)

    return {
        "list_newest_50": round(_best(full, repeats), 4),
        "list_mine_newest_50": round(_best(mine, repeats), 4),
        "LIST_only": round(_best(listing, repeats), 4),
        "reads_parallel_50": round(_best(parallel, repeats), 4),
        "reads_sequential_50": round(_best(sequential, repeats), 4),
    }


def refresh_requests(moto: h.MotoServer, site: h.Site) -> dict[str, Any]:
    """Requests of the first load and of one refresh of an open Tasks page (same service: cache warm)."""
    service = TaskService(site.store, site.layout)
    moto.reset_counts()
    service.list(h.ALICE, limit=PAGE)
    first = dict(h.by_kind(moto.counts()))
    moto.reset_counts()
    service.list(h.ALICE, limit=PAGE)
    again = dict(h.by_kind(moto.counts()))
    return {"first_load": first, "refresh": again, "live_on_page": LIVE}


def on_moto(moto: h.MotoServer, sizes: tuple[int, ...], repeats: int, latency_ms: float) -> dict[str, Any]:
    out: dict[str, Any] = {"sizes": list(sizes), "moto": {}, "moto_latency": {}, "latency_ms": latency_ms}
    sites = {}
    for n in sizes:
        site = h.s3_site(moto)
        moto.populate(site.store.bucket, objects(history(n)))
        sites[n] = site
    for n, site in sites.items():
        out["moto"][str(n)] = timings(site.store, site.layout, repeats)
    out["requests"] = refresh_requests(moto, sites[sizes[-1]])
    if latency_ms:
        moto.set_latency(latency_ms)
        try:
            for n, site in sites.items():
                out["moto_latency"][str(n)] = timings(site.store, site.layout, max(2, repeats // 2))
        finally:
            moto.set_latency(0)
    small, big = str(sizes[0]), str(sizes[-1])
    out["ratio_moto"] = round(out["moto"][big]["list_newest_50"] / out["moto"][small]["list_newest_50"], 2)
    if latency_ms:
        lat = out["moto_latency"]
        out["ratio_moto_latency"] = round(lat[big]["list_newest_50"] / lat[small]["list_newest_50"], 2)
    return out


def on_local(directory: Path, sizes: tuple[int, ...], repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in sizes:
        root = directory / f"listing-{n}"
        if root.exists():
            import shutil

            shutil.rmtree(root)
        fill_local(root, objects(history(n)))
        store = LocalStore(root)
        out[str(n)] = timings(store, Layout("batch-tasks"), repeats)
    out["ratio"] = round(out[str(sizes[-1])]["list_newest_50"] / out[str(sizes[0])]["list_newest_50"], 2)
    return out
