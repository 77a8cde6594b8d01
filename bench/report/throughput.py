"""Section 1: the worker's throughput against the bare pandas and Arrow loops, on the local store and on S3."""

from __future__ import annotations

from typing import Any

from ..baselines import ARROW_BLOCK
from .fmt import EMAIL, PASS, _cmd, _n, _s, _table, _x

#: The contenders of the timing table, and the ratios of the ratio table, in their columns' order.
TIMED = ("pandas_loop", "arrow_loop", "store_copy", PASS, EMAIL)
RATIOS = (
    f"{PASS}/pandas_loop",
    f"{PASS}/arrow_loop",
    f"{PASS}/store_copy",
    f"{EMAIL}/pandas_loop",
    f"{EMAIL}/arrow_loop",
)


def section(res: dict[str, Any]) -> list[str]:
    tp = res.get("throughput", {})
    if not tp.get("local"):
        return []
    local = tp["local"]
    out = [*_intro(), *_times(local), *_ratios(local), *_strict_reading(local)]
    if any("cpu_s" in e for e in local):
        out += _cpu(local)
    if "fixed_local" in tp:
        out += _fixed_cost(tp["fixed_local"])
    if tp.get("s3_moto"):
        out += _on_s3(tp["s3_moto"])
    out += [_cmd("throughput"), ""]
    return out


def _intro() -> list[str]:
    """What the input is and what each contender does."""
    return [
        "## 1. Throughput against a hand-written script",
        "",
        "Input: generated CSV, 11 columns (ids, names, an email address, a quoted company name, city, "
        "country, signed amounts, quantities, timestamps, a note that is sometimes quoted, sometimes holds a "
        "line break and sometimes starts with `@` or `=`), about 110 bytes a row (`bench/data.py`). "
        "**worker** = a real `python worker.py --once --handlers bench.passthrough` process on the local "
        "store (the embedded default), timed from its `claimed` log line to its `completed` line: the attempt "
        "process streams the input from the store, parses, calls the task type, writes the output object, "
        "reports progress; the worker writes the record with compare-and-set and deletes the marker. "
        "**pandas loop** = `read_csv(chunksize=100_000, dtype=str, keep_default_na=False)` → `to_csv` per "
        f"chunk; **Arrow loop** = `pyarrow.csv.open_csv` (all columns string, {ARROW_BLOCK >> 20} MB blocks, quoted "
        "newlines on) "
        "→ `to_pandas()` → `Table.from_pandas` → `CSVWriter`; both read and write plain local files, no store, "
        "no progress. **raw copy** = the store's own streaming GET + PUT of the same bytes. Each task runs in "
        "a worker run of its own, and every contender starts with its input in the page cache (read once just "
        "before): this VM pages out page cache it considers idle (DAMON), and a cold read measures the disk, "
        "not the work.",
        "",
    ]


def _cell(e: dict[str, Any], k: str) -> str:
    """One contender's best time and rate at one size, or a dash if it was not timed."""
    sec, rps = e["seconds_best"], e["rows_per_s"]
    return f"{_s(sec.get(k))} · {_n(rps[k])} rows/s" if k in sec else "–"


def _times(local: list[dict[str, Any]]) -> list[str]:
    rows = [
        [f"{e['size_mb']:,} MB (best of {e['rounds']})", f"{e['rows']:,}", *(_cell(e, k) for k in TIMED)] for e in local
    ]
    header = [
        "input",
        "rows",
        "pandas loop",
        "Arrow loop",
        "raw store copy",
        "worker: pass-through",
        "worker: email_enrichment",
    ]
    return [_table(header, rows), ""]


def _ratios(local: list[dict[str, Any]]) -> list[str]:
    rows = [[f"{e['size_mb']:,} MB"] + [_x(e["ratios"].get(k)) for k in RATIOS] for e in local]
    header = [
        "input",
        "pass-through ÷ pandas loop (target ≥ 2)",
        "pass-through ÷ Arrow loop (target ≥ 0.8)",
        "pass-through ÷ raw copy",
        "email ÷ pandas loop (target ≥ 1)",
        "email ÷ Arrow loop",
    ]
    return [
        "Ratios (baseline seconds ÷ worker seconds; ≥ 1 means the worker is faster):",
        "",
        _table(header, rows),
        "",
    ]


