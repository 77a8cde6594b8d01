"""A wide sheet through the worker's engine: the same table as a workbook and as a CSV (issue 36, item 6).

    .venv/bin/python bench/workbook.py --wide 200 [--label "this change"] [--code DIR]

The table is ``--wide`` rows × 16,384 columns (Excel's last column, XFD) of short texts and whole numbers in
turn, written once by xlsxwriter as Excel stores it (shared strings) and as a CSV of the same values, kept in
``bench/out/workbooks/``. Each input, and Excel's largest sheet of 6 columns (``customers-1048575.xlsx``, the
narrow case: what sizing blocks by cells costs a long sheet in memory), goes through
:func:`s3task.processing.run` with the ``copy`` task type, file to file, in a fresh child process that reports
its wall and CPU time, peak RSS (``VmHWM``) and the blocks it took. ``--code DIR`` runs the children with the
``s3task`` package of another checkout (``git archive COMMIT s3task | tar -x -C DIR``: the code before a
change), under ``--label``. Each label's figures replace that label's in ``bench/workbook.json`` (key
``engine``) and are shown in BENCHMARKS.md's section "Workbooks".
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

COLUMNS = 16_384
NARROW = "customers-1048575.xlsx"


def make_wide(rows: int, folder: Path) -> tuple[Path, Path]:
    """The wide table as ``wide-ROWS.xlsx`` and ``wide-ROWS.csv``, written once and reused."""
    book, text = folder / f"wide-{rows}.xlsx", folder / f"wide-{rows}.csv"
    if book.exists() and text.exists():
        return book, text
    import xlsxwriter  # type: ignore[import-untyped]

    partial = book.with_suffix(".partial")
    workbook = xlsxwriter.Workbook(str(partial))
    sheet = workbook.add_worksheet("Wide")
    names = [f"col{j + 1}" for j in range(COLUMNS)]
    sheet.write_row(0, 0, names)
    with text.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(names)
        for i in range(1, rows + 1):
            row = [(i * 31 + j) % 1000 if j % 2 else f"t{(i + j) % 500}" for j in range(COLUMNS)]
            sheet.write_row(i, 0, row)
            writer.writerow(row)
    workbook.close()
    partial.rename(book)
    return book, text


def engine(source: Path, target: Path) -> dict[str, float]:
    """One input through the worker's engine, file to file (runs in a child process)."""
    from s3task import processing
    from s3task.csvio import InputFormat

    started, cpu = time.perf_counter(), time.process_time()
    moves: list[int] = []
    read_as = InputFormat(kind="xlsx") if source.suffix == ".xlsx" else None
    with source.open("rb") as f, target.open("wb") as out:
        done = processing.run("copy", {}, f, out, lambda p: moves.append(p.processed_count), input_format=read_as)
    status = Path("/proc/self/status").read_text().splitlines()
    return {
        "rows": done.processed_count,
        "blocks": len(moves) - 2,  # progress moves after the header, after each block, and at the end
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu,
        "peak_mb": next((int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:")), 0.0),
    }


def measure(rows: int, folder: Path, work: Path, label: str, code: str | None) -> list[dict]:
    """Each input through the engine in a fresh child (``code``: another checkout's s3task first on its path)."""
    book, text = make_wide(rows, folder)
    inputs = [(book, f"{rows:,} × {COLUMNS:,}"), (text, f"{rows:,} × {COLUMNS:,}")]
    if (folder / NARROW).exists():
        inputs.append((folder / NARROW, "1,048,575 × 6"))
    env = {**os.environ, "BENCH_CODE": code} if code else dict(os.environ)
    runs = []
    for source, shape in inputs:
        target = work / "engine.csv"
        child = [sys.executable, str(Path(__file__).with_name("workbook.py")), "--child", "engine", str(source)]
        done = subprocess.run([*child, str(target)], check=True, capture_output=True, text=True, env=env)
        run = json.loads(done.stdout) | {"label": label, "input": source.suffix[1:], "shape": shape}
        run |= {"bytes": source.stat().st_size, "load": os.getloadavg()[0]}
        run |= {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        target.unlink()
        runs.append(run)
        print(
            f"| {label} | {shape} {run['input']} | {run['seconds']:.1f} | {run['cpu']:.1f} | {run['peak_mb']:.0f} MB "
            f"| {run['blocks']} |",
            flush=True,
        )
    return runs


def lines(runs: list[dict]) -> list[str]:
    """The section's table of the engine's figures, each label's workbook against its own CSV."""
    if not runs:
        return []
    out = [
        "",
        "### A wide sheet through the worker's engine (issue 36, item 6)",
        "",
        "Measured with `.venv/bin/python bench/workbook.py --wide 200 --label …` (and `--code DIR` for the code "
        "before the change): each input goes through `s3task.processing.run` with the `copy` task type, file to "
        "file, in a fresh process (wall and CPU time from its imports done to its output closed, peak RSS its "
        "`VmHWM`). The wide table is 200 rows × 16,384 columns (texts as shared strings and whole numbers, "
        "written by xlsxwriter) as a workbook and as the same table in a CSV; Excel's largest sheet of 6 columns "
        "shows what blocks sized by cells cost a long narrow sheet. A shared 2-core machine under other load "
        "(the load average is given with each run): compare the CPU times and the ratios, not single wall times.",
        "",
        "| code | input | wall s | CPU s | peak RSS | blocks | workbook ÷ its CSV: wall | CPU | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        base = next((r for r in runs if r["label"] == run["label"] and r["input"] == "csv"), None)
        ratio = (
            f"{run['seconds'] / base['seconds']:.1f}× | {run['cpu'] / base['cpu']:.1f}×"
            if base and run["input"] == "xlsx" and run["shape"] == base["shape"]
            else "– | –"
        )
        out.append(
            f"| {run['label']}, {run.get('date', '')} | {run['shape']}, .{run['input']} ({run['bytes'] / 1e6:.0f} MB) "
            f"| {run['seconds']:.1f} | {run['cpu']:.1f} | {run['peak_mb']:.0f} MB | {run['blocks']} | {ratio} "
            f"| {run['load']:.1f} |"
        )
    return [*out, "", *_summary(runs)]


def _summary(runs: list[dict]) -> list[str]:
    """A line for each label: the wide workbook against its CSV, and the narrow sheet's blocks and peak."""
    out = []
    for label in dict.fromkeys(run["label"] for run in runs):
        mine = {(r["input"], r["shape"].endswith("× 6")): r for r in runs if r["label"] == label}
        book, text, narrow = mine.get(("xlsx", False)), mine.get(("csv", False)), mine.get(("xlsx", True))
        if not (book and text):
            continue
        line = (
            f"- **{label}**: the wide workbook took {book['cpu'] / text['cpu']:.1f}× its CSV's CPU time "
            f"({book['cpu']:.1f} s against {text['cpu']:.1f} s; {book['blocks']} blocks against {text['blocks']}) and "
            f"peaked at {book['peak_mb']:.0f} MB against the CSV's {text['peak_mb']:.0f} MB"
        )
        if narrow:
            line += (
                f"; Excel's largest sheet of 6 columns: {narrow['blocks']} blocks, a peak of {narrow['peak_mb']:.0f} MB"
            )
        out.append(line + ".")
    return out
