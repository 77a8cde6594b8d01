"""Searching a whole result: what an analyst does today (pandas) against the engines the app could use.

    .venv/bin/python bench/explore.py [--mb 100] [--out bench/out/explore.json]

Makes a customer list of about ``--mb`` MB with unique ids (``C0000001`` …) and a numeric
``amount``, stores it as a worker writes an output (the pass-through task type through
``s3task.processing.run``: BOM, formula protection), then asks the same two questions of it in
a fresh child process per engine: a case-insensitive search of every column, sorted by
``amount`` descending (as numbers), the first page of 50 rows and the number of matching rows.
The first question is timed from nothing (the file on disk, as the app finds it in the store);
the second, with a different word, is the *repeat* (whatever the engine kept from the first
may help it). Each child reports its peak RSS (``VmHWM``) against its RSS after the imports.

Engines:

``pandas``
    Today: download the CSV, ``pandas.read_csv(dtype=str)``, ``str.contains(case=False)`` over
    every column, ``sort_values``. The repeat reuses the frame in memory (an analyst keeps it).
``arrow-stream``
    ``pyarrow.csv.open_csv`` batches, ``pyarrow.compute`` filters, top rows kept per batch.
``s3task``
    What the app ships (:func:`s3task.query.answer`): the project's reader, exact values, the
    same streaming top rows; nothing kept between questions.
``parquet``
    A Parquet copy made on the first question (streamed, text columns), then
    ``pyarrow.dataset`` scans of it.
``duckdb-csv`` / ``duckdb-parquet``
    DuckDB's ``read_csv`` (all text) over the CSV each time / over a Parquet copy made once.
    Skipped when duckdb is not installed.

Every figure in the JSON is a ratio to pandas as well as seconds, all measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = ("müller", "grace")  # first question, repeat: in about 1 row in 13 (a last name) / 1 in 16 (a first name)
PAGE = 50
ENGINES = ("pandas", "arrow-stream", "s3task", "parquet", "duckdb-csv", "duckdb-parquet")


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


FIRST = "Anna Ben Chloé Dmitri Emma Farid Grace Hiro Ines Jonas Kwame Lena Mateo Nora Omar Priya".split()  # noqa: SIM905
LAST = "Smith Müller García Rossi Dubois Kowalski Nguyen Okafor Silva Tanaka Jensen Novak Haddad".split()  # noqa: SIM905
#: Rows generated at a time (a 1 GB input is made in pieces, in bounded memory).
PIECE_ROWS = 500_000


def make_input(path: Path, mb: int) -> None:
    """About ``mb`` MB of customers: unique ids, names, email, city, a numeric amount, a note."""
    import numpy as np
    import pyarrow.csv as pacsv

    rows = mb * 1_000_000 // 76
    rng = np.random.default_rng(23)
    writer = None
    for start in range(0, rows, PIECE_ROWS):
        table = _piece(rng, start, min(PIECE_ROWS, rows - start))
        writer = writer or pacsv.CSVWriter(str(path), table.schema)
        writer.write_table(table)
    if writer is not None:
        writer.close()


def _piece(rng: Any, start: int, n: int) -> Any:
    import numpy as np
    import pyarrow as pa

    f, la = rng.integers(0, len(FIRST), n), rng.integers(0, len(LAST), n)
    return pa.table(
        {
            "customer_id": pa.array([f"C{i:07d}" for i in range(start + 1, start + n + 1)]),
            "name": pa.array([f"{FIRST[a]} {LAST[b]}" for a, b in zip(f, la, strict=True)]),
            "email": pa.array([f"{FIRST[a].lower()}.{start + i}@example.com" for i, a in enumerate(f)]),
            "city": pa.array(np.array(["Amsterdam", "Berlin", "Lisbon", "Oslo", "Rome"])[rng.integers(0, 5, n)]),
            "amount": pa.array([f"{v:.2f}" for v in np.abs(rng.normal(500, 400, n))]),
            "notes": pa.array(np.array(["ok", "called twice", "asked for invoice", ""])[rng.integers(0, 4, n)]),
        }
    )


def store_as_output(source: Path, target: Path) -> None:
    from s3task import processing

    with source.open("rb") as src, target.open("wb") as dst:
        processing.run("copy", {}, src, dst, lambda _c: None)


# --- the engines (each runs in a child: ask(word) returns (first page's ids, matching count)) ---------


def _pandas(path: Path) -> Any:
    import pandas as pd

    frame: list[pd.DataFrame] = []

    def ask(word: str) -> tuple[list[str], int]:
        if not frame:
            frame.append(pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig"))
        df = frame[0]
        mask = pd.Series(False, index=df.index)
        for col in df.columns:
            mask |= df[col].str.contains(word, case=False, regex=False)
        hits = df[mask]
        key = pd.to_numeric(hits["amount"], errors="coerce")
        top = hits.assign(_k=key).sort_values("_k", ascending=False, kind="stable").head(PAGE)
        return list(top["customer_id"]), int(mask.sum())

    return ask


def _top(batches: Any, word: str) -> tuple[list[str], int]:
    import pyarrow as pa
    import pyarrow.compute as pc

    kept, count = None, 0
    for batch in batches:
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        mask = None
        for col in table.columns:
            hit = pc.match_substring(col, word, ignore_case=True)
            mask = hit if mask is None else pc.or_(mask, hit)
        hits = table.filter(mask)
        count += hits.num_rows
        hits = hits.append_column("_k", pc.cast(hits.column("amount"), pa.float64()))
        both = hits if kept is None else pa.concat_tables([kept, hits])
        kept = both.take(pc.sort_indices(both, sort_keys=[("_k", "descending")])[:PAGE])
    return ([] if kept is None else kept.column("customer_id").to_pylist()), count


def _text_options(path: Path) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    names = pacsv.open_csv(path).schema.names
    return {
        "read_options": pacsv.ReadOptions(block_size=4 << 20),
        "parse_options": pacsv.ParseOptions(newlines_in_values=True),
        "convert_options": pacsv.ConvertOptions(
            column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False
        ),
    }


def _arrow_stream(path: Path) -> Any:
    import pyarrow.csv as pacsv

    options = _text_options(path)
    return lambda word: _top(pacsv.open_csv(path, **options), word)


def _s3task(path: Path) -> Any:
    import pyarrow.compute  # noqa: F401  (imported before the clock starts, as in the other engines)

    from s3task import csvio, query
    from s3task.exports import source  # noqa: F401

    csvio.CsvReader  # noqa: B018  (loads the reader's modules)

    def ask(word: str) -> tuple[list[str], int]:
        with path.open("rb") as raw:
            a = query.answer(raw, query.Query(search=word, sort="amount", descending=True, limit=PAGE))
        return [r["customer_id"] for r in a.rows], a.matching

    return ask


def _parquet(path: Path) -> Any:
    import pyarrow.csv as pacsv
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    copy = path.with_suffix(".parquet")

    def ask(word: str) -> tuple[list[str], int]:
        if not copy.exists():
            reader = pacsv.open_csv(path, **_text_options(path))
            with reader, pq.ParquetWriter(copy, reader.schema) as writer:
                for batch in reader:
                    writer.write_batch(batch)
        return _top(ds.dataset(copy).to_batches(), word)

    return ask


def _duckdb(path: Path, parquet: bool) -> Any:
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 2")
    copy = path.with_suffix(".duck.parquet")
    csv = f"read_csv('{path}', all_varchar = true, header = true)"

    def ask(word: str) -> tuple[list[str], int]:
        source = csv
        if parquet:
            if not copy.exists():
                con.execute(f"COPY (SELECT * FROM {csv}) TO '{copy}' (FORMAT parquet)")
            source = f"read_parquet('{copy}')"
        cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
        where = " OR ".join(f'"{c}" ILIKE ?' for c in cols)
        like = [f"%{word}%"] * len(cols)
        count = con.execute(f"SELECT count(*) FROM {source} WHERE {where}", like).fetchone()[0]
        ids = con.execute(
            f"SELECT customer_id FROM {source} WHERE {where} ORDER BY TRY_CAST(amount AS DOUBLE) DESC LIMIT {PAGE}",
            like,
        ).fetchall()
        return [r[0] for r in ids], int(count)

    return ask


def child(engine: str, path: Path) -> dict[str, Any]:
    makers = {
        "pandas": _pandas,
        "arrow-stream": _arrow_stream,
        "s3task": _s3task,
        "parquet": _parquet,
        "duckdb-csv": lambda p: _duckdb(p, False),
        "duckdb-parquet": lambda p: _duckdb(p, True),
    }
    ask = makers[engine](path)
    base = _rss_mb()
    times, answers = [], []
    for word in WORDS:
        started = time.perf_counter()
        answers.append(ask(word))
        times.append(time.perf_counter() - started)
    return {"first_s": times[0], "repeat_s": times[1], "base_mb": base, "peak_mb": _rss_mb(), "answers": answers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "explore.json")
    parser.add_argument("--rounds", type=int, default=3, help="best of this many, each in a fresh process")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return
    load_start = os.getloadavg()[0]
    try:
        import duckdb  # noqa: F401

        engines = ENGINES
    except ImportError:
        engines = ENGINES[:4]
    results: dict[str, Any] = {"mb": args.mb, "rounds": args.rounds, "engines": {}}
    with tempfile.TemporaryDirectory() as tmp:
        made, stored = Path(tmp) / "customers.csv", Path(tmp) / "output.csv"
        make_input(made, args.mb)
        store_as_output(made, stored)
        results["output_mb"] = stored.stat().st_size / 1e6
        for _ in range(args.rounds):  # interleaved, round by round: the machine's speed drifts
            for engine in engines:
                run = subprocess.run(
                    [sys.executable, __file__, "--child", engine, str(stored)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                _keep_best(results["engines"], engine, json.loads(run.stdout))
                for extra in Path(tmp).glob("*.parquet"):
                    extra.unlink()
    base = results["engines"]["pandas"]
    expected = base["answers"]
    for r in results["engines"].values():
        r["same_answers"] = r.pop("answers") == expected
        r["first_ratio"] = r["first_s"] / base["first_s"]
        r["repeat_ratio"] = r["repeat_s"] / base["repeat_s"]
    results["machine"] = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_start": load_start,
        "load_end": os.getloadavg()[0],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(table(results))


def _keep_best(kept: dict[str, Any], engine: str, new: dict[str, Any]) -> None:
    """The best time of each kind over the rounds, the highest peak memory."""
    old = kept.setdefault(engine, new)
    for name in ("first_s", "repeat_s"):
        old[name] = min(old[name], new[name])
    old["peak_mb"] = max(old["peak_mb"], new["peak_mb"])


def table(results: dict[str, Any]) -> str:
    lines = [
        f"Output: {results['output_mb']:,.0f} MB; best of {results['rounds']}; load average "
        f"{results['machine']['load_start']:.1f} → {results['machine']['load_end']:.1f}.",
        "",
        "| engine | first answer s (× pandas) | repeat s (× pandas) | RSS: imports → peak MB | same answers |",
        "|---|---|---|---|---|",
    ]
    for name, r in results["engines"].items():
        lines.append(
            f"| {name} | {r['first_s']:.2f} ({r['first_ratio']:.2f}×) | {r['repeat_s']:.2f} ({r['repeat_ratio']:.2f}×) "
            f"| {r['base_mb']:.0f} → {r['peak_mb']:.0f} | {'yes' if r['same_answers'] else 'no'} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
