"""Charts over every row (issue 34 part 3): one column's summary, counted from the result's Parquet copy.

Each result is the worker engine's own output (``s3task.testing.run_task_type``), stored and completed on a
local store, and asked through the service's charts part as the page asks it.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from s3task import charts, lifecycle
from s3task.charts import text
from s3task.errors import AccessDenied, InvalidInput, NotFound
from s3task.layout import Layout
from s3task.record import TaskRecord
from s3task.records import update_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.tasks.charts import Charts
from s3task.testing import run_task_type

ADA = Actor("ada")


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


def completed(service: TaskService, data: bytes) -> TaskRecord:
    """A task whose stored output is what the worker's engine writes for ``data``, completed as a worker does."""
    task_id = service.create(ADA, "Chart me", "copy").record.task_id
    service.upload_input(ADA, task_id, data)
    service.submit(ADA, task_id)
    result = run_task_type("copy", data)
    holder = {}

    def claim(r: TaskRecord, now) -> TaskRecord:
        new, holder["lease"] = lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)
        return new

    update_record(service.store, service.layout, task_id, claim)
    key = service.layout.output_key(task_id, 1)
    service.store.put(key, result.output, PutMode.CREATE, content_type="text/csv")
    counts = result.progress
    return update_record(
        service.store,
        service.layout,
        task_id,
        lambda r, now: lifecycle.complete(
            r, now, lease=holder["lease"], output_path=key, progress=counts, row_count=counts.row_count
        ),
    )


def summary_of(service: TaskService, data: bytes, column: str) -> charts.ColumnSummary:
    record = completed(service, data)
    return Charts(service).column_summary(ADA, record.task_id, column)


def csv(header: str, values: list[str]) -> bytes:
    return (header + "\n" + "".join(v + "\n" for v in values)).encode("utf-8")


def column(name: str, values: list[str]) -> bytes:
    """A result of the column ``name`` and a row number (a one-column CSV's empty cell would be a blank line)."""
    return csv(f"{name},row", [f"{v},{i}" for i, v in enumerate(values, 1)])


def test_a_number_column_with_empty_cells_is_a_histogram_that_counts_them(service) -> None:
    values = [str(i / 2) for i in range(1, 2401)] + [""] * 31
    found = summary_of(service, csv("price,id", [f"{v},{i}" for i, v in enumerate(values)]), "price")
    assert (found.kind, found.type, found.rows, found.empty) == ("number", "double", 2431, 31)
    assert (found.low, found.high) == (0.5, 1200.0)
    assert sum(bar.count for bar in found.bars) == 2400
    assert found.unit == "100" and found.bars[0].start == 0 and found.bars[-1].end == 1200 and len(found.bars) == 12
    assert charts.describe(found) == "price: 2,431 rows, 31 empty, from 0.5 to 1,200"
    assert charts.bars_in_words(found).startswith("Rows per range of 100: 0 to 100: 199; 100 to 200: 200;")
    assert found.bars[-1].count == 201  # 1,100 to 1,200, both ends


def test_a_column_with_every_cell_empty_says_so_and_has_no_bars(service) -> None:
    found = summary_of(service, csv("name,note", ["ann,", "bob,", "cy,"]), "note")
    assert (found.kind, found.rows, found.empty, found.bars, found.others) == ("text", 3, 3, (), 0)
    assert charts.describe(found) == "note: 3 rows, 3 empty"
    assert charts.bars_in_words(found) == "Every cell of this column is empty."


def test_an_empty_result_has_no_rows_to_count(service) -> None:
    found = summary_of(service, b"price,name\n", "price")
    assert (found.rows, found.empty, found.bars) == (0, 0, ())
    assert charts.describe(found) == "price: 0 rows, 0 empty"


def test_unicode_text_keeps_its_values_and_counts_the_others(service) -> None:
    cities = ["東京"] * 5 + ["Zoë"] * 4 + ["🙂 smile"] * 3 + [f"town {i}" for i in range(20)] + ["", ""]
    found = summary_of(service, column("city", cities), "city")
    assert (found.kind, found.rows, found.empty, found.distinct, found.approximate) == ("text", 34, 2, 23, False)
    assert [(bar.label, bar.count) for bar in found.bars[:3]] == [("東京", 5), ("Zoë", 4), ("🙂 smile", 3)]
    assert len(found.bars) == charts.TOP_VALUES and found.others == 32 - 12 - 7
    assert charts.describe(found) == "city: 34 rows, 2 empty, 23 different values"
    assert charts.bars_in_words(found).startswith("Most common values: “東京” 5; “Zoë” 4; “🙂 smile” 3;")
    assert charts.ColumnSummary.from_json(found.to_json()) == found  # kept as JSON, read back the same


