"""Compare two results by key: s3task's compare engine against the pandas script an analyst writes and DuckDB's SQL.

    .venv/bin/python bench/compare_results.py [--size 100] [--only s3task,pandas,duckdb] [--report]

Two results of about ``--size`` million bytes each (``--size 1024`` for the issue's 1 GB, by hand) are generated
once, seeded, into ``bench/out/compare/`` (gitignored): 8 text columns (a unique customer id, a name, an email, a
city, an amount written ``12.34``, a date, a status, a note); the new one has 5% of its rows changed (one or two
cells each: the amount, the status or the note), 0.5% of the old rows removed and as many added.

Each contender runs in a fresh interpreter (``subprocess``), file to file, and reports its wall and CPU time,
from its first import to its output closed, and its peak RSS (``VmHWM``):

- ``s3task``: :func:`s3task.compare.compare` by ``customer_id``, each side read by the project's own reader
  (``CsvReader`` blocks, every column text, as :meth:`s3task.results.Result.batches` gives a result), DuckDB
  held to ``s3task.compare.engine.MEMORY_MB`` (the worker's most for its whole-file steps), both sides spooled
  to and DuckDB spilling into a scratch folder; the highlighter CSV written;
- ``pandas``: the script an analyst writes: ``read_csv(dtype=str, keep_default_na=False)`` of both,
  ``merge(on=key, how="outer", indicator=True)``, then the columns compared one by one and the same
  highlighter rows made with vectorised string operations, ``to_csv``;
- ``duckdb``: the same as one SQL statement (``read_csv(all_varchar=true)``, ``FULL OUTER JOIN``, a ``CASE``
  per column; DuckDB's defaults: every core, 80% of the machine's memory), ``COPY`` to a CSV.

The three highlighters are read back as text (s3task's protection taken off), sorted by their mark and key, and
compared cell for cell; any difference fails the benchmark (exit 1) before a figure is written. Prints a
Markdown table, keeps the figures per size in ``bench/compare_results.json`` and writes the section "Compare"
of ``BENCHMARKS.md`` from them (bench/kept.py); ``--report`` only rewrites that section. Run by hand, never
in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.kept import replace_kept  # noqa: E402

CONTENDERS = ("s3task", "pandas", "duckdb")
MB = 1_000_000
KEY = "customer_id"
COLUMNS = [KEY, "name", "email", "city", "amount", "joined", "status", "note"]
CHANGED_SHARE, REMOVED_SHARE = 0.05, 0.005
CHUNK_ROWS = 200_000
RESULTS = ROOT / "bench" / "compare_results.json"
BEGIN, END = "<!-- kept: compare -->", "<!-- /kept -->"
SPEED_GOAL, MEMORY_SHARE_GOAL = 2.0, 0.2

# --- the two results --------------------------------------------------------------------------------------


def _rows(first: int, count: int, changed: bool) -> list[str]:
    """CSV lines of rows ``first`` … (the old result's, or with ``changed`` the new one's edits applied); each
    row's values follow from its number alone, so both results agree wherever no edit was made."""
    cities = ["Leeds", "York", "Bath", "Hull", "Ely", "Zürich", "Köln", "Truro"]
    status = ["active", "paused", "closed"]
    lines = []
    for i in range(first, first + count):
        cents, day = (i * 7919) % 102_000 - 2_000, (i * 31) % 3650
        amount, st, note = f"{cents / 100:.2f}", status[i % 3], f"note {i % 997} for row {i}"
        draw = (i * 2654435761) % 2**32 / 2**32  # the same for a row in both results
        if changed and draw < CHANGED_SHARE:  # one or two cells of 5% of the rows
            which = i % 3
            amount = f"{(cents + 101) / 100:.2f}" if which != 1 else amount
            st = status[(i + 1) % 3] if which != 0 else st
            note = note + " (edited)" if which == 2 else note
        joined = f"{2015 + day // 365}-{1 + day % 12:02d}-{1 + day % 28:02d}"
        lines.append(f"C{i:09d},Name {i % 5003},user{i}@mail.example,{cities[i % 8]},{amount},{joined},{st},{note}\n")
    return lines


