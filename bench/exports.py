"""Time and memory of the copies made from a completed output (s3task.exports): the Excel workbook, the exact CSV.

    .venv/bin/python bench/exports.py [--rows 200000 --mb 100]

For each input (the first ``--rows`` rows of the benchmark data, and the ``--mb`` MB file of
``bench/data.py``) it first writes the stored output as the worker does (the pass-through
task type through ``s3task.processing.run``: BOM, formula protection), then converts that
file in a fresh child process per copy, file to file, as ``s3task.exports.make`` streams
store to store. Each child reports its wall and CPU time and its peak RSS against
its peak RSS after the imports (``VmHWM``), so memory that grows with the file would show. Prints a Markdown
table (the BENCHMARKS.md section "Excel and exact copies").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import data  # noqa: E402


def _rss_mb() -> float:
    """This process's peak RSS so far (``VmHWM``: unlike ``ru_maxrss``, not inherited over fork and exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def output_of(source: Path, target: Path) -> dict[str, float]:
    """The stored output for ``source``, as a worker writes it; returns rows and seconds."""
    from s3task import processing

    started = time.perf_counter()
    with source.open("rb") as src, target.open("wb") as dst:
        counts = processing.run("copy", {}, src, dst, lambda _c: None)
    return {"rows": counts.row_count, "seconds": time.perf_counter() - started}


def convert(variant: str, source: Path, target: Path) -> dict[str, float]:
    """One copy, file to file (runs in a child process)."""
    import xlsxwriter  # type: ignore[import-untyped]  # noqa: F401

    from s3task import exports

    base = _rss_mb()
    started, cpu = time.perf_counter(), time.process_time()
    with source.open("rb") as raw, target.open("wb") as sink:
        legacy, stream = exports.peek_bom(raw)
        if variant == "xlsx":
            rows = exports.write_xlsx(stream, sink, legacy=legacy)
        else:
            rows = exports.write_csv(stream, sink, legacy=legacy, errors_only=False, error_column=None)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "rows": rows,
        "seconds": seconds,
        "cpu": cpu,
        "base_mb": base,
        "peak_mb": _rss_mb(),
        "bytes": target.stat().st_size,
    }


def first_rows(path: Path, lines: int, target: Path) -> Path:
    """The first ``lines`` lines of ``path``, cut back to the last whole row."""
    with path.open("rb") as src:
        piece = b"".join(line for _, line in zip(range(lines + 1), src, strict=False))
    target.write_bytes(piece[: data.row_end(piece) + 1])
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--mb", type=int, default=100, help="0: only the first --rows rows")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        variant, source, target = args.child
        print(json.dumps(convert(variant, Path(source), Path(target))))
        return
    big = data.ensure(ROOT / "bench" / "out" / "data", args.mb or 64)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # The quoted line breaks in the notes are rare: cutting at a line is a row end often enough.
        inputs = {
            f"first {n:,} lines": first_rows(big, n, work / f"lines-{n}.csv") for n in (args.rows // 4, args.rows)
        }
        if args.mb:
            inputs[f"{args.mb} MB"] = big
        print("| input | output CSV | copy | rows | wall s | CPU s | rows per CPU s | size | RSS: imports → peak |")
        print("|---|---|---|---|---|---|---|---|---|")
        for label, source in inputs.items():
            stored = work / "output.csv"
            made = output_of(source, stored)
            size = stored.stat().st_size
            for variant in ("exact", "xlsx"):
                target = work / f"copy.{variant}"
                child = [sys.executable, __file__, "--child", variant, str(stored), str(target)]
                result = json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout)
                print(
                    f"| {label} | {size / 1e6:,.0f} MB, written in {made['seconds']:.1f} s | {variant} "
                    f"| {result['rows']:,} | {result['seconds']:.1f} | {result['cpu']:.1f} "
                    f"| {result['rows'] / result['cpu']:,.0f} "
                    f"| {result['bytes'] / 1e6:,.0f} MB | {result['base_mb']:.0f} → {result['peak_mb']:.0f} MB |",
                    flush=True,
                )
                target.unlink()
    print(f"\nPython {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