def test_one_and_one_point_zero_are_the_same_number(service) -> None:
    found = summary_of(service, column("n", ["1.0", "1", "1.0", "2.5", ""]), "n")
    assert (found.kind, found.type, found.low, found.high, found.empty) == ("number", "double", 1.0, 2.5, 1)
    assert found.bars[0].count == 3 and sum(bar.count for bar in found.bars) == 4
    assert charts.describe(found) == "n: 5 rows, 1 empty, from 1 to 2.5"


def test_a_column_of_one_value_is_one_bar(service) -> None:
    found = summary_of(service, csv("n,code", [f"42,00{i % 3}" for i in range(500)]), "n")
    assert (found.kind, found.type, len(found.bars), found.bars[0].count) == ("number", "int64", 1, 500)
    assert charts.describe(found) == "n: 500 rows, 0 empty, all 42"
    code = summary_of(service, csv("n,code", [f"42,00{i % 3}" for i in range(500)]), "code")
    assert code.kind == "text"  # "007" is a code, not a number (the Parquet copy's rule)
    assert [(b.label, b.count) for b in code.bars] == [("000", 167), ("001", 167), ("002", 166)]


def test_dates_are_counted_per_day_month_or_year_as_their_span_asks(service) -> None:
    days = summary_of(service, column("d", ["2024-03-01", "2024-03-01", "2024-03-03", ""]), "d")
    assert (days.kind, days.type, days.unit, days.low, days.high) == (
        "date",
        "date32[day]",
        "day",
        "2024-03-01",
        "2024-03-03",
    )
    assert [(b.label, b.count) for b in days.bars] == [("2024-03-01", 2), ("2024-03-02", 0), ("2024-03-03", 1)]
    assert charts.describe(days) == "d: 4 rows, 1 empty, from 2024-03-01 to 2024-03-03"
    months = summary_of(service, column("d", [f"2023-{m:02d}-15" for m in range(1, 13)] + ["2024-06-30"]), "d")
    assert months.unit == "month" and len(months.bars) == 18 and months.bars[0].label == "2023-01"
    years = summary_of(service, column("d", ["1950-01-01", "1999-12-31", "2024-06-01"]), "d")
    assert years.unit == "5 years" and years.bars[0].label == "1950–1954" and years.bars[-1].label == "2020–2024"
    stamps = summary_of(service, column("t", ["2024-01-01 09:30:00", "2024-01-01T23:59", "2024-01-02 00:00:00"]), "t")
    assert (stamps.type, [b.count for b in stamps.bars]) == ("timestamp[us]", [2, 1])  # a date-time counts on its day


def test_many_different_values_are_held_in_bounded_memory_and_estimated(service, monkeypatch) -> None:
    monkeypatch.setattr(text, "EXACT_VALUES", 1_000)
    ids = [f"C{i:06d}" for i in range(20_000)] + ["C000001"] * 50
    found = summary_of(service, column("id", ids), "id")
    assert found.approximate and abs((found.distinct or 0) - 20_000) < 20_000 * 0.03
    assert found.bars[0] == charts.Bar("C000001", 51)
    assert found.others == 20_050 - sum(b.count for b in found.bars)
    assert charts.describe(found).startswith("id: 20,050 rows, 0 empty, about ")


def test_long_values_are_counted_whole_and_shown_cut(service) -> None:
    head = "Ω" + "x" * 99  # 100 characters that every long value begins with
    values = [head + "A" * 8_000] * 4 + [head + "B" * 8_000] * 3 + [head + "A" * 7_999 + "Z"] * 2 + ["short"] * 5
    found = summary_of(service, column("note", [*values, ""]), "note")
    cut = head[:79] + "…"
    assert [(bar.label, bar.count) for bar in found.bars] == [("short", 5), (cut, 4), (cut, 3), (cut, 2)]
    assert (found.rows, found.empty, found.distinct, found.others, found.approximate) == (15, 1, 4, 0, False)
    assert charts.bars_in_words(found) == f"Most common values: “short” 5; “{cut}” 4; “{cut}” 3; “{cut}” 2."


def test_a_key_is_bounded_whatever_the_value_and_never_a_shorter_values() -> None:
    import pyarrow as pa

    values = ["", "a" * 80, "🙂" * 80, "a" * 81, "🙂" * 10_000, "🙂" * 9_999 + "x", "短" * 81]
    made = text.keys(pa.array(values, pa.large_string())).to_pylist()
    assert made[:3] == values[:3]  # up to 80 characters, the value itself
    for key, value in zip(made[3:], values[3:], strict=True):  # longer: 79 characters, "…" and 16 hex digits
        assert (len(key), key[79], key[:79]) == (96, "…", value[:79])
    assert len(set(made)) == len(values)  # values that differ after their first 79 characters keep apart
    assert max(len(key.encode()) for key in made) <= 4 * charts.SHOW_CHARS + 19
    again = text.keys(pa.array(values, pa.large_string())).to_pylist()
    assert made == again  # the same in every run (a stable hash), so counts from two passes meet