def make_inputs(size_mb: int, folder: Path) -> tuple[Path, Path]:
    """The old and the new result (about ``size_mb`` million bytes each), written once and reused."""
    folder.mkdir(parents=True, exist_ok=True)
    old, new = folder / f"old-{size_mb}mb.csv", folder / f"new-{size_mb}mb.csv"
    if old.exists() and new.exists():
        return old, new
    total = int(size_mb * MB / len("".join(_rows(0, 1000, False)).encode()) * 1000)
    gone = int(total * REMOVED_SHARE)  # the old result's first rows are removed, as many added after its last
    for path, changed in ((old, False), (new, True)):
        part = path.with_suffix(".partial")
        with part.open("w", encoding="utf-8", newline="") as f:
            f.write(",".join(COLUMNS) + "\n")
            start, stop = (gone, total + gone) if changed else (0, total)
            for first in range(start, stop, CHUNK_ROWS):
                f.writelines(_rows(first, min(CHUNK_ROWS, stop - first), changed))
        part.rename(path)
    return old, new


# --- the contenders (each in a child process of its own) ---------------------------------------------------


def _s3task(old: Path, new: Path, out: Path) -> dict[str, Any]:
    from s3task.compare import compare
    from s3task.compare.engine import MEMORY_MB
    from s3task.csvio import DEFAULT_BLOCK_SIZE, CsvReader

    def tables(path: Path) -> Any:
        with path.open("rb") as source:  # the project's reader, as s3task.results reads a result
            for table, _end in CsvReader(source, DEFAULT_BLOCK_SIZE, None).tables():
                yield table

    with (
        tempfile.TemporaryDirectory(prefix="s3task-compare-") as scratch,
        out.open("w", encoding="utf-8", newline="") as sink,
    ):
        summary = compare(tables(old), tables(new), [KEY], out=sink, memory_mb=MEMORY_MB, scratch=scratch)
    return {"summary": summary.as_dict(), "duckdb_mb": MEMORY_MB}


def _pandas(old: Path, new: Path, out: Path) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    a = pd.read_csv(old, dtype=str, keep_default_na=False)
    b = pd.read_csv(new, dtype=str, keep_default_na=False)
    m = a.merge(b, on=KEY, how="outer", indicator=True, suffixes=("_old", "_new"))
    del a, b
    cols = [c for c in COLUMNS if c != KEY]
    both = m["_merge"] == "both"
    diff = {c: both & (m[c + "_old"] != m[c + "_new"]) for c in cols}
    changed = np.logical_or.reduce([d.to_numpy() for d in diff.values()])
    rows = m[changed | ~both.to_numpy()]
    added, removed = rows["_merge"] == "right_only", rows["_merge"] == "left_only"
    frame = pd.DataFrame({"@@": np.select([added, removed], ["+++", "---"], "->"), KEY: rows[KEY].to_numpy()})
    for c in cols:
        o, n = rows[c + "_old"], rows[c + "_new"]
        frame[c] = np.where(diff[c][rows.index], o + "->" + n, np.where(removed, o, n))
    frame.to_csv(out, index=False)
    counts = {"added": int(added.sum()), "removed": int(removed.sum()), "changed": int(changed.sum())}
    return {"summary": {"rows": {**counts, "unchanged": int(both.sum()) - counts["changed"]}}}


