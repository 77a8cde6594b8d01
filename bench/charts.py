"""A column's chart over every row of a large result (issue 34 part 3): from cold, and from the kept summary.

    .venv/bin/python bench/charts.py [--size 100] [--columns amount,signup,city,customer_id] [--report]

Makes a result of about ``--size`` MB (12,500 rows a MB; the output the worker writes comes to about 0.95 MB
for each: ``--size 1084`` is a 1,025 MB result), generated once, seeded, into ``bench/out/charts/``:
a unique customer id, a name, a city (5 values), a signup date over 12 years, a quantity (a whole number), an
amount (a number with two decimals, 2% empty) and a note. It is stored as a worker writes an output (the
``copy`` task type through ``s3task.processing.run``: BOM, formula protection) on a local store, as a
completed task. Then, each in a fresh process (``subprocess``: its peak RSS, ``VmHWM``, is its own), through
the service's charts part (``s3task.tasks.charts.Charts``) as the page asks:

``copy``
    the Parquet copy made (the cold chart's first part: once per result, for every chart of it);
``count <column>``
    the column's summary made from that copy and kept beside the result (the cold chart's second part);
``warm <column>``
    the same chart asked again by a process that has never seen it: the kept summary read.

A cold chart of a result nobody opened as Parquet is ``copy`` + ``count``; the goal is a 1 GB result's chart
of one column ready in under 10 s. Prints a Markdown table, keeps the figures per size in ``bench/charts.json``
and writes the section "Charts" of ``BENCHMARKS.md`` from them (``bench/kept.py``); ``--report`` only rewrites
that section (a size's ``note`` in the JSON, if any, is printed under its table). Run by hand, never in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.kept import replace_kept  # noqa: E402

MB = 1_000_000
OUT = ROOT / "bench" / "out" / "charts"
FIGURES = ROOT / "bench" / "charts.json"
BEGIN, END = "<!-- kept: charts -->", "<!-- /kept -->"
GOAL_SECONDS = 10.0
ACTOR = "bench"
#: Rows generated at a time (a 1 GB result is made in pieces, in bounded memory).
PIECE_ROWS = 500_000
NAMES = ["Anna Smith", "Ben Müller", "Chloé Dubois", "Hiro Tanaka"]
CITIES = ["Amsterdam", "Berlin", "Lisbon", "Oslo", "Zürich"]


def make_input(path: Path, mb: int) -> None:
    """About ``mb`` MB of customers (see the module)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    rows = mb * MB // 80
    rng = np.random.default_rng(34)
    writer = None
    for start in range(0, rows, PIECE_ROWS):
        n = min(PIECE_ROWS, rows - start)
        ids = pc.binary_join_element_wise(
            "C", pc.utf8_lpad(pa.array(np.arange(start + 1, start + n + 1)).cast(pa.string()), 9, "0"), ""
        )
        amount = pc.cast(pc.round(pa.array(np.abs(rng.normal(500, 400, n))), 2), pa.string())
        amount = pc.if_else(pa.array(rng.random(n) < 0.02), "", amount)
        table = pa.table(
            {
                "customer_id": ids,
                "name": pa.array(
                    np.array(["Anna Smith", "Ben Müller", "Chloé Dubois", "Hiro Tanaka"])[rng.integers(0, 4, n)]
                ),
                "city": pa.array(np.array(CITIES)[rng.integers(0, 5, n)]),
                "signup": pa.array(np.datetime64("2013-01-01") + rng.integers(0, 12 * 365, n).astype("timedelta64[D]")),
                "quantity": pa.array(rng.integers(1, 200, n)),
                "amount": amount,
                "notes": pa.array(np.array(["ok", "called twice", "asked for invoice", ""])[rng.integers(0, 4, n)]),
            }
        )
        writer = writer or pacsv.CSVWriter(
            str(path), table.schema, write_options=pacsv.WriteOptions(quoting_style="none")
        )
        writer.write_table(table)
    if writer is not None:
        writer.close()


def stored_result(mb: int) -> tuple[Path, str]:
    """The store holding a completed task whose output is the generated result (made once per size)."""
    store_dir, marker = OUT / f"store-{mb}", OUT / f"store-{mb}.task"
    if marker.exists():
        return store_dir, marker.read_text().strip()
    OUT.mkdir(parents=True, exist_ok=True)
    source = OUT / f"input-{mb}.csv"
    if not source.exists():
        make_input(source, mb)
    task_id = _complete(store_dir, source)
    marker.write_text(task_id)
    return store_dir, task_id


