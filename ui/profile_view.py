"""The Task page's view of a completed profile: the summary with readable numbers, and charts per column.

The profile's output is small (one row per input column), so it is read whole.
Its CSV keeps plain numbers (``40000``) so analysts can load it; here they are
shown with thousands separators (the browser's locale), and drawn with
Streamlit's own charts: filled against empty cells for every column at once,
then, for the column picked, its filled/empty split and its most common values.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from s3task.csvio.common import MAX_COLUMNS as FILE_MAX_COLUMNS
from s3task.errors import S3TaskError
from s3task.handlers.profile import TOP
from s3task.record import TaskRecord
from s3task.tasks import Actor, TaskService

from . import format as fmt
from .context import Context

#: Profile columns that hold counts or lengths (text in the CSV, numbers here).
NUMBERS = [
    "position",
    "filled",
    "empty",
    "distinct",
    "shortest",
    "longest",
    *(f"top_{i}_count" for i in range(1, TOP + 1)),
]
#: The profile output is one row per input column: read as many as a file may have.
MAX_COLUMNS = FILE_MAX_COLUMNS
#: Columns in one overview chart; more are shown a part at a time (a picker says which part).
CHART_COLUMNS = 200
#: Height of one column's bar in the overview, and what the axis and legend take: with less room
#: per bar (19 px for a 9-column file) the chart labelled every other column only.
BAR_PX, CHART_EXTRA_PX = 28, 150
#: The overview scrolls beyond this height.
CHART_MAX_PX = 720

_LABELS = {
    "column": "Column",
    "position": "#",
    "filled": "Filled",
    "empty": "Empty",
    "distinct": "Distinct",
    "distinct_is_estimate": "Estimated",
    "shortest": "Shortest",
    "longest": "Longest",
    "note": "Note",
}


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """The profile as read from its CSV (all text) with counts as numbers and the estimate flag as a boolean."""
    out = frame.copy()
    for name in NUMBERS:
        if name in out.columns:
            out[name] = pd.to_numeric(out[name].replace("", None), errors="coerce").astype("Int64")
    if "distinct_is_estimate" in out.columns:
        out["distinct_is_estimate"] = out["distinct_is_estimate"].astype(str).str.lower() == "true"
    return out


def fill_data(profile: pd.DataFrame) -> pd.DataFrame:
    """Filled and empty cells of every column, in file order (the overview chart's data)."""
    return pd.DataFrame(
        {
            "column": profile["column"].astype(str),
            "Filled": profile["filled"].fillna(0).astype(int),
            "Empty": profile["empty"].fillna(0).astype(int),
        }
    )


def top_data(row: pd.Series) -> pd.DataFrame:
    """One column's most common values and their counts, most common first (a top-values chart's data)."""
    values, counts = [], []
    for i in range(1, TOP + 1):
        count = row.get(f"top_{i}_count")
        if count is None or pd.isna(count):
            continue
        values.append(str(row.get(f"top_{i}_value", "")))
        counts.append(int(count))
    # Values shortened alike would draw as one bar: number the repeats.
    seen: dict[str, int] = {}
    labels = []
    for value in values:
        seen[value] = seen.get(value, 0) + 1
        labels.append(value if seen[value] == 1 else f"{value} ({seen[value]})")
    return pd.DataFrame({"value": labels, "count": counts})


def read(ctx: Context, record: TaskRecord) -> pd.DataFrame | None:
    try:
        return _read(ctx.service, ctx.actor, ctx.settings.store, record.task_id, record.output_object_path or "")
    except S3TaskError as e:
        st.error("Could not read the profile: " + fmt.plain(e), icon=":material/error:")
        return None


@st.cache_data(max_entries=8, show_spinner=False)
def _read(_service: TaskService, _actor: Actor, store_url: str, task_id: str, output_path: str) -> pd.DataFrame:
    """The whole profile, values as they are (no formula-protection ``'``); cached per output object,
    which never changes once written (the caller checks access first)."""
    return _service.read_output(_actor, task_id, rows=MAX_COLUMNS, exact=True)


def charts(ctx: Context, record: TaskRecord, frame: pd.DataFrame | None = None) -> None:
    """The profile of a completed ``profile`` task: a summary table and the charts.

    ``frame`` is the profile output as read (text); read here through the service if not given.
    """
    if record.task_type != "profile" or record.status != "completed":
        return
    if not ctx.service.may_act(ctx.actor, record):
        return  # the Result section already says who may see it
    if frame is None:
        frame = read(ctx, record)
        if frame is None:
            return
    show(typed(frame), key=record.task_id, total=record.row_count)


def show(profile: pd.DataFrame, *, key: str, total: int | None = None) -> None:
    """Draw a typed profile (see :func:`typed`); ``total``: the columns the profile has (its rows), when
    more than were read."""
    if profile.empty or "column" not in profile.columns:
        st.write("The file has no columns to profile.")
        return
    st.subheader("Profile")
    _table(profile)
    _overview(profile, key, max(total or 0, len(profile)))
    names = profile["column"].astype(str).tolist()
    picked = st.selectbox(
        "Column",
        range(len(profile)),
        index=most_telling(profile),
        format_func=lambda i: f"{i + 1}. {names[i]}",
        key=f"profile_column_{key}",
        help="Pick a column to see its filled and empty cells and its most common values. It opens on the "
        "column with the most empty cells (or, with none empty, the first whose values repeat).",
    )
    _column(profile.iloc[int(picked or 0)])


def most_telling(profile: pd.DataFrame) -> int:
    """The column the per-column view opens on: the one with the most empty cells; with none empty, the
    first whose values repeat and are not numbers (an id's top values each count 1, and tell nothing)."""
    empty = profile["empty"].fillna(0) if "empty" in profile.columns else pd.Series(0, index=profile.index)
    if len(empty) and int(empty.max()) > 0:
        return int(empty.to_numpy().argmax())
    filled, distinct = profile.get("filled"), profile.get("distinct")
    if filled is None or distinct is None:
        return 0
    repeats = (distinct.fillna(0) < filled.fillna(0)).to_numpy()
    top = profile.get("top_1_value", pd.Series("", index=profile.index)).astype(str)
    text = pd.to_numeric(top.str.replace(",", ".", regex=False), errors="coerce").isna().to_numpy()
    for wanted in (repeats & text, repeats):
        if wanted.any():
            return int(wanted.argmax())
    return 0


def _overview(profile: pd.DataFrame, key: str, total: int) -> None:
    """Filled and empty cells of every column, each bar labelled; a part at a time beyond CHART_COLUMNS,
    and in a box that scrolls beyond CHART_MAX_PX."""
    n = len(profile)
    st.markdown(f"**Filled and empty cells** · {total:,} column{'s' if total != 1 else ''}")
    start = 0
    if n > CHART_COLUMNS:
        parts = range(0, n, CHART_COLUMNS)
        start = st.selectbox(
            "Columns shown",
            parts,
            format_func=lambda s: f"{s + 1:,}–{min(s + CHART_COLUMNS, n):,}",
            key=f"profile_part_{key}",
        )
    part = profile.iloc[start : start + CHART_COLUMNS]
    if len(part) < total:
        st.caption(_shown_of(start, len(part), n, total))
    height = BAR_PX * len(part) + CHART_EXTRA_PX
    with st.container(height=CHART_MAX_PX if height > CHART_MAX_PX else "content", border=False):
        st.bar_chart(
            fill_data(part),
            x="column",
            y=["Filled", "Empty"],
            color=["#3b82f6", "#d1d5db"],
            horizontal=True,
            sort=False,
            stack=True,
            x_label="",
            y_label="cells",
            height=height,
        )


def _shown_of(start: int, shown: int, read: int, total: int) -> str:
    said = f"The chart shows columns {start + 1:,}–{start + shown:,} of the {total:,}"
    if read > CHART_COLUMNS:
        said += " (pick other columns above)"
    if read < total:
        said += f"; only the first {read:,} are read here, the rest are in the result file"
    return said + "."


def _table(profile: pd.DataFrame) -> None:
    config: dict[str, Any] = {
        name: st.column_config.NumberColumn(_LABELS.get(name, name), format="localized")
        for name in NUMBERS
        if name in profile.columns
    }
    config["column"] = st.column_config.TextColumn("Column", pinned=True)
    config["distinct_is_estimate"] = st.column_config.CheckboxColumn(
        "Estimated", help="Ticked: too many different values to count exactly; Distinct is an estimate."
    )
    for i in range(1, TOP + 1):
        config[f"top_{i}_value"] = st.column_config.TextColumn(f"Top {i}")
        config[f"top_{i}_count"] = st.column_config.NumberColumn(f"Top {i} count", format="localized")
    config["note"] = st.column_config.TextColumn("Note")
    st.dataframe(profile, column_config=config, hide_index=True, width="stretch", placeholder="—")


def _column(row: pd.Series) -> None:
    filled, empty = int(row.get("filled") or 0), int(row.get("empty") or 0)
    distinct = row.get("distinct")
    estimate = bool(row.get("distinct_is_estimate"))
    facts = [f"{filled:,} filled", f"{empty:,} empty"]
    if distinct is not None and not pd.isna(distinct):
        facts.append(f"{'about ' if estimate else ''}{int(distinct):,} different value{'s' if distinct != 1 else ''}")
    st.caption(" · ".join(facts))
    left, right = st.columns([1, 2])
    with left:
        st.markdown("**Filled and empty**")
        st.bar_chart(
            pd.DataFrame({"cells": ["Filled", "Empty"], "count": [filled, empty]}),
            x="cells",
            y="count",
            color="#3b82f6",
            horizontal=True,
            sort=False,
            x_label="",
            y_label="cells",
            height=150,
        )
    with right:
        st.markdown("**Most common values**")
        top = top_data(row)
        if "top_1_count" not in row.index:
            st.caption("This profile was made by an earlier version: its most common values are in the table above.")
        elif top.empty:
            st.write("No filled cells.")
        else:
            st.bar_chart(
                top,
                x="value",
                y="count",
                color="#22a06b",
                horizontal=True,
                sort=False,
                x_label="",
                y_label="rows",
                height=max(160, 36 * len(top) + 70),
            )
            if estimate:
                st.caption("Approximate: the column has too many different values to count each exactly.")