def _duckdb(old: Path, new: Path, out: Path) -> dict[str, Any]:
    import duckdb

    def lit(path: Path) -> str:
        return "'" + str(path).replace("'", "''") + "'"

    cols = [c for c in COLUMNS if c != KEY]
    pairs = ", ".join(f"o.{c} AS o_{c}, n.{c} AS n_{c}" for c in cols)
    cells = ", ".join(
        f"CASE WHEN ok IS NULL THEN n_{c} WHEN nk IS NULL THEN o_{c} "
        f"WHEN o_{c} <> n_{c} THEN o_{c} || '->' || n_{c} ELSE n_{c} END AS {c}"
        for c in cols
    )
    differs = " OR ".join(f"o_{c} <> n_{c}" for c in cols)
    con = duckdb.connect(":memory:")
    con.execute(f"""
        COPY (
            WITH o AS (SELECT * FROM read_csv({lit(old)}, all_varchar = true, header = true)),
                 n AS (SELECT * FROM read_csv({lit(new)}, all_varchar = true, header = true)),
                 j AS (SELECT o.{KEY} AS ok, n.{KEY} AS nk, {pairs} FROM o FULL OUTER JOIN n ON o.{KEY} = n.{KEY})
            SELECT CASE WHEN ok IS NULL THEN '+++' WHEN nk IS NULL THEN '---' ELSE '->' END AS "@@",
                   coalesce(nk, ok) AS {KEY}, {cells}
            FROM j WHERE ok IS NULL OR nk IS NULL OR {differs}
        ) TO {lit(out)} (HEADER, DELIMITER ',')
    """)
    con.close()
    return {}


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child(which: str, old: Path, new: Path, out: Path) -> dict[str, Any]:
    """One contender, files to file, in this (fresh) process: its figures."""
    started, cpu = time.perf_counter(), time.process_time()
    facts = globals()[f"_{which}"](old, new, out)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {**facts, "seconds": seconds, "cpu": cpu, "peak_mb": _peak_mb()}