def _complete(store_dir: Path, source: Path) -> str:
    """A task of ``source`` run as the worker's engine runs it, its output stored, the task completed."""
    from s3task import lifecycle, processing
    from s3task.layout import Layout
    from s3task.records import update_record
    from s3task.store.base import PutMode
    from s3task.store.local import LocalStore
    from s3task.tasks import Actor, TaskService

    store, layout = LocalStore(store_dir), Layout()
    service, actor = TaskService(store, layout), Actor(ACTOR)
    task_id = service.create(actor, "Bench chart", "copy").record.task_id
    with source.open("rb") as f:
        service.upload_input(actor, task_id, f)
    service.submit(actor, task_id)
    held: dict[str, Any] = {}

    def claim(r: Any, now: Any) -> Any:
        new, held["lease"] = lifecycle.claim(r, now, worker_id="bench", lease_seconds=3600)
        return new

    update_record(store, layout, task_id, claim)
    key = layout.output_key(task_id, 1)
    with source.open("rb") as src, store.open_write(key, PutMode.CREATE, content_type="text/csv") as dst:
        counts = processing.run("copy", {}, src, dst, lambda _c: None)
    update_record(
        store,
        layout,
        task_id,
        lambda r, now: lifecycle.complete(
            r, now, lease=held["lease"], output_path=key, progress=counts, row_count=counts.row_count
        ),
    )
    return task_id


def child(store_dir: str, task_id: str, step: str, column: str) -> dict[str, Any]:
    """One step in this fresh process: its wall and CPU seconds, and its peak RSS."""
    import pandas  # noqa: F401  (these imported before the clock starts: the app has them loaded)
    import pyarrow.compute
    import pyarrow.parquet  # noqa: F401

    from s3task.handlers import profile  # noqa: F401
    from s3task.layout import Layout
    from s3task.store.local import LocalStore
    from s3task.tasks import Actor, TaskService
    from s3task.tasks.charts import Charts

    service, actor = TaskService(LocalStore(Path(store_dir)), Layout()), Actor(ACTOR)
    base = _rss_mb("VmRSS")
    cpu, start = time.process_time(), time.perf_counter()
    said = ""
    if step == "copy":
        service.ensure_output(actor, task_id, "parquet")
    else:
        from s3task import charts

        summary = Charts(service).column_summary(actor, task_id, column)
        said = charts.describe(summary)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"seconds": seconds, "cpu": cpu, "peak_mb": _rss_mb("VmHWM"), "base_mb": base, "said": said}


def _rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _run(store_dir: Path, task_id: str, step: str, column: str = "") -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(store_dir), task_id, step, column],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def _forget(store_dir: Path, task_id: str) -> None:
    """Remove the Parquet copy and every kept summary, so the next chart is cold."""
    folder = store_dir / "batch-tasks" / task_id
    for path in folder.glob("output-attempt-1.*"):
        if path.name.endswith(".parquet") or ".chart-" in path.name:
            path.unlink()


def measure(mb: int, columns: list[str]) -> dict[str, Any]:
    store_dir, task_id = stored_result(mb)
    _forget(store_dir, task_id)
    output = next((store_dir / "batch-tasks" / task_id).glob("output-attempt-1.csv"))
    load = os.getloadavg()[0]
    copy = _run(store_dir, task_id, "copy")
    parquet = next((store_dir / "batch-tasks" / task_id).glob("output-attempt-1.parquet"))
    runs = {"copy": copy}
    for column in columns:
        runs[f"count {column}"] = _run(store_dir, task_id, "count", column)
        runs[f"warm {column}"] = _run(store_dir, task_id, "warm", column)
    rows = int(runs[f"count {columns[0]}"]["said"].split(": ", 1)[1].split(" rows")[0].replace(",", ""))
    return {
        "mb": mb,
        "output_bytes": output.stat().st_size,
        "parquet_bytes": parquet.stat().st_size,
        "rows": rows,
        "columns": columns,
        "runs": runs,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "load": f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end",
    }


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return done.stdout.strip()


