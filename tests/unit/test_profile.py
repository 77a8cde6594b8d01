"""The profile an analyst reads: value and count columns, honest distinct counts, plain numbers, the charts.

The handler runs through the real processing engine (``tests/engine.process``);
the charts are drawn by ``ui/profile_view.py`` in Streamlit's AppTest, and their data
is read back from the chart elements the page sends to the browser.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest
from support import csv_bytes

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the app's helpers (ui/) live next to app.py

from engine import process  # noqa: E402

from s3task.handlers import profile  # noqa: E402
from ui import profile_view  # noqa: E402


def profile_of(rows: list[list[str]], **kwargs: int) -> tuple[bytes, pd.DataFrame]:
    output, _, _ = process(csv_bytes(rows), "profile", **kwargs)
    return output, pd.read_csv(io.BytesIO(output), dtype=str, keep_default_na=False).set_index("column")


def shop_rows() -> list[list[str]]:
    """1,500 'ok', 1,200 'broken@', 3 'late' and 3 empty statuses; amounts with a decimal comma."""
    statuses = ["ok"] * 1500 + ["broken@"] * 1200 + ["late"] * 3 + [""] * 3
    amounts = ["1,5", "2"] * (len(statuses) // 2)
    return [["status", "amount"], *([s, a] for s, a in zip(statuses, amounts, strict=True))]


def test_top_values_are_value_and_count_columns() -> None:
    _, out = profile_of(shop_rows(), block_size=4096)
    status = out.loc["status"]
    assert [status[f"top_{i}_value"] for i in (1, 2, 3, 4)] == ["ok", "broken@", "late", ""]
    assert [status[f"top_{i}_count"] for i in (1, 2, 3, 4)] == ["1500", "1200", "3", ""]
    assert (status["filled"], status["empty"], status["distinct"]) == ("2703", "3", "3")
    assert status["distinct_is_estimate"] == "false" and status["note"] == ""
    amount = out.loc["amount"]
    assert [amount["top_1_value"], amount["top_1_count"], amount["top_2_value"], amount["top_2_count"]] == [
        "1,5",
        "1353",
        "2",
        "1353",
    ]


def test_the_csv_keeps_plain_numbers_that_load_as_numbers() -> None:
    output, _ = profile_of(shop_rows())
    text = output.decode("utf-8-sig")
    assert "1500" in text and "1,500" not in text and "2,703" not in text
    loaded = pd.read_csv(io.BytesIO(output)).set_index("column")  # what an analyst types
    for name in ("filled", "empty", "distinct", "shortest", "longest", "top_1_count", "top_2_count"):
        assert pd.api.types.is_integer_dtype(loaded[name]), name
    assert pd.api.types.is_numeric_dtype(loaded["top_3_count"])  # with a gap (amount has 2 values): floats, NaN
    assert loaded.loc["status", "top_1_count"] == 1500
    assert loaded["distinct_is_estimate"].tolist() == [False, False]


def test_an_estimated_distinct_count_is_flagged_and_never_above_filled(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [f"id{i}" for i in range(3000)]
    # The sketch alone overshoots on these 3,000 different values (a count never could).
    sketch = profile.HyperLogLog()
    sketch.add(profile._hashes(pa.array(ids, pa.large_string())))
    assert sketch.estimate() > len(ids)
    # A small budget forces the estimate, honestly: 100 values counted exactly per column.
    monkeypatch.setattr(profile, "EXACT_BUDGET", 100)
    monkeypatch.setattr(profile, "MIN_EXACT", 100)
    rows = [["id", "kind"], *([v, "a" if i % 3 else f"k{i % 900}"] for i, v in enumerate(ids))]
    _, out = profile_of(rows, block_size=2048)
    assert out.loc["id", "distinct"] == "3000" and out.loc["id", "filled"] == "3000"
    assert out.loc["id", "distinct_is_estimate"] == "true" and "estimate" in out.loc["id", "note"]
    kind = out.loc["kind"]
    assert kind["distinct_is_estimate"] == "true" and kind["top_1_value"] == "a" and kind["top_1_count"] == "2000"
    assert 0.95 * 301 <= int(kind["distinct"]) <= 1.05 * 301


def test_exact_counts_are_not_flagged_and_distinct_is_at_most_filled() -> None:
    rows = [["a", "b"], *([str(i % 7), "" if i % 2 else "x"] for i in range(500))]
    _, out = profile_of(rows, block_size=256)
    assert out["distinct_is_estimate"].tolist() == ["false", "false"]
    assert (out.loc["a", "distinct"], out.loc["b", "distinct"], out.loc["b", "filled"]) == ("7", "1", "250")


# --- the charts ------------------------------------------------------------------------------


def test_chart_data_per_column() -> None:
    output, _ = profile_of(shop_rows())
    typed = profile_view.typed(pd.read_csv(io.BytesIO(output), dtype=str, keep_default_na=False))
    assert typed["filled"].tolist() == [2703, 2706] and typed["distinct_is_estimate"].tolist() == [False, False]
    fill = profile_view.fill_data(typed)
    assert fill.to_dict("list") == {"column": ["status", "amount"], "Filled": [2703, 2706], "Empty": [3, 0]}
    top = profile_view.top_data(typed.iloc[0])
    assert top.to_dict("list") == {"value": ["ok", "broken@", "late"], "count": [1500, 1200, 3]}


def charts_page(csv_text: str) -> None:
    """An AppTest script: the profile view exactly as the Task page draws it."""
    import io

    import pandas as pd

    from ui import profile_view

    frame = pd.read_csv(io.StringIO(csv_text), dtype=str, keep_default_na=False)
    profile_view.show(profile_view.typed(frame), key="t1")


def chart_frames(at: AppTest) -> list[tuple[dict, pd.DataFrame]]:
    """Every chart on the page: its Vega-Lite spec and the data it draws."""
    found = []
    for element in _walk(at.main):
        if getattr(element, "type", "") == "vega_lite_chart":
            proto = element.proto
            (dataset,) = proto.datasets
            found.append((json.loads(proto.spec), pa.ipc.open_stream(dataset.data.data).read_pandas()))
    return found


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def test_the_page_draws_filled_empty_for_every_column_and_top_values_for_the_one_picked() -> None:
    header = ["status", "amount", *(f"extra_{i}" for i in range(28))]  # a 30-column file
    rows = [header, *([r[0], r[1], *(["v"] * 28)] for r in shop_rows()[1:])]
    output, _ = profile_of(rows)
    at = AppTest.from_function(charts_page, args=(output.decode("utf-8"),), default_timeout=20).run()
    assert not at.exception
    overview, fill, top = chart_frames(at)
    # Streamlit sends a chart of several series in long form: one row per column and series.
    cells = overview[1].set_index(["column", "color -- streamlit-generated"])["value -- streamlit-generated"]
    assert overview[0]["encoding"]["y"]["field"] == "column" and overview[0]["encoding"]["x"]["stack"] is True
    assert cells.unstack().loc[header, ["Filled", "Empty"]].values.tolist() == [[2703, 3], [2706, 0]] + [[2706, 0]] * 28
    assert cells.index.get_level_values(0)[:30].tolist() == header  # in file order, not sorted
    assert fill[1]["count"].tolist() == [2703, 3]
    assert top[1].to_dict("list") == {"value": ["ok", "broken@", "late"], "count": [1500, 1200, 3]}
    # The summary table shows numbers (thousands separators are the table's "localized" format).
    table = at.dataframe[0].value
    assert table.loc[0, "filled"] == 2703 and pd.api.types.is_integer_dtype(table["filled"])
    # Picking another column redraws its charts.
    picker = at.selectbox(key="profile_column_t1")
    assert len(picker.options) == 30
    picker.set_value(1).run()
    _, fill, top = chart_frames(at)
    assert fill[1]["count"].tolist() == [2706, 0]
    assert top[1].to_dict("list") == {"value": ["1,5", "2"], "count": [1353, 1353]}
    assert "2,706 filled · 0 empty · 2 different values" in [c.value for c in at.caption]


def task_page_part(ctx, record) -> None:
    """An AppTest script: what the Task page calls for a completed task."""
    from ui import profile_view

    profile_view.charts(ctx, record)


def test_the_task_page_reads_the_whole_profile_of_a_completed_task(tmp_path: Path) -> None:
    from app_pages import run_as_worker

    from s3task.layout import Layout
    from s3task.store.local import LocalStore
    from s3task.tasks import Actor, TaskService

    service = TaskService(LocalStore(tmp_path / "store"), Layout())
    header = [f"c{i}" for i in range(120)]  # more columns than the generic 100-row preview shows
    data = csv_bytes([header, *([f"-{r % 3}0%"] + ["x"] * 119 for r in range(9))])
    output, _, _ = process(data, "profile")
    assert b"'-00%" in output  # formula protection in the file
    ann, bob = Actor("ann"), Actor("bob")
    task_id = service.submit_file(ann, "wide file", "profile", None, data).task_id
    run_as_worker(service, task_id, output=output)
    record = service.get(ann, task_id)

    def page(actor: Actor, record) -> AppTest:
        ctx = SimpleNamespace(service=service, actor=actor, settings=SimpleNamespace(store=str(tmp_path / "store")))
        return AppTest.from_function(task_page_part, args=(ctx, record), default_timeout=20).run()

    at = page(ann, record)
    assert not at.exception
    overview, _, top = chart_frames(at)
    assert overview[1]["column"].drop_duplicates().tolist() == header
    assert len(at.dataframe[0].value) == 120
    # The values as they are: the file has "'-00%" (a spreadsheet would compute "-00%"), the chart "-00%".
    assert top[1].to_dict("list") == {"value": ["-00%", "-10%", "-20%"], "count": [3, 3, 3]}
    assert not chart_frames(page(bob, record)) and not page(bob, record).dataframe  # not bob's task
    copy_id = service.submit_file(ann, "copied", "copy", None, data).task_id
    run_as_worker(service, copy_id, output=b"a,error\n1,\n")
    assert not chart_frames(page(ann, service.get(ann, copy_id)))  # only a profile has a profile view


def test_a_profile_made_before_the_value_and_count_columns_still_shows() -> None:
    legacy = "column,position,filled,empty,distinct,shortest,longest,top_1,note\ncity,1,7,0,4,4,5,Paris (3),\n"
    at = AppTest.from_function(charts_page, args=(legacy,), default_timeout=20).run()
    assert not at.exception
    (overview,) = [frame for _, frame in chart_frames(at)][:1]
    assert overview["value -- streamlit-generated"].tolist() == [7, 0]
    assert "made by an earlier version" in " ".join(c.value for c in at.caption)
