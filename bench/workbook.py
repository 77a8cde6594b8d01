"""Time and memory of reading a workbook to CSV text: s3task's reader against pandas.read_excel, and the candidates.

    .venv/bin/python bench/workbook.py [--rows 200000] [--large 1048575] [--only ours,pandas]

Each ``--rows`` (and ``--large``) size is written once as an .xlsx of 6 columns, the way Excel
stores them (shared strings, styles with number formats: an id, a name, a unique email, an amount
with decimals, a date, a code under ``00000``), with xlsxwriter, and kept in
``bench/out/workbooks/``. Then each reader turns the first sheet into CSV text, file to file, in a
fresh child process that reports its wall and CPU time and its peak RSS (``VmHWM``):

- ``ours``: :class:`s3task.csvio.sheetreader.WorkbookReader`, each block written with Arrow's CSV writer;
- ``pandas``: ``pandas.read_excel(path, dtype=str).to_csv(out, index=False)`` (openpyxl underneath), the baseline;
- ``calamine``: python-calamine's ``iter_rows`` to ``csv.writer`` (the Rust reader; it loads the sheet whole);
- ``openpyxl``: openpyxl's read-only ``iter_rows(values_only=True)`` to ``csv.writer``.

Ratios are against ``pandas`` on the same file in the same run (its wall, CPU and peak RSS over each
reader's). With ``--repeat N`` each reader runs N times and the fastest run is kept. ``--wide ROWS`` measures
instead a wide sheet through the worker's engine, as a workbook and as a CSV (:mod:`bench.workbook_wide`).
Prints a Markdown table, writes every figure to ``bench/workbook.json`` and the section "Workbooks"
of ``BENCHMARKS.md`` from them (kept there by ``bench/report/`` like the other sections measured by a
script of their own); ``--report`` only rewrites that section from ``bench/workbook.json``.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.kept import replace_kept  # noqa: E402

if os.environ.get("BENCH_CODE"):  # --code: another checkout's s3task (bench/workbook_wide.py)
    sys.path.insert(0, os.environ["BENCH_CODE"])

from bench import workbook_wide  # noqa: E402

READERS = ("ours", "pandas", "calamine", "openpyxl")
NAMES = ["Anna Smith", "Ben Müller", "Chloé García", "Dmitri Rossi", "Emma Dubois", "Farid Novak", "Grace Chen"]


def make(rows: int, path: Path) -> Path:
    """A workbook of ``rows`` data rows under a header, written once and reused.

    Written by xlsxwriter in its default mode, which stores text as Excel does (a shared-strings
    table the cells refer to by number; its constant-memory mode and openpyxl's write-only mode
    write each text into its cell instead). It holds the whole sheet while writing: several GB
    for Excel's largest sheet.
    """
    if path.exists():
        return path
    import xlsxwriter  # type: ignore[import-untyped]

    partial = path.with_suffix(".partial")
    book = xlsxwriter.Workbook(str(partial))
    sheet = book.add_worksheet("Customers")
    day, code = book.add_format({"num_format": "yyyy-mm-dd"}), book.add_format({"num_format": "00000"})
    sheet.write_row(0, 0, ["id", "name", "email", "amount", "joined", "code"])
    start = datetime.date(2020, 1, 1)
    for i in range(1, rows + 1):
        sheet.write_number(i, 0, i)
        sheet.write_string(i, 1, NAMES[i % 7])
        sheet.write_string(i, 2, f"user{i}@example.com")
        sheet.write_number(i, 3, (i % 100_003) / 100)
        sheet.write_datetime(i, 4, start + datetime.timedelta(days=i % 2000), day)
        sheet.write_number(i, 5, i % 99_991, code)
    book.close()
    partial.rename(path)
    return path


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def convert(reader: str, source: Path, target: Path) -> dict[str, float]:
    """One reader, workbook to CSV text (runs in a child process)."""
    started, cpu = time.perf_counter(), time.process_time()
    rows = globals()[f"_{reader}"](source, target)
    return {
        "rows": rows,
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu,
        "peak_mb": _peak_mb(),
    }


def _ours(source: Path, target: Path) -> int:
    import pyarrow.csv as pacsv

    from s3task.csvio.sheetreader import WorkbookReader

    reader = WorkbookReader(source)
    rows = 0
    with pacsv.CSVWriter(str(target), reader.empty_table().schema) as writer:
        for table, _end in reader.tables():
            writer.write_table(table)
            rows += table.num_rows
    return rows


def _pandas(source: Path, target: Path) -> int:
    import pandas as pd

    frame = pd.read_excel(source, dtype=str)
    frame.to_csv(target, index=False)
    return len(frame)


def _calamine(source: Path, target: Path) -> int:
    from python_calamine import CalamineWorkbook

    book = CalamineWorkbook.from_path(str(source))
    return _write_rows(book.get_sheet_by_index(0).iter_rows(), target)


def _openpyxl(source: Path, target: Path) -> int:
    from openpyxl import load_workbook

    book = load_workbook(source, read_only=True, data_only=True)
    return _write_rows(book.worksheets[0].iter_rows(values_only=True), target)


def _write_rows(rows: object, target: Path) -> int:
    count = -1  # the header is no data row
    with target.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        for row in rows:  # type: ignore[attr-defined]
            writer.writerow(row)
            count += 1
    return count


def measure(reader: str, source: Path, work: Path, repeat: int) -> dict[str, float]:
    """The best of ``repeat`` runs (by wall time: a shared box's load only ever adds to it)."""
    runs = []
    for _ in range(repeat):
        target = work / f"{reader}.csv"
        child = [sys.executable, __file__, "--child", reader, str(source), str(target)]
        done = subprocess.run(child, check=True, capture_output=True, text=True, timeout=3600)
        result: dict[str, float] = json.loads(done.stdout)
        result["csv_bytes"] = target.stat().st_size
        target.unlink()
        runs.append(result)
    return min(runs, key=lambda run: run["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--large", type=int, default=0, help="also a sheet this long (ours, calamine); 0: none")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each reader; the fastest is reported")
    parser.add_argument("--only", default=",".join(READERS), help="the readers to run, comma-separated")
    parser.add_argument("--report", action="store_true", help="only rewrite BENCHMARKS.md from bench/workbook.json")
    parser.add_argument("--wide", type=int, default=0, help="only the wide sheet of this many rows, through the engine")
    parser.add_argument("--label", default="this checkout", help="--wide: the figures' label (one per code measured)")
    parser.add_argument("--code", help="--wide: a folder holding the s3task package to measure instead of this one")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        reader, source, target = args.child
        measured = workbook_wide.engine if reader == "engine" else lambda s, t: convert(reader, s, t)
        print(json.dumps(measured(Path(source), Path(target))))
        return
    if args.report:
        write_section(json.loads(RESULTS.read_text()), ROOT / "BENCHMARKS.md")
        return
    folder = ROOT / "bench" / "out" / "workbooks"
    folder.mkdir(parents=True, exist_ok=True)
    if args.wide:
        out = json.loads(RESULTS.read_text())
        with tempfile.TemporaryDirectory() as tmp:
            runs = workbook_wide.measure(args.wide, folder, Path(tmp), args.label, args.code)
        out["engine"] = [run for run in out.get("engine", []) if run["label"] != args.label] + runs
        RESULTS.write_text(json.dumps(out, indent=2) + "\n")
        write_section(out, ROOT / "BENCHMARKS.md")
        return
    sizes = [(args.rows, args.only.split(","))] + ([(args.large, ["ours", "calamine"])] if args.large else [])
    results = []
    engine = json.loads(RESULTS.read_text()).get("engine", []) if RESULTS.exists() else []
    print("| sheet | reader | rows | wall s | CPU s | peak RSS | pandas ÷ this: wall | CPU | RSS |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for rows, readers in sizes:
            source = make(rows, folder / f"customers-{rows}.xlsx")
            runs = {reader: measure(reader, source, Path(tmp), args.repeat) for reader in readers}
            base = runs.get("pandas")  # pandas on Excel's largest sheet takes minutes: not run there
            for reader, run in runs.items():
                run |= {"reader": reader, "sheet_rows": rows, "xlsx_bytes": source.stat().st_size}
                if base:
                    run["wall_ratio"] = base["seconds"] / run["seconds"]
                    run["cpu_ratio"] = base["cpu"] / run["cpu"]
                    run["rss_ratio"] = base["peak_mb"] / run["peak_mb"]
                results.append(run)
                ratios = (
                    f"{run['wall_ratio']:.1f}× | {run['cpu_ratio']:.1f}× | {run['rss_ratio']:.1f}×"
                    if base
                    else "– | – | –"
                )
                print(
                    f"| {rows:,} × 6, {source.stat().st_size / 1e6:.0f} MB | {reader} | {run['rows']:,} "
                    f"| {run['seconds']:.1f} | {run['cpu']:.1f} | {run['peak_mb']:.0f} MB | {ratios} |",
                    flush=True,
                )
    machine = f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    print(f"\n{machine}")
    out = {"machine": machine, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "results": results}
    out |= {"engine": engine} if engine else {}  # measured by --wide, kept
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    write_section(out, ROOT / "BENCHMARKS.md")


RESULTS = ROOT / "bench" / "workbook.json"
BEGIN, END = "<!-- kept: workbook -->", "<!-- /kept -->"


def section(out: dict) -> str:
    """BENCHMARKS.md's section on workbooks, from this script's figures."""
    rows = out["results"]
    lines = [
        BEGIN,
        "## Workbooks: an .xlsx sheet read to CSV text",
        "",
        f"Measured with `.venv/bin/python bench/workbook.py --large 1048575` on {out.get('date', 'an earlier day')} "
        f"({out['machine']}), not by `bench/run.py`. Each reader turns the first sheet of the same workbook "
        "(6 columns, written by xlsxwriter as Excel stores them: shared strings, a date and a `00000` code "
        "format) into CSV text, file to file, in a fresh process; peak RSS is that process's `VmHWM`. "
        "Ratios are pandas' figure over the reader's, on the same file in the same run "
        "(`pandas.read_excel` is not run on Excel's largest sheet: it takes minutes there).",
        "",
        "| sheet | reader | wall s | CPU s | peak RSS | pandas ÷ this: wall | CPU | RSS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in rows:
        ratios = (
            " | ".join(f"{run[k]:.1f}×" for k in ("wall_ratio", "cpu_ratio", "rss_ratio"))
            if "wall_ratio" in run
            else "– | – | –"
        )
        lines.append(
            f"| {run['sheet_rows']:,} rows, {run['xlsx_bytes'] / 1e6:.0f} MB | {run['reader']} | {run['seconds']:.1f} "
            f"| {run['cpu']:.1f} | {run['peak_mb']:.0f} MB | {ratios} |"
        )
    lines += ["", *_why(rows), *workbook_wide.lines(out.get("engine", [])), END, ""]
    return "\n".join(lines)


def _why(rows: list[dict]) -> list[str]:
    """Why s3task reads workbooks with its own reader, in the figures of this run."""
    by = {(r["reader"], r["sheet_rows"]): r for r in rows}
    small = min(r["sheet_rows"] for r in rows)
    large = max(r["sheet_rows"] for r in rows)
    ours, cal = by.get(("ours", small)), by.get(("calamine", small))
    ours_l, cal_l = by.get(("ours", large)), by.get(("calamine", large))
    out = []
    if ours and "wall_ratio" in ours:
        out.append(
            f"- **Against the baseline**: s3task's reader (`s3task/csvio/sheetreader.py`) is {ours['wall_ratio']:.1f}× "
            f"faster than pandas in wall time and needs {ours['cpu_ratio']:.1f}× less CPU time at {small:,} rows "
            "(the goal: ≥ 5×)."
        )
    if ours_l and cal_l and large != small:
        fastest = f" ({cal['seconds']:.1f} s against {ours['seconds']:.1f} s)" if cal and ours else ""
        out.append(
            f"- **Why not calamine**, the fastest here{fastest}: "
            f"it loads the whole sheet, so its peak grows with the sheet — {cal_l['peak_mb']:.0f} MB at {large:,} rows "
            f"against {ours_l['peak_mb']:.0f} MB for s3task's reader, which streams the sheet's XML block by block "
            "(the goal: under 300 MB at Excel's largest sheet). openpyxl's read-only mode has the smallest peak at "
            f"{small:,} rows but is no faster than pandas."
        )
    return out


def write_section(out: dict, md: Path) -> None:
    """Replace (or add, before "How it is measured") the workbook section of BENCHMARKS.md."""
    replace_kept(md, BEGIN, END, section(out))


if __name__ == "__main__":
    main()