def _strict_reading(local: list[dict[str, Any]]) -> list[str]:
    """The worker's best rate from 100 MB on against the Arrow loop's best at any size."""
    arrow_best = max(local, key=lambda e: e["rows_per_s"]["arrow_loop"])
    big = [e for e in local if e["size_mb"] >= 100] or local
    worker_best = max(big, key=lambda e: e["rows_per_s"][PASS])
    return [
        "The loops' rate should not depend on the size, so their spread across the rows is load: the Arrow "
        f"loop's best in this run is {_n(arrow_best['rows_per_s']['arrow_loop'])} rows/s (at "
        f"{arrow_best['size_mb']:,} MB); against that best, the worker's best pass-through rate from 100 MB on "
        f"({_n(worker_best['rows_per_s'][PASS])} rows/s at {worker_best['size_mb']:,} MB) is "
        f"**{_x(worker_best['rows_per_s'][PASS] / arrow_best['rows_per_s']['arrow_loop'])}** — the stricter reading "
        "of the 0.8 target.",
        "",
    ]


def _cpu(local: list[dict[str, Any]]) -> list[str]:
    rows = []
    for e in local:
        cpu = e.get("cpu_s", {})
        rows.append(
            [f"{e['size_mb']:,} MB"]
            + [_s(cpu.get(k)) for k in ("pandas_loop", "arrow_loop", PASS, EMAIL)]
            + [_x(cpu[PASS] / cpu["arrow_loop"]) if PASS in cpu and cpu.get("arrow_loop") else "–"]
        )
    header = [
        "input",
        "pandas loop",
        "Arrow loop",
        "worker: pass-through",
        "worker: email_enrichment",
        "pass-through CPU ÷ Arrow loop CPU",
    ]
    return [
        "CPU seconds (user + system, all threads; the least over the rounds, which load disturbs much less "
        "than wall time): the loops' whole process, the worker's attempt process (the worker process's own "
        "polls and record writes come on top and are small). On two cores the worker's pipeline can spend "
        "up to two CPU-seconds per second; the Arrow loop runs mostly on one.",
        "",
        _table(header, rows),
        "",
    ]


def _fixed_cost(f: dict[str, Any]) -> list[str]:
    return [
        f"**Per-task fixed cost.** A two-row task takes {_s(f['median_s'][PASS])} (pass-through) and "
        f"{_s(f['median_s'][EMAIL])} (`email_enrichment`) from claim to completed (median of "
        f"{f['tasks_per_handler']}; best {_s(f['best_s'][PASS])} / {_s(f['best_s'][EMAIL])}): starting the "
        "attempt process, opening the store, creating the output object, the completing compare-and-set "
        "and the marker delete. No file size amortises it, which is why the ratios are lowest for the "
        "smallest input: the bare loops pay nothing of the kind.",
        "",
    ]


def _on_s3(s3: list[dict[str, Any]]) -> list[str]:
    rows = []
    for e in s3:
        sec, r = e["seconds_best"], e["ratios"]
        rows.append(
            [
                f"{e['size_mb']:,} MB (best of {e['rounds']})",
                _s(sec["store_copy"]),
                _s(sec[PASS]),
                _s(sec[EMAIL]),
                _x(r.get(f"{PASS}/store_copy")),
                _x(r.get(f"{PASS}/arrow_loop")),
                _x(r.get(f"{EMAIL}/pandas_loop")),
            ]
        )
    header = [
        "input",
        "raw copy (GET + PUT)",
        "worker: pass-through",
        "worker: email",
        "pass-through ÷ raw copy",
        "pass-through ÷ Arrow loop",
        "email ÷ pandas loop",
    ]
    return [
        "**On S3 (moto over HTTP).** The same measurement against moto's S3 server on 127.0.0.1 (a separate "
        "process). Moto stores every byte from Python on the same two cores the worker uses, so these "
        "times are dominated by moto; the raw copy (GET + multipart PUT through the S3 store) shows its "
        "ceiling. The bare loops are the same local-file loops as above.",
        "",
        _table(header, rows),
        "",
    ]
