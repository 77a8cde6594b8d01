"""The profile at a glance (issue 23.7): the per-column view opens on the column that tells most, and a
chart that shows part of a profile's columns says which part and of how many (labels: tests/browser)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest
from app_pages import run_as_worker
from engine import process
from streamlit.testing.v1 import AppTest
from support import csv_bytes

from s3task.csvio import MAX_COLUMNS
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService


def task_page_part(ctx, record) -> None:
    """An AppTest script: what the Task page calls for a completed profile."""
    from ui import profile_view

    profile_view.charts(ctx, record)


def overview_columns(at: AppTest) -> list[str]:
    """The columns the page's first chart (the overview) draws, in order."""
    for element in _charts(at.main):
        proto = element.proto
        frame = pa.ipc.open_stream(proto.datasets[0].data.data).read_pandas()
        return frame["column"].drop_duplicates().tolist()
    raise AssertionError("no chart")


def _charts(node):
    if getattr(node, "type", "") == "vega_lite_chart":
        yield node
    for child in getattr(node, "children", {}).values():
        yield from _charts(child)


def profiled(tmp_path: Path, rows: list[list[str]]) -> AppTest:
    service = TaskService(LocalStore(tmp_path / "store"), Layout())
    ann = Actor("ann")
    data = csv_bytes(rows)
    output, _, _ = process(data, "profile")
    task_id = service.submit_file(ann, "profiled", "profile", None, data).task_id
    run_as_worker(service, task_id, output=output)
    ctx = SimpleNamespace(service=service, actor=ann, settings=SimpleNamespace(store=str(tmp_path / "store")))
    return AppTest.from_function(task_page_part, args=(ctx, service.get(ann, task_id)), default_timeout=60).run()


def test_with_no_empty_cells_the_view_opens_on_a_text_column_whose_values_repeat(tmp_path: Path) -> None:
    rows = [["customer_id", "amount", "city", "segment"]]
    rows += [[f"C{i:05d}", str(i % 3 * 10), ["Oslo", "Rome", "Lima"][i % 3], "retail"] for i in range(60)]
    at = profiled(tmp_path, rows)
    assert not at.exception
    assert at.selectbox(key=next(s.key for s in at.selectbox)).value == 2  # city: not the id, not a number
    assert "60 filled · 0 empty · 3 different values" in [c.value for c in at.caption]


def test_the_view_opens_on_the_column_with_most_empty_cells(tmp_path: Path) -> None:
    rows = [["customer_id", "email", "phone"]]
    rows += [[f"C{i:05d}", "" if i % 9 == 0 else f"c{i}@x.org", "" if i % 4 == 0 else "555"] for i in range(60)]
    at = profiled(tmp_path, rows)
    assert at.selectbox(key=next(s.key for s in at.selectbox)).value == 2  # phone: 15 empty, email 7
    assert "45 filled · 15 empty · 1 different value" in [c.value for c in at.caption]


@pytest.mark.slow  # profiling 16,384 columns and drawing their page: about 20 s
def test_a_profile_of_16384_columns_shows_them_a_part_at_a_time_and_says_so(tmp_path: Path) -> None:
    header = [f"c{i}" for i in range(MAX_COLUMNS)]  # as many columns as a file may have
    at = profiled(tmp_path, [header, ["x"] * MAX_COLUMNS, ["y"] * MAX_COLUMNS])
    assert not at.exception
    assert len(at.dataframe[0].value) == MAX_COLUMNS  # every column read (10,000 were before)
    said = [c.value for c in at.caption]
    assert "The chart shows columns 1–200 of the 16,384 (pick other columns above)." in said
    assert overview_columns(at) == header[:200]
    part = next(s for s in at.selectbox if s.label == "Columns shown")
    part.set_value(16_200).run()
    assert overview_columns(at) == header[16_200:]
    assert "The chart shows columns 16,201–16,384 of the 16,384 (pick other columns above)." in [
        c.value for c in at.caption
    ]


def test_a_profile_read_in_part_says_the_rest_is_in_the_result_file() -> None:
    def page() -> None:
        import pandas as pd

        from ui import profile_view

        frame = pd.DataFrame({"column": [f"c{i}" for i in range(300)], "filled": "2", "empty": "0"})
        profile_view.show(profile_view.typed(frame), key="t", total=16_384)

    at = AppTest.from_function(page, default_timeout=20).run()
    assert not at.exception
    assert (
        "The chart shows columns 1–200 of the 16,384 (pick other columns above); only the first 300 are read "
        "here, the rest are in the result file." in [c.value for c in at.caption]
    )