def test_a_keys_hash_is_pandas_hash_of_the_text_as_it_was() -> None:
    # The hash is of each value's UTF-8 bytes, handed to pandas as bytes (a third of the time): the same as pandas'
    # hash of the text, so keys, and the estimate of different values, are as they were.
    import pandas as pd
    import pyarrow as pa

    values = pa.array(["", "a", "Zoë 🙂", "短" * 81, "x" * 5_000], pa.large_string())
    as_text = pd.util.hash_array(np.array(values.to_pylist(), dtype=object), categorize=False)
    assert text._hash64(values).tolist() == as_text.tolist()


def true_top(values: list[str], n: int = 10) -> list[tuple[str, int]]:
    counts = Counter(v for v in values if v)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def test_the_true_top_ten_is_found_with_exact_counts_among_many_different_values(service, monkeypatch) -> None:
    monkeypatch.setattr(text, "EXACT_VALUES", 1_000)  # the counter goes past exact early, and often
    monkeypatch.setattr(text, "BATCH_BYTES", 16 << 10)  # many small batches: the counts merge across them
    heavy = {f"top {i} 東京": 300 - 10 * i for i in range(7)}
    long_a, long_b = "L" * 500 + "a", "L" * 500 + "b"  # long, alike for 500 characters: counted apart
    heavy |= {long_a: 235, long_b: 225, "Zoë 🙂": 215}
    rows = [v for v, n in heavy.items() for _ in range(n)] + [f"one {i:05d}" for i in range(20_000)] + [""] * 77
    random.Random(34).shuffle(rows)
    found = summary_of(service, column("v", rows), "v")
    cut = "L" * 79 + "…"
    want = [(v if len(v) <= 80 else cut, n) for v, n in true_top(rows)]
    assert [(bar.label, bar.count) for bar in found.bars] == want
    assert (found.rows, found.empty, found.approximate, found.unseen_at_most) == (len(rows), 77, True, 0)
    assert found.others == len(rows) - 77 - sum(heavy.values())
    assert abs((found.distinct or 0) - 20_010) < 20_010 * 0.03
    assert charts.describe(found).startswith(f"v: {len(rows):,} rows, 77 empty, about ")
    assert charts.bars_in_words(found).startswith("Most common values: “top 0 東京” 300; “top 1 東京” 290;")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_values_too_even_to_rank_in_bounded_memory_are_said_to_be_only_found(service, monkeypatch, seed) -> None:
    monkeypatch.setattr(text, "EXACT_VALUES", 200)
    monkeypatch.setattr(text, "BATCH_BYTES", 4 << 10)
    rnd = random.Random(seed)
    rows = [f"v{rnd.randrange(3_000)}" for _ in range(12_000)] + ["spread"] * 9  # no value far above the rest
    rnd.shuffle(rows)
    truth = Counter(rows)
    found = summary_of(service, column("v", rows), "v")
    assert [truth[bar.label] for bar in found.bars] == [bar.count for bar in found.bars]  # counts shown are exact
    assert found.others == len(rows) - sum(bar.count for bar in found.bars)
    shown = {bar.label for bar in found.bars}
    missed = [n for v, n in truth.items() if v not in shown]
    assert max(missed) > found.bars[-1].count  # here a value without a bar is more common than the last bar…
    assert max(missed) <= found.unseen_at_most  # …and the words say how common it may be
    said = f"Most common values found (a value not shown may have up to {found.unseen_at_most:,} rows): "
    assert charts.bars_in_words(found).startswith(said)


MEASURE = """
import json, sys
import numpy, pandas, pyarrow.compute, pyarrow.parquet  # the imports are the baseline, not the counting
import s3task.handlers.profile
from s3task import charts

def hwm_kb():
    with open("/proc/self/status") as f:
        return int(next(line.split()[1] for line in f if line.startswith("VmHWM:")))

base = hwm_kb()
with open(sys.argv[1], "rb") as f:
    found = charts.summarise(f, "text")
peak = hwm_kb()  # not ru_maxrss: Linux keeps in it the peak of the image before exec, here the pytest worker's
said = {"summary": charts.describe(found), "top": found.bars[0].count, "base_mb": base / 1024, "peak_mb": peak / 1024}
print(json.dumps({"growth_mb": (peak - base) / 1024, **said}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_summarising_long_different_values_stays_in_bounded_memory(tmp_path) -> None:
    """20,000 different values of 8 KB (160 MB of text, as the Parquet copy writes it: zstd, a row group per 4 MB
    of output) summarised in a child process, whose peak RSS (``VmHWM``) above its peak after the imports is
    measured. Counting the values themselves took about 900 MB here, the bounded keys about 85 MB; the bound
    leaves room for a busy machine's allocator."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "long.parquet"
    schema = pa.schema([("text", pa.string()), ("row", pa.int64())])
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for start in range(0, 20_000, 500):
            texts = [f"{i:05d}" + os.urandom(4_094).hex() for i in range(start, start + 500)]
            writer.write_table(pa.table([texts, list(range(start, start + 500))], schema=schema))
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(path)], capture_output=True, text=True, env=env, cwd=root, check=True
    )
    measured = json.loads(done.stdout)
    assert measured["summary"] == "text: 20,000 rows, 0 empty, 20,000 different values"
    assert measured["top"] == 1
    assert measured["growth_mb"] < 200, measured