def table(result: dict[str, Any]) -> list[str]:
    copy = result["runs"]["copy"]
    lines = [
        "| column | its summary | cold: copy + count s | count s (CPU s), the copy made | warm s "
        "| peak RSS: copy / count / warm (after imports) |",
        "|---|---|---|---|---|---|",
    ]
    for column in result["columns"]:
        count, warm = result["runs"][f"count {column}"], result["runs"][f"warm {column}"]
        cold = copy["seconds"] + count["seconds"]
        lines.append(
            f"| {column} | {count['said']} | {cold:.1f} ({copy['seconds']:.1f} + {count['seconds']:.1f}) "
            f"| {count['seconds']:.2f} ({count['cpu']:.2f}) | {warm['seconds']:.2f} "
            f"| {copy['peak_mb']:,.0f} / {count['peak_mb']:,.0f} / {warm['peak_mb']:,.0f} MB "
            f"({count.get('base_mb', 0):,.0f} MB) |"
        )
    return lines


def verdict(result: dict[str, Any]) -> str:
    copy = result["runs"]["copy"]["seconds"]
    worst = max(result["runs"][f"count {c}"]["seconds"] for c in result["columns"])
    cold = copy + worst
    size = result["output_bytes"] / MB
    met = "met" if cold < GOAL_SECONDS else "**not met**"
    return (
        f"- Goal (a 1 GB result's chart of one column in under {GOAL_SECONDS:.0f} s), at {size:,.0f} MB: the slowest "
        f"cold chart took {cold:.1f} s, {copy:.1f} s of it making the Parquet copy (once per result, for every "
        f"chart of it; CPU {result['runs']['copy']['cpu']:.1f} s) — {met} from cold; with the copy made, the slowest "
        f"column took {worst:.2f} s ({'met' if worst < GOAL_SECONDS else '**not met**'}), and a kept summary is read "
        f"in {max(result['runs'][f'warm {c}']['seconds'] for c in result['columns']):.2f} s."
    )


def section(out: dict[str, Any]) -> str:
    sizes = sorted(out["sizes"].values(), key=lambda r: r["mb"])
    lines = [
        BEGIN,
        "## Charts: one column over every row of a result (issue 34 part 3)",
        "",
        "Measured with `.venv/bin/python bench/charts.py --size MB`, not by `bench/run.py`. The result: a generated "
        "customer list stored as a worker writes it (BOM, formula protection) on a local store, about 76 bytes a "
        "row; `customer_id` unique (the worst case of a text column: every value different), `city` 5 values, "
        "`signup` dates over 12 years, `amount` numbers with 2% empty. Each step in a fresh process through "
        "`s3task.tasks.charts.Charts`, as the page asks: *copy* makes the Parquet copy, *count* the column's summary "
        "from it (kept beside the result), *warm* asks again from a process that never saw it (the kept summary "
        "read). A cold chart is copy + count. Peak RSS is each process's `VmHWM` (the interpreter and pyarrow "
        "included; in brackets its RSS after the imports, before the clock starts). Wall seconds on a loaded machine "
        "(a load average above its CPUs) move from run to run, CPU seconds less.",
        "",
    ]
    for result in sizes:
        lines += [
            f"**{result['output_bytes'] / MB:,.0f} MB** result ({result['rows']:,} rows; its Parquet copy "
            f"{result['parquet_bytes'] / MB:,.0f} MB), {result['date']}, commit {result['commit']}; "
            f"{result['machine']}; load average {result['load']}:",
            "",
            *table(result),
            "",
            verdict(result),
            *([f"- {result['note']}"] if result.get("note") else []),
            "",
        ]
    lines += [
        "To reproduce at 1 GB: `.venv/bin/python bench/charts.py --size 1084` (a 1,025 MB result of 13,550,000 rows; "
        "generated once into `bench/out/charts/`, its store holds the input and the output again, about 2.5 GB in all; "
        "a minute or two).",
        END,
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100, help="about the result's size in MB (1084: a 1 GB result)")
    parser.add_argument("--columns", default="amount,signup,city,customer_id", help="the columns charted")
    parser.add_argument("--report", action="store_true", help="only rewrite BENCHMARKS.md's section")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    out = json.loads(FIGURES.read_text()) if FIGURES.exists() else {"sizes": {}}
    if not args.report:
        result = measure(args.size, args.columns.split(","))
        print("\n".join(table(result)) + "\n\n" + verdict(result))
        out["sizes"][str(args.size)] = result
        FIGURES.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    replace_kept(ROOT / "BENCHMARKS.md", BEGIN, END, section(out))


if __name__ == "__main__":
    main()
