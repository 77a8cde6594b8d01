"""The writer's work for each block is done for all the columns at once, or from the arrays pandas holds, and
gives what it gave column by column (issue 36, item 6: a block of a 16,384-column table cost the writer about
3 s, whatever its rows)."""

from __future__ import annotations

import io
import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from s3task.csvio import writing
from s3task.csvio.common import TEXT


def _by_series(frame: pd.DataFrame) -> pa.Table:
    """What the writer made of a frame before: each column through its Series."""
    return pa.table([writing._to_text(frame.iloc[:, i]) for i in range(frame.shape[1])], names=list(map(str, frame)))


FRAMES = {
    "numpy and objects": pd.DataFrame(
        {"a": ["x", None, "z"], "b": [1, 2, 3], "c": [1.5, np.nan, 2], "d": [True, False, None], "e": ["u", 1, None]}
    ),
    "pandas and Arrow dtypes": pd.DataFrame(
        {
            "a": pd.array(["x", None, "y"], dtype="string"),
            "b": pd.array(["x", None, "y"], dtype="string[pyarrow]"),
            "c": pd.array(["x", None, "q"], dtype=pd.ArrowDtype(pa.large_string())),
            "d": pd.array([1, None, 3], dtype=pd.ArrowDtype(pa.int64())),
            "e": pd.array([1, None, 3], dtype="Int64"),
            "f": pd.array([True, None, False], dtype="boolean"),
        }
    ),
    "from Arrow": pa.table({"x": pa.array(["a", None], TEXT), "y": pa.array(["b", "c"], pa.string())}).to_pandas(),
    "repeated names": pd.DataFrame([[1, "a"], [2, "b"]], columns=["k", "k"]),
    "categories and times": pd.DataFrame(
        {"c": pd.Categorical(["a", None, "b"]), "d": pd.to_datetime(["2020-01-01", None, "2021-01-01"])}
    ),
}


@pytest.mark.parametrize("pandas_iterator", [True, False], ids=["pandas-arrays", "items"])
@pytest.mark.parametrize("name", list(FRAMES))
def test_a_frame_becomes_the_text_table_it_became_column_by_column(
    name: str, pandas_iterator: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = FRAMES[name]
    expected = _by_series(frame)
    if not pandas_iterator:  # a pandas without its private iterator: items()
        monkeypatch.delattr(pd.DataFrame, "_iter_column_arrays")
    assert writing.to_text_table(frame).equals(expected)


@pytest.mark.parametrize("width", [3, 64, 500])
def test_protecting_a_wide_table_at_once_gives_each_column_s_own_protection(width: int) -> None:
    rng = random.Random(width)
    risky = ["=1+2", "-42", "+3.5", "-x", "'q", "", "@", "\tz", None, "-", "+1e5", "x=1"]
    for _ in range(20):
        height, columns = rng.randint(0, 30), []
        for _j in range(width):
            values = [rng.choice(risky) if rng.random() < 0.05 else rng.choice(["a", "", "12"]) for _ in range(height)]
            column = pa.array(values, TEXT)
            if height > 2 and rng.random() < 0.3:
                column = pa.chunked_array([column.slice(0, height // 2), column.slice(height // 2)])
            columns.append(column)
        table = pa.table(columns, names=[f"c{j}" for j in range(width)])
        each = [writing.protect(column) for column in table.columns]
        protected, count = writing.protect_table(table)
        assert count == sum(n for _column, n in each)
        assert protected.equals(pa.table([column for column, _n in each], schema=table.schema))


def test_a_block_is_written_under_the_header_s_names_as_before() -> None:
    """Renamed in one call: the names the header was written with (neutralised), the metadata pandas adds left
    out, and a column that is no large_string made one as ``pa.table(…, schema=…)`` does."""
    out = io.BytesIO()
    writer = writing.CsvWriter(out)
    frame = pd.DataFrame({"=a": ["1", "=x"], "b": ["2", "y"]})
    first, _counts = writer.prepare(frame)
    assert first is not None and first.column_names == ["'=a", "b"] and first.schema.metadata is None
    writer.write_table(first)
    second, _counts = writer.prepare(pa.table({"=a": pa.array(["3"], pa.string()), "b": pa.array(["4"], TEXT)}))
    assert second is not None and second.schema == first.schema
    writer.write_table(second)
    writer.close()
    assert out.getvalue().decode("utf-8-sig").splitlines() == ['"\'=a","b"', '"1","2"', '"\'=x","y"', '"3","4"']