def measure(which: str, old: Path, new: Path, out: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", which, str(old), str(new), str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=7200, cwd=ROOT)
    if done.returncode:
        sys.exit(f"{which} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --- the outputs, cell for cell ---------------------------------------------------------------------------


class Mismatch(Exception):
    pass


def read_back(path: Path, protected: bool) -> Any:
    """A highlighter as text, sorted by mark and key; s3task's protection (a leading ') taken off."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from s3task.csvio.writing import unprotect

    names = ["@@", *COLUMNS]
    convert = pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.large_string()), strings_can_be_null=False)
    table = pacsv.read_csv(path, convert_options=convert)  # a UTF-8 BOM is skipped
    if table.column_names != names:
        raise Mismatch(f"{path.name}: columns {table.column_names}, expected {names}")
    if protected:
        table = pa.table([table.column(0), *(unprotect(c) for c in table.columns[1:])], names=names)
    return table.sort_by([("@@", "ascending"), (KEY, "ascending")]).combine_chunks()


def compare_outputs(outputs: dict[str, Path]) -> dict[str, int]:
    """The highlighters, equal cell for cell once sorted; raises Mismatch. The rows of each mark."""
    import pyarrow.compute as pc

    tables = {which: read_back(path, which == "s3task") for which, path in outputs.items()}
    names = list(tables)
    base = tables[names[0]]
    for other in names[1:]:
        table = tables[other]
        if table.num_rows != base.num_rows:
            raise Mismatch(f"{names[0]} has {base.num_rows:,} rows, {other} {table.num_rows:,}")
        for column in base.column_names:
            a, b = base.column(column), table.column(column)
            if not a.equals(b):
                at = pc.index(pc.not_equal(a, b), True).as_py()
                raise Mismatch(f"column {column!r}, sorted row {at + 1:,}: {names[0]} {a[at]!r}, {other} {b[at]!r}")
    marks = base.column("@@").to_pylist()
    return {"rows": base.num_rows, **{m: marks.count(m) for m in ("+++", "---", "->")}}


# --- the run ---------------------------------------------------------------------------------------------


def machine() -> str:
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = [
            line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if line.startswith("model name")
        ]
        model = found[0] if found else ""
    import duckdb
    import pandas
    import pyarrow

    return (
        f"{model or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"pandas {pandas.__version__}, pyarrow {pyarrow.__version__}, DuckDB {duckdb.__version__}"
    )


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def run_all(chosen: list[str], old: Path, new: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """Each contender once; their outputs compared (exit 1 on a difference)."""
    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        outputs = {c: Path(tmp) / f"{c}.csv" for c in chosen}
        for which in chosen:
            runs[which] = measure(which, old, new, outputs[which])
            run = runs[which]
            print(
                f"  {which}: {run['seconds']:.1f} s, CPU {run['cpu']:.1f} s, peak {run['peak_mb']:.0f} MB", flush=True
            )
        try:
            same = compare_outputs(outputs)
            counted = {w: r["summary"]["rows"] for w, r in runs.items() if "summary" in r}
            if len({json.dumps(c, sort_keys=True) for c in counted.values()}) > 1:
                raise Mismatch(f"the counts differ: {counted}")
        except Mismatch as e:
            print(f"\nMISMATCH: the outputs differ: {e}", file=sys.stderr)
            os.rename(tmp, tmp + ".kept")
            os.makedirs(tmp)
            sys.exit(f"(outputs kept in {tmp}.kept)")
    return runs, same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100, help="each result's size in millions of bytes (1024: 1 GB)")
    parser.add_argument("--only", default=",".join(CONTENDERS), help="the contenders to run, comma-separated")
    parser.add_argument("--report", action="store_true", help="only rewrite BENCHMARKS.md from the kept figures")
    parser.add_argument("--dry", action="store_true", help="measure and compare, write no figures")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        which, old, new, out = args.child
        print(json.dumps(child(which, Path(old), Path(new), Path(out))))
        return
    if args.report:
        replace_kept(ROOT / "BENCHMARKS.md", BEGIN, END, section(json.loads(RESULTS.read_text())))
        return
    chosen = [c for c in CONTENDERS if c in args.only.split(",")]
    started, load = time.perf_counter(), os.getloadavg()[0]
    old, new = make_inputs(args.size, ROOT / "bench" / "out" / "compare")
    print(f"inputs: {old.name}, {new.name} ({old.stat().st_size / MB:,.0f} MB each), "
          f"made or found in {time.perf_counter() - started:.1f} s")  # fmt: skip
    runs, same = run_all(chosen, old, new)
    print(f"outputs: identical, {same['rows']:,} rows ({same['->']:,} changed, {same['+++']:,} added, "
          f"{same['---']:,} removed)")  # fmt: skip
    dirty = git("status", "--porcelain", "--", "s3task/compare")
    result = {
        "size": args.size,
        "input_bytes": old.stat().st_size + new.stat().st_size,
        "rows": next(r["summary"]["rows"] for r in runs.values() if "summary" in r),
        "highlighted": same,
        "runs": runs,
        "machine": machine(),
        "load": f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end",
        "commit": git("rev-parse", "--short", "HEAD")
        + (" with uncommitted changes under s3task/compare" if dirty else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print("\n" + "\n".join(table(result)))
    if set(CONTENDERS) <= set(runs):
        print("\n".join(verdict(result)))
    if set(chosen) == set(CONTENDERS) and not args.dry:
        kept = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"sizes": {}}
        kept["sizes"][str(args.size)] = result
        RESULTS.write_text(json.dumps(kept, indent=2, ensure_ascii=False) + "\n")
        replace_kept(ROOT / "BENCHMARKS.md", BEGIN, END, section(kept))
        print(f"\nwritten: {RESULTS.relative_to(ROOT)}, BENCHMARKS.md")


# --- the report ------------------------------------------------------------------------------------------


def table(result: dict[str, Any]) -> list[str]:
    runs = result["runs"]
    pandas, duck = runs.get("pandas"), runs.get("duckdb")
    lines = [
        "| inputs | contender | wall s | CPU s | peak RSS | pandas ÷ this: wall | CPU | RSS "
        "| DuckDB ÷ this: wall | CPU | RSS |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for which, run in runs.items():
        ratios = []
        for base in (pandas, duck):
            ratios += [f"{base[k] / run[k]:.2f}×" for k in ("seconds", "cpu", "peak_mb")] if base else ["–"] * 3
        lines.append(
            f"| 2 × {result['input_bytes'] / 2 / MB:,.0f} MB | {which} | {run['seconds']:.1f} | {run['cpu']:.1f} "
            f"| {run['peak_mb']:,.0f} MB | {' | '.join(ratios)} |"
        )
    return lines


def verdict(result: dict[str, Any], gigabyte: dict[str, Any] | None = None) -> list[str]:
    """The goals, met or not; ``gigabyte``: the kept figures at 1 GB each, if measured."""
    runs = result["runs"]
    ours, pandas, duck = runs["s3task"], runs["pandas"], runs["duckdb"]
    speed, share = pandas["seconds"] / ours["seconds"], ours["peak_mb"] / pandas["peak_mb"]
    missed = [f"speed {speed:.2f}× < {SPEED_GOAL}×"] if speed < SPEED_GOAL else []
    missed += [f"memory {share:.2f}× > {MEMORY_SHARE_GOAL}×"] if share > MEMORY_SHARE_GOAL else []
    return [
        f"- s3task against pandas: **{speed:.2f}×** its speed (goal ≥ {SPEED_GOAL}×) with **{share:.2f}×** its peak "
        f"memory ({ours['peak_mb']:,.0f} MB against {pandas['peak_mb']:,.0f} MB; goal a fifth or less): "
        + ("both goals met" if not missed else f"**goal not met** ({'; '.join(missed)})")
        + f". By CPU time, which the machine's load moves less: {pandas['cpu'] / ours['cpu']:.2f}× pandas's.",
        f"- s3task against DuckDB's SQL: {duck['seconds'] / ours['seconds']:.2f}× its speed "
        f"({ours['seconds']:.1f} s against {duck['seconds']:.1f} s) with {ours['peak_mb'] / duck['peak_mb']:.2f}× "
        f"its peak memory ({ours['peak_mb']:,.0f} MB against {duck['peak_mb']:,.0f} MB; DuckDB's defaults).",
        f"- The issue's bound, peak RSS under 500 MB for two 1 GB results: s3task {ours['peak_mb']:,.0f} MB here "
        + (
            "(at 1 GB each)."
            if result["size"] >= 1000
            else f"at {result['size']} MB each; "
            + (
                f"{gigabyte['runs']['s3task']['peak_mb']:,.0f} MB at 1 GB each (below)."
                if gigabyte
                else "not yet measured at 1 GB."
            )
        ),
    ]


def section(kept: dict[str, Any]) -> str:
    """BENCHMARKS.md's section on comparing two results, from this script's figures (every size measured)."""
    lines = [
        BEGIN,
        "## Compare: two results by key against pandas and DuckDB",
        "",
        "Measured with `.venv/bin/python bench/compare_results.py --size MB`, not by `bench/run.py`. Two generated "
        "results of 8 text columns, keyed by a unique customer id; the new one has 5% of its rows changed (one or "
        "two cells), 0.5% of the old rows removed and as many added. Each contender runs in a fresh process, files "
        "to file; wall and CPU time from its first import to its output closed, peak RSS its `VmHWM`. `s3task` is "
        "`s3task.compare.compare` fed by the project's reader, each side spooled to a Parquet file in a scratch "
        "folder with a 64-bit hash of each row's cells, the rows paired by key and hash alone and only the rows "
        "whose hashes differ compared cell by cell, DuckDB held to the MB given under each size and spilling to "
        "that folder, two threads (one for the last, wide joins); `pandas` is "
        "the analyst's script (`read_csv(dtype=str)` of "
        'both, `merge(how="outer", indicator=True)`, the columns compared, `to_csv`); `duckdb` is one SQL '
        "statement with DuckDB's defaults (every core, 80% of the memory). All three write the same daff-style "
        "highlighter (changed, added and removed rows); the three were compared cell for cell and were identical "
        "(the benchmark fails otherwise). Wall seconds on a loaded machine move from run to run; CPU seconds and "
        "peak RSS much less.",
        "",
    ]
    for result in sorted(kept["sizes"].values(), key=lambda r: r["size"]):
        rows, marks = result["rows"], result["highlighted"]
        old_rows = rows["unchanged"] + rows["changed"] + rows["removed"]
        lines += [
            f"**2 × {result['input_bytes'] / 2 / MB:,.0f} MB** ({old_rows:,} "
            f"old rows; {marks['->']:,} changed, {marks['+++']:,} added, {marks['---']:,} removed), {result['date']}, "
            f"commit {result['commit']} (DuckDB {result['runs']['s3task'].get('duckdb_mb')} MB); {result['machine']}; "
            f"load average {result['load']}:",
            "",
            *table(result),
            "",
            *verdict(result, next((r for r in kept["sizes"].values() if r["size"] >= 1000), None)),
            "",
        ]
    lines += [
        "At 1 GB each, by hand: `.venv/bin/python bench/compare_results.py --size 1024` (the inputs are generated "
        "once into `bench/out/compare/`, about 2 GB; pandas needs several GB of memory).",
        END,
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
