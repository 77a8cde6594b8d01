"""The issue's targets (reported, never a failure) and the gross-regression checks (which fail a run),
both judged from a results dict of ``bench/run.py``; and the memory curve they and the report read."""

from __future__ import annotations

from typing import Any

from .passthrough import NAME as PASS

EMAIL = "email_enrichment"

#: Gross-regression floors: about a third of what this machine measures at the quick sizes under load
#: (pass-through 2.5-3x the pandas loop and 0.45-0.6x the Arrow loop, email_enrichment 1.1-1.9x the
#: pandas loop). A ratio below one of these has collapsed by more than 3x; noise does not get there.
FLOORS = {
    f"{PASS}/pandas_loop": 0.8,
    f"{PASS}/arrow_loop": 0.12,
    f"{EMAIL}/pandas_loop": 0.4,
}
#: Peak RSS of the attempt child at the larger size may be at most this times the smaller one.
MEMORY_FLAT = 1.5
#: Requests of a small task's whole life, and per idle poll, may at most double.
MAX_TASK_REQUESTS = 40
MAX_LIST_PER_IDLE_POLL = 2.0


def targets(res: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets, met or not (reported, never a failure)."""
    t: dict[str, Any] = {}
    local = res.get("throughput", {}).get("local", [])
    if local:
        for entry in local:
            r = entry.get("ratios", {})
            mb = entry["size_mb"]
            t[f"{mb} MB: pass-through >= 2.0x pandas loop"] = _met(r.get(f"{PASS}/pandas_loop"), 2.0)
            t[f"{mb} MB: pass-through >= 0.8x Arrow loop"] = _met(r.get(f"{PASS}/arrow_loop"), 0.8)
            t[f"{mb} MB: email_enrichment >= 1.0x pandas loop"] = _met(r.get(f"{EMAIL}/pandas_loop"), 1.0)
            cpu = entry.get("cpu_s", {})
            if mb >= 100 and cpu.get(PASS) and cpu.get("arrow_loop"):
                ratio = round(cpu[PASS] / cpu["arrow_loop"], 2)
                t[f"{mb} MB: pass-through CPU-seconds <= 1.15x the Arrow loop's"] = _within(ratio, 1.15)
        mem = memory_curve(res)
        if mem:
            worst = max(v for p in mem for k, v in p.items() if k.startswith("child_"))
            t["peak RSS of the attempt child < 300 MB at every size"] = {"value": worst, "met": worst < 300}
            first, last = memory_base(mem), mem[-1]
            key = f"child_{PASS}"
            if key in first and key in last and last["size_mb"] > first["size_mb"]:
                growth = last[key] / first[key]
                t[f"pass-through peak RSS at {last['size_mb']} MB within 15% of {first['size_mb']} MB"] = {
                    "value": round(growth, 3),
                    "met": growth <= 1.15,
                }
            w = max(p["worker"] for p in mem if p.get("worker"))
            t["peak RSS of the worker process < 300 MB"] = {"value": w, "met": w < 300}
    for name, entry in res.get("pickup", {}).items():
        where = "local store" if name.endswith("local") else "S3 (moto)"
        if name.startswith("embedded"):
            t[f"embedded worker, {where}: pickup p50 <= 0.1 s"] = _within(entry["median_s"], 0.1)
            t[f"embedded worker, {where}: pickup p95 <= 0.3 s"] = _within(entry["p95_s"], 0.3)
        else:
            limit = entry["poll_interval_s"]
            t[f"worker.py, {where}: pickup p95 <= the poll interval ({limit:g} s)"] = _within(entry["p95_s"], limit)
    req = res.get("requests", {})
    if "idle" in req:
        t["an idle worker <= $0.50 a month"] = _within(req["idle"]["dollars_per_idle_worker_month"], 0.5)
    for life in req.get("task_life", []):
        if life["input_mb"] <= 1:
            flow = life.get("flow", "one call")
            t[f"requests of a {life['input_mb']:g} MB task ({flow}) <= 15"] = _within(life["requests_total"], 15)
    su = res.get("startup")
    if su:
        t["worker.py --once on an empty store <= 0.6 s"] = _within(su["worker_once_empty_s"], 0.6)
        t["a worker's first claim <= 1 s after it starts"] = _within(su["first_claim_s"], 1.0)
        t["python -m s3task list <= 0.3 s"] = _within(su["cli_list_s"], 0.3)
        t["python -m s3task show <= 0.3 s"] = _within(su["cli_show_s"], 0.3)
    return t


def _met(value: float | None, floor: float) -> dict[str, Any]:
    return {"value": value, "met": value is not None and value >= floor}


def _within(value: float | None, limit: float) -> dict[str, Any]:
    return {"value": value, "met": value is not None and value <= limit}


def memory_curve(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Peak RSS by input size (local store): attempt child per handler, and the worker process."""
    points = []
    for entry in res.get("throughput", {}).get("local", []):
        p = {"size_mb": entry["size_mb"], "worker": entry.get("worker_peak_rss_mb")}
        for handler, mb in entry.get("child_peak_rss_mb", {}).items():
            p[f"child_{handler}"] = mb
        points.append(p)
    extra = res.get("memory_extra")
    if extra:
        p = {"size_mb": extra["size_mb"], "worker": extra["worker_peak_rss_mb"]}
        for handler, mb in extra["child_peak_rss_mb"].items():
            p[f"child_{handler}"] = mb
        points.append(p)
    return sorted(points, key=lambda p: p["size_mb"])


def memory_base(mem: list[dict[str, Any]]) -> dict[str, Any]:
    """The point memory growth is measured from: the smallest input of 16 MB or more (several engine
    blocks, so the pipeline is full); smaller inputs peak lower only because they are one or two blocks."""
    return next((p for p in mem if p["size_mb"] >= 16), mem[0])


def checks(res: dict[str, Any]) -> dict[str, Any]:
    """Gross-regression checks: each {"ok": bool, ...}. Any failure makes the run exit 1."""
    c: dict[str, Any] = {}
    mem = [p for p in memory_curve(res) if p.get(f"child_{PASS}")]
    if len(mem) >= 2 and mem[-1]["size_mb"] > memory_base(mem)["size_mb"]:
        base, last = memory_base(mem), mem[-1]
        growth = last[f"child_{PASS}"] / base[f"child_{PASS}"]
        c[f"memory flat (pass-through child, {last['size_mb']} MB vs {base['size_mb']} MB)"] = {
            "growth": round(growth, 3),
            "limit": MEMORY_FLAT,
            "ok": growth <= MEMORY_FLAT,
        }
    local = res.get("throughput", {}).get("local", [])
    for name, floor in FLOORS.items():
        # The best ratio over the sizes: a noisy neighbour would have to slow every size's run to fail it.
        values = [e["ratios"][name] for e in local if name in e.get("ratios", {})]
        if values:
            c[f"{name} ratio (best over sizes)"] = {"value": max(values), "floor": floor, "ok": max(values) >= floor}
    req = res.get("requests", {})
    for life in req.get("task_life", []):
        if life["input_mb"] <= 8:  # no multipart parts, no heartbeats: a fixed count
            total = life["requests_total"]
            c[f"requests of a {life['input_mb']} MB task ({life.get('flow', 'one call')})"] = {
                "value": total,
                "limit": MAX_TASK_REQUESTS,
                "ok": total <= MAX_TASK_REQUESTS,
            }
    if "idle" in req:
        per_poll = req["idle"]["list_per_poll"]
        c["LIST per idle poll"] = {"value": per_poll, "limit": MAX_LIST_PER_IDLE_POLL, "ok": per_poll <= 2.0}
    return c