def test_the_summary_is_made_once_and_kept_beside_the_result(service) -> None:
    record = completed(service, column("n", [str(i) for i in range(100)]))
    first = Charts(service).column_summary(ADA, record.task_id, "n")
    key = service.layout.chart_key(record.task_id, record.attempt_id, charts.digest("n"))
    assert key == f"{service.layout.task_prefix(record.task_id)}output-attempt-1.chart-{charts.digest('n')}.json"
    assert charts.ColumnSummary.from_json(service.store.get(key).body) == first
    parquet = service.layout.export_key(record.task_id, record.attempt_id, "parquet")
    service.store.delete(parquet)  # the next view reads the summary: it needs no copy
    again = Charts(service)  # another replica, say
    assert again.chart_state(ADA, record.task_id, "n").summary == first
    assert again.column_summary(ADA, record.task_id, "n") == first
    with pytest.raises(NotFound):  # and none was made again
        service.store.head(parquet)


def test_the_chart_is_for_whoever_may_read_the_result_and_of_its_own_columns(service) -> None:
    record = completed(service, csv("n,city", ["1,Paris"]))
    made = Charts(service)
    assert made.chart_columns(ADA, record.task_id) == ["n", "city"]
    with pytest.raises(AccessDenied):
        made.chart_state(Actor("eve"), record.task_id, "n")
    with pytest.raises(InvalidInput):
        made.column_summary(ADA, record.task_id, "nope")
    assert made.chart_state(ADA, record.task_id, "nope").kind == "failed"


def test_a_stream_that_cannot_seek_is_read_too(service) -> None:
    record = completed(service, column("n", [str(i) for i in range(10)]))
    service.ensure_output(ADA, record.task_id, "parquet")
    with service.open_output(ADA, record.task_id, "parquet") as f:
        body = f.read()

    class Once(io.RawIOBase):
        def __init__(self) -> None:
            self.inner = io.BytesIO(body)

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:  # type: ignore[override]
            data = self.inner.read(len(b))
            b[: len(data)] = data
            return len(data)

    assert charts.summarise(Once(), "n").bars[0].count == 1  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("low", "high", "whole", "width", "first"),
    [(0.5, 1200, False, 100, 0), (1, 10, True, 1, 1), (-3, 1e3, False, 100, -100), (0.001, 0.002, False, 5e-5, 0.001)],
)
def test_number_bars_have_a_round_width(low, high, whole, width, first) -> None:
    bins = charts.number_bins(low, high, whole=whole)
    assert bins.width == pytest.approx(width) and bins.edges()[0] == pytest.approx(first)
    assert bins.count <= 2 * 20 + 1 and bins.edges()[-1] >= high
    assert list(bins.index(np.array([low, high]))) == [0, bins.count - 1]


def test_date_bars_follow_the_span() -> None:
    day = np.datetime64("2024-01-01")
    assert charts.date_bins(day, day).unit == "day"
    assert charts.date_bins(day, np.datetime64("2024-03-31")).unit == "day"
    assert charts.date_bins(day, np.datetime64("2024-04-05")).unit == "month"
    bins = charts.date_bins(np.datetime64("0001-01-01"), np.datetime64("9999-12-31"))
    assert bins.unit == "year" and bins.count <= 41


def test_columns_named_with_a_dot_or_as_a_formula_are_charted_by_their_own_names(service) -> None:
    record = completed(service, csv("a.b,=total,n", ["1,x,5", "2,y,6", ",x,7"]))
    made = Charts(service)
    assert made.chart_columns(ADA, record.task_id) == ["a.b", "=total", "n"]  # as the task wrote them, no '
    dotted = made.column_summary(ADA, record.task_id, "a.b")
    assert (dotted.kind, dotted.rows, dotted.empty, dotted.low, dotted.high) == ("number", 3, 1, 1, 2)
    formula = made.column_summary(ADA, record.task_id, "=total")
    assert [(bar.label, bar.count) for bar in formula.bars] == [("x", 2), ("y", 1)]
