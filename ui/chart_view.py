"""A chart of one column of a completed result, counted over every row (:mod:`s3task.charts`).

*Chart a column* lists the result's columns; none is picked at first, so opening a result costs nothing.
Picking one asks the service for its summary: made once in the background (the Parquet copy first, if
nobody asked for it yet, then the column counted) and kept in the store beside the output, so the next
view of it, by anyone, reads the summary. Meanwhile the chart's part of the page says what is being done
and looks again every second (a fragment: the rest of the page stays usable). The chart is Altair's, with
the counts in words beside it, for a screen reader and for whoever wants the figures.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from s3task import charts as core
from s3task.errors import S3TaskError
from s3task.record import TaskRecord
from s3task.tasks import Actor, TaskService
from s3task.tasks.charts import ChartState

from . import format as fmt
from .context import Context

#: How often a chart being made looks again.
POLL_SECONDS = 1.0
PREPARING = {
    "copy": "Making the typed copy of the result (once, for every chart of it), then counting the column…",
    "count": "Counting every row of the column…",
    "": "Counting every row of the column…",
}
#: Bars whose counts are said beside the chart; more (a bar a day over three months) are said in a fold.
BARS_SAID = 24


@st.cache_data(max_entries=64, show_spinner=False)
def _columns(_service: TaskService, _actor: Actor, store_url: str, task_id: str, output_path: str) -> list[str]:
    """The result's column names, per output object (it never changes once written); the caller checks access."""
    return _service.charts.chart_columns(_actor, task_id)


def chart(ctx: Context, record: TaskRecord) -> None:
    """*Chart a column*, and the picked column's chart with its counts in words."""
    service, actor, tid = ctx.service, ctx.actor, record.task_id
    if not service.may_act(actor, record):
        return
    st.subheader("Chart a column")
    try:
        names = _columns(service, actor, ctx.settings.store, tid, record.output_object_path or "")
    except S3TaskError as e:
        st.error("Could not read the result's columns: " + fmt.plain(e), icon=":material/error:")
        return
    column = st.selectbox(
        "Chart a column",
        names,
        index=None,
        placeholder="Pick a column",
        key=f"chart_column_{tid}",
        label_visibility="collapsed",
        help="Counted over every row of the result: a histogram of numbers and dates, the most common values of text.",
    )
    if column is None:
        st.caption(
            ":material/bar_chart: Pick a column to see how its values spread over every row of the result "
            "(numbers and dates as a histogram, text as its most common values)."
        )
        return
    _drawn(ctx, record, column)


def _drawn(ctx: Context, record: TaskRecord, column: str) -> None:
    charts, actor, tid = ctx.service.charts, ctx.actor, record.task_id
    try:
        state = charts.prepare_chart(actor, tid, column)
    except S3TaskError as e:
        st.error("The chart cannot be made: " + fmt.plain(e), icon=":material/error:")
        return
    polling = state.kind == "preparing"

    @st.fragment(run_every=POLL_SECONDS if polling else None)
    def part() -> None:
        now = charts.chart_state(actor, tid, column)
        if (now.kind == "preparing") != polling:
            st.rerun()
        _show(now, column)

    part()


def _show(state: ChartState, column: str) -> None:
    if state.kind == "preparing":
        st.info(PREPARING[state.step], icon=":material/hourglass_top:")
    elif state.kind == "failed":
        st.error(f"The chart of {fmt.plain(column)} could not be made: " + fmt.plain(state.message))
    elif state.kind == "ready" and state.summary is not None:
        _summary(state.summary)


def _summary(summary: core.ColumnSummary) -> None:
    words = core.describe(summary)
    drawn, said = st.columns([3, 2], gap="medium")
    with said:
        st.markdown("**" + fmt.plain(words) + "**")
        if len(summary.bars) <= BARS_SAID:
            st.caption(fmt.plain(core.bars_in_words(summary)))
        else:
            with st.expander(f"The count of each of the {len(summary.bars):,} bars"):
                st.caption(fmt.plain(core.bars_in_words(summary)))
        if summary.approximate:
            st.caption(
                f"More than {core.EXACT_VALUES:,} different values: their number is an estimate (about ±2%); "
                "each count shown is exact, counted again over every row."
            )
        if summary.unseen_at_most:
            st.caption(
                f"These are the most common values found, not surely the most common: a value not shown may "
                f"have up to {summary.unseen_at_most:,} rows, more than the last one shown."
            )
        cut = [bar for bar in summary.bars if len(bar.label) == core.SHOW_CHARS and bar.label.endswith("…")]
        if cut and summary.kind == "text":
            st.caption(
                f"Values longer than {core.SHOW_CHARS} characters are shown cut (…), and counted by the whole "
                "value: two that begin alike are two bars."
            )
    with drawn:
        if summary.filled:
            st.altair_chart(altair_chart(summary), width="stretch", key=f"chart_{core.digest(summary.column)}")
        else:
            st.info("Every cell of this column is empty: there is nothing to draw.", icon=":material/block:")


def _apart(rows: list[dict[str, Any]]) -> None:
    """Labels made different where two bars' are the same (long values cut alike), so each keeps its own bar:
    the second "abc…" becomes "abc… (2)"."""
    seen: dict[str, int] = {}
    for row in rows:
        seen[row["label"]] = seen.get(row["label"], 0) + 1
        if seen[row["label"]] > 1:
            row["label"] = f"{row['label']} ({seen[row['label']]})"


def altair_chart(summary: core.ColumnSummary) -> Any:
    """The Altair chart of a summary: a histogram (numbers, dates) or the most common values (text)."""
    import altair as alt

    words = core.describe(summary)
    rows = [{"label": b.label, "count": b.count, "start": b.start, "end": b.end} for b in summary.bars]
    if summary.kind == "text":
        _apart(rows)
        if summary.others:
            rows.append({"label": "(all other values)", "count": summary.others, "start": None, "end": None})
        frame = pd.DataFrame(rows)
        return (
            alt.Chart(frame, description=words)
            .mark_bar()
            .encode(
                y=alt.Y("label:N", sort=None, title=summary.column, axis=alt.Axis(labelLimit=180)),
                x=alt.X("count:Q", title="rows"),
                tooltip=[alt.Tooltip("label:N", title="value"), alt.Tooltip("count:Q", title="rows", format=",")],
            )
            .properties(height=max(120, 26 * len(frame)))
        )
    frame = pd.DataFrame(rows)
    way = "T" if summary.kind == "date" else "Q"
    title = f"{summary.column} (per {summary.unit})" if summary.kind == "date" else summary.column
    return (
        alt.Chart(frame, description=words)
        .mark_bar(orient="vertical")  # bars from x to x2 would be drawn lying down otherwise
        .encode(
            x=alt.X(f"start:{way}", title=title, bin="binned") if way == "Q" else alt.X(f"start:{way}", title=title),
            x2=alt.X2(f"end:{way}"),
            y=alt.Y("count:Q", title="rows"),
            tooltip=[alt.Tooltip("label:N", title="range"), alt.Tooltip("count:Q", title="rows", format=",")],
        )
        .properties(height=280)
    )
