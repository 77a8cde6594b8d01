"""The few lines ``bench/run.py`` prints at the end of a run."""

from __future__ import annotations

from typing import Any


def summary(res: dict[str, Any]) -> str:
    """A few lines for the terminal."""
    lines = [f"mode: {res['mode']}, {res.get('seconds', 0):.0f} s"]
    tp = res.get("throughput", {})
    for entry in tp.get("local", []):
        rps = entry["rows_per_s"]
        lines.append(
            f"  local {entry['size_mb']:>5} MB: "
            + ", ".join(f"{k} {v:,.0f} rows/s" for k, v in rps.items())
            + f" | child peak {entry.get('child_peak_rss_mb')} MB, worker {entry.get('worker_peak_rss_mb')} MB"
        )
        lines.append("      ratios: " + ", ".join(f"{k} {v}" for k, v in entry.get("ratios", {}).items()))
    if "fixed_local" in tp:
        lines.append(f"  fixed cost of a task (median): {tp['fixed_local']['median_s']}")
    for entry in tp.get("s3_moto", []):
        lines.append(
            f"  s3/moto {entry['size_mb']:>3} MB: "
            + ", ".join(f"{k} {v:,.0f} rows/s" for k, v in entry["rows_per_s"].items())
        )
    if "memory_extra" in res:
        m = res["memory_extra"]
        lines.append(f"  memory {m['size_mb']} MB: child {m['child_peak_rss_mb']} MB, worker {m['worker_peak_rss_mb']}")
    req = res.get("requests", {})
    for life in req.get("task_life", []):
        lines.append(f"  task life {life['input_mb']} MB: {life['requests']} = ${life['dollars_per_1000_tasks']}/1000")
    if "idle" in req:
        idle = req["idle"]
        lines.append(f"  idle: {idle['per_hour']}/h = ${idle['dollars_per_idle_worker_month']}/worker-month")
        if "head_per_poll" in idle:
            lines.append(f"  idle per poll: {idle['head_per_poll']} HEAD, {idle['list_per_poll']} LIST")
    lst = res.get("listing", {})
    if "moto" in lst:
        lines.append(f"  listing on moto: ratio {lst['ratio_moto']}; refresh {lst['requests']['refresh']}")
    if "local" in lst:
        lines.append(f"  listing on the local store: ratio {lst['local']['ratio']}")
    for kind, p in res.get("pickup", {}).items():
        lines.append(f"  pickup {kind}: median {p['median_s']} s, p95 {p['p95_s']} s")
    if "startup" in res:
        su = res["startup"]
        lines.append(
            f"  start-up: worker --once {su['worker_once_empty_s']} s, first claim {su['first_claim_s']} s, "
            f"list {su['cli_list_s']} s, show {su['cli_show_s']} s (python -c pass {su['python_s']} s)"
        )
    for name, t in res.get("targets", {}).items():
        lines.append(f"  target {'met ' if t['met'] else 'MISS'} {name}: {t['value']}")
    for name, c in res.get("checks", {}).items():
        lines.append(f"  check {'ok  ' if c['ok'] else 'FAIL'} {name}: {c}")
    return "\n".join(lines)
