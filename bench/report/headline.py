"""The headline figures: a line for each measurement, at the top of the report."""

from __future__ import annotations

from typing import Any

from .fmt import EMAIL, PASS, PLOT, _largest, _local, _n, _req, _s, _x
from .pickup import _PICKUP_NAMES


def section(res: dict[str, Any]) -> list[str]:
    out = ["## Headline figures", ""]
    if _local(res):
        big = _largest(res)
        r = big["ratios"]
        out.append(
            f"- **Throughput** ({big['size_mb']:,} MB, {big['rows']:,} rows, local store): the worker passes "
            f"{_n(big['rows_per_s'][PASS])} rows/s through a pass-through task type — "
            f"{_x(r[f'{PASS}/pandas_loop'])} the bare pandas loop and {_x(r[f'{PASS}/arrow_loop'])} the bare "
            f"Arrow loop — and runs `email_enrichment` at {_n(big['rows_per_s'][EMAIL])} rows/s, "
            f"{_x(r[f'{EMAIL}/pandas_loop'])} the pandas loop."
        )
    from ..targets import memory_curve

    mem = memory_curve(res)
    if mem:
        worst = max(v for p in mem for k, v in p.items() if k.startswith("child_"))
        from ..targets import memory_base

        base = memory_base(mem)
        out.append(
            f"- **Memory**: the attempt process peaks at {base.get('child_' + PASS):.0f} MB "
            f"({base['size_mb']:,} MB input) and {mem[-1].get('child_' + PASS):.0f} MB ({mem[-1]['size_mb']:,} MB "
            f"input) for the pass-through; {worst:.0f} MB at most for any task type and size. The worker process "
            f"itself stays at {max(p['worker'] for p in mem if p.get('worker')):.0f} MB."
        )
    req = res.get("requests", {})
    if req.get("task_life"):
        small = req["task_life"][0]
        idle = req["idle"]
        out.append(
            f"- **Money**: a {small['input_mb']:g} MB task costs {small['requests_total']} requests from create to "
            f"download, ${small['dollars_per_1000_tasks']:.3f} per 1,000 tasks; an idle worker costs "
            f"${idle['dollars_per_idle_worker_month']:.2f} a month (S3 Standard request prices)."
        )
    lst = res.get("listing", {})
    if "moto" in lst:
        a, b = (str(x) for x in (lst["sizes"][0], lst["sizes"][-1]))
        out.append(
            f"- **Listing**: the newest 50 of {int(b):,} tasks take {_x(lst['ratio_moto'])} the time of the newest "
            f"50 of {int(a):,} on moto"
            + (f" ({_x(lst['ratio_moto_latency'])} with 20 ms per request)" if "ratio_moto_latency" in lst else "")
            + f"; a refresh of an open Tasks page costs {_req(lst['requests']['refresh'])}."
        )
    for kind, p in res.get("pickup", {}).items():
        who, where = _PICKUP_NAMES.get(kind, (kind, ""))
        out.append(
            f"- **Pickup** ({who}, {where}, poll every {p['poll_interval_s']:g} s): median {_s(p['median_s'])}, "
            f"p95 {_s(p['p95_s'])} from submit to running."
        )
    out += ["", f"![rows/s and peak RSS against input size]({PLOT})", ""]
    return out
