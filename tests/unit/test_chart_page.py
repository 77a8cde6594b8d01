"""The result view's *Chart a column* (issue 34 part 3), through Streamlit's AppTest: nothing is counted until a
column is picked; then the chart is made in the background, drawn with Altair, its counts said in words, and
kept in the store beside the result."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import app_pages
from app_pages import goto, run_as_worker, submitted, texts
from streamlit.testing.v1 import AppTest

from s3task import charts
from s3task.tasks import Actor, TaskService

ROWS = [f"{i / 2},2024-0{1 + i % 3}-0{1 + i % 9},{'Zoë' if i % 3 else '東京'}" for i in range(1, 401)]
# The pages' fixtures (tests/app_pages.py): a fresh local store, the embedded worker off, users told apart.
app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir
OUTPUT = ("price,day,city\n" + "\n".join(ROWS) + "\n,,\n").encode()


def task_page(at: AppTest, task_id: str) -> AppTest:
    at.query_params["id"] = task_id
    return goto(at, "pages/task.py")


def picker(at: AppTest, task_id: str):
    return at.selectbox(key=f"chart_column_{task_id}")


def vega_charts(node) -> list:
    """Every Vega-Lite chart (Altair's) under ``node``."""
    found = [node] if getattr(node, "type", "") == "vega_lite_chart" else []
    for child in getattr(node, "children", {}).values():
        found += vega_charts(child)
    return found


def until_drawn(at: AppTest, seconds: float = 20) -> AppTest:
    """Run the page again until the chart is drawn (it is made in the background; the page polls each second)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if vega_charts(at.main):
            return at
        time.sleep(0.2)
        at.run()
    raise AssertionError("no chart drawn: " + texts(at))


def test_a_picked_column_is_charted_over_every_row_with_its_counts_in_words(
    service: TaskService, app: Callable[..., AppTest]
) -> None:
    task_id = submitted(service, "ann", "Prices")
    run_as_worker(service, task_id, output=OUTPUT)
    at = task_page(app("ann"), task_id)
    assert not at.exception, at.exception
    box = picker(at, task_id)
    assert box.options == ["price", "day", "city"] and box.value is None
    assert "Pick a column to see how its values spread over every row" in texts(at)
    assert not vega_charts(at.main)  # nothing counted before a column is picked
    record = service.get(Actor("ann"), task_id)
    key = service.layout.chart_key(task_id, record.attempt_id, charts.digest("price"))
    assert not service.store.list_keys(key)

    at = until_drawn(picker(at, task_id).select("price").run())
    said = texts(at)
    assert "price: 401 rows, 1 empty, from 0.5 to 200" in said
    assert "Rows per range of 10: 0 to 10: 19; 10 to 20: 20;" in said
    spec = json.loads(vega_charts(at.main)[0].proto.spec)
    assert spec["mark"]["type"] == "bar" and spec["description"] == "price: 401 rows, 1 empty, from 0.5 to 200"
    assert charts.ColumnSummary.from_json(service.store.get(key).body).rows == 401  # kept beside the result

    at = until_drawn(picker(at, task_id).select("city").run())
    said = texts(at)
    assert "city: 401 rows, 1 empty, 2 different values" in said
    assert "Most common values: “Zoë” 267; “東京” 133." in said

    at = until_drawn(picker(at, task_id).select("day").run())
    assert "day: 401 rows, 1 empty, from 2024-01-01 to 2024-03-09" in texts(at)
    assert "Rows per month" not in texts(at) and "Rows per day (" in texts(at)


def test_someone_who_may_not_see_the_result_gets_no_chart(service: TaskService, app: Callable[..., AppTest]) -> None:
    task_id = submitted(service, "ann", "Prices")
    run_as_worker(service, task_id, output=OUTPUT)
    at = task_page(app("bob"), task_id)
    assert not at.exception, at.exception
    assert "Chart a column" not in texts(at)
    assert not [b for b in at.selectbox if b.key == f"chart_column_{task_id}"]


def test_long_values_alike_to_their_cut_keep_their_own_bars_and_the_page_says_why(
    service: TaskService, app: Callable[..., AppTest]
) -> None:
    head = "Ünïcode " + "x" * 92  # long values alike for their first 100 characters
    notes = [head + "first"] * 3 + [head + "second"] * 2 + ["short"] + [""]
    output = ("note,n\n" + "".join(f"{note},{i}\n" for i, note in enumerate(notes))).encode()
    task_id = submitted(service, "ann", "Notes")
    run_as_worker(service, task_id, output=output)
    at = until_drawn(picker(task_page(app("ann"), task_id), task_id).select("note").run())
    said, cut = texts(at), head[:79] + "…"
    assert "note: 7 rows, 1 empty, 3 different values" in said
    assert f"Most common values: “{cut}” 3; “{cut}” 2; “short” 1." in said
    assert "Values longer than 80 characters are shown cut (…), and counted by the whole value" in said
    assert "not surely the most common" not in said and "is an estimate" not in said  # counted exactly
    import pyarrow as pa

    drawn = pa.ipc.open_stream(vega_charts(at.main)[0].proto.datasets[0].data.data).read_all()
    assert drawn.column("label").to_pylist() == [cut, cut + " (2)", "short"]  # two bands, not one stacked bar
