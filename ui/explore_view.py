"""The whole result on a completed task's page: a search of every row, a column filter, a sort, pages.

The controls sit above the grid. While none is set, the grid is the usual preview of the first
100 rows; once one is, the grid shows a page of the answer over every row of the output
(:mod:`s3task.query`: the stored file streamed through, never loaded whole), "N matching rows
of M", and pages. "Download this view" makes a file of every matching row, in the chosen order,
in the background next to the output (as the Excel copy is made) and the browser fetches it.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from s3task import query
from s3task.errors import S3TaskError
from s3task.record import TaskRecord
from s3task.tasks import Actor, TaskService

from . import direct
from . import format as fmt
from .context import Context

#: Rows in a page of the answer.
PAGE_ROWS = 50
#: Pages asked of the output at once (and cached): each question reads the whole file, so the next
#: few pages come with the first instead of each costing another read.
PAGES_AT_ONCE = 10
FILE_ORDER = "File order"
ASCENDING, DESCENDING = "Ascending", "Descending"
ANY_COLUMN = "(no column filter)"
#: How often a "Preparing…" view download looks again.
POLL_SECONDS = 1.0


@st.cache_data(max_entries=64, show_spinner=False)
def _answer(
    _service: TaskService, _actor: Actor, store_url: str, task_id: str, output_path: str, asked: tuple[object, ...]
) -> query.Answer:
    """One page of an answer, cached per output object (it never changes once written) and question. The
    caller checks access first: the key leaves out the user, as the rows do not depend on who asks."""
    return _service.query_output(_actor, task_id, query.Query(*asked))  # type: ignore[arg-type]


def _question(record: TaskRecord, columns: list[str]) -> query.Query:
    """The controls (search box, sort, column filter) as a question; they are drawn here."""
    tid = record.task_id
    rows = record.row_count if record.row_count is not None else record.processed_count
    search = st.text_input(
        "Search every row",
        key=f"explore_search_{tid}",
        placeholder="A name, an id, any text",
        help="Case-insensitive; finds the text inside any cell of any column.",
        max_chars=query.MAX_SEARCH,
    )
    st.caption(
        f":material/travel_explore: The search, the filter and the sort act on every row of the result "
        f"({fmt.counted(rows, 'row')}), not only on the rows shown."
    )
    sort_col, order_col, filter_col, value_col = st.columns(4)
    sort = sort_col.selectbox("Sort by", [FILE_ORDER, *columns], key=f"explore_sort_{tid}")
    order = order_col.selectbox("Order", [ASCENDING, DESCENDING], key=f"explore_order_{tid}")
    column = filter_col.selectbox("Filter a column", [ANY_COLUMN, *columns], key=f"explore_fcol_{tid}")
    value = value_col.text_input(
        "contains",
        key=f"explore_fval_{tid}",
        disabled=column == ANY_COLUMN,
        placeholder="text in that column",
        max_chars=query.MAX_SEARCH,
    )
    filters = ((column, value),) if column != ANY_COLUMN and value else ()
    return query.Query(
        search=search.strip(),
        filters=filters,
        sort=None if sort == FILE_ORDER else sort,
        descending=order == DESCENDING,
        limit=PAGE_ROWS,
    )


def explore(ctx: Context, record: TaskRecord, columns: list[str]) -> bool:
    """The controls; and, if one is set, the answer's grid, count, pages and downloads. True if it drew a grid."""
    asked = _question(record, columns)
    if not (asked.search or asked.filters or asked.sort):
        return False
    page_key = f"explore_page_{record.task_id}"
    if st.session_state.get(page_key + "_of") != query.digest(asked):
        st.session_state[page_key], st.session_state[page_key + "_of"] = 0, query.digest(asked)
    page = st.session_state[page_key]
    asked = query.Query(asked.search, asked.filters, asked.sort, asked.descending, page * PAGE_ROWS, PAGE_ROWS)
    try:
        found = _page(ctx, record, asked)
    except S3TaskError as e:
        st.error("Could not search the result: " + fmt.plain(e), icon=":material/error:")
        return True
    _summary(found, asked)
    if found.rows:
        st.dataframe(pd.DataFrame(found.rows, columns=found.columns), hide_index=True, width="stretch")
    _pages(found, asked, page_key)
    if found.matching:
        _downloads(ctx, record, asked)
    return True


def _page(ctx: Context, record: TaskRecord, asked: query.Query) -> query.Answer:
    """The page ``asked`` for, out of the few pages around it that are read (and cached) together."""
    span = PAGE_ROWS * PAGES_AT_ONCE
    start = asked.offset // span * span
    limit = min(span, query.WINDOW - start)
    key = (asked.search, asked.filters, asked.sort, asked.descending, start, limit)
    pages = _answer(ctx.service, ctx.actor, ctx.settings.store, record.task_id, record.output_object_path or "", key)
    rows = pages.rows[asked.offset - start : asked.offset - start + asked.limit]
    return query.Answer(pages.columns, rows, pages.matching, pages.total, pages.sort_order)


def _summary(found: query.Answer, asked: query.Query) -> None:
    st.markdown(f"**{fmt.counted(found.matching, 'matching row')} of {found.total:,}**")
    if asked.sort and found.matching:
        way = "descending" if asked.descending else "ascending"
        how = query.describe_sort(found.sort_order)
        why = " (every filled cell of the column is a number)" if found.sort_order == "numbers" else ""
        st.caption(f"Sorted by {fmt.plain(asked.sort)}, {how}{why}, {way}; empty cells last.")


def _pages(found: query.Answer, asked: query.Query, page_key: str) -> None:
    if found.matching <= PAGE_ROWS:
        return
    first, last = asked.offset + 1, min(asked.offset + PAGE_ROWS, found.matching)
    reachable = min(found.matching, query.WINDOW)
    with st.container(horizontal=True, vertical_alignment="center"):
        st.button(
            "Previous",
            icon=":material/chevron_left:",
            disabled=asked.offset == 0,
            key=page_key + "_prev",
            on_click=lambda: st.session_state.__setitem__(page_key, st.session_state[page_key] - 1),
        )
        st.markdown(f"Rows {first:,}–{last:,} of {found.matching:,}")
        st.button(
            "Next",
            icon=":material/chevron_right:",
            disabled=last >= reachable,
            key=page_key + "_next",
            on_click=lambda: st.session_state.__setitem__(page_key, st.session_state[page_key] + 1),
        )
    if found.matching > query.WINDOW and last >= reachable:
        st.caption(f"Pages go as far as row {query.WINDOW:,}; narrow the search, or download this view for every row.")


def _downloads(ctx: Context, record: TaskRecord, asked: query.Query) -> None:
    """'Download this view' as CSV and as Excel: made in the background on first click, then fetched."""
    service, actor, tid = ctx.service, ctx.actor, record.task_id
    state = st.session_state
    tag = query.digest(asked)

    def states() -> dict[str, str]:
        return {s: service.view_state(actor, tid, asked, s).kind for s in query.VIEW_KINDS}

    polling = "preparing" in states().values()

    def start(suffix: str) -> None:
        state[f"explore_want_{suffix}_{tid}"] = tag
        try:
            service.prepare_view(actor, tid, asked, suffix)
        except S3TaskError as e:
            state[f"explore_error_{tid}"] = str(e)

    @st.fragment(run_every=POLL_SECONDS if polling else None)
    def row() -> None:
        found = states()
        if ("preparing" in found.values()) != polling:
            st.rerun()
        urls: dict[str, str | None] = {}
        with st.container(horizontal=True, key=f"explore_downloads_{tid}"):
            for suffix, label in query.VIEW_KINDS.items():
                key = f"explore_dl_{suffix}_{tid}"
                if found[suffix] == "preparing":
                    st.button(f"Preparing the {label}…", icon=":material/hourglass_top:", disabled=True, key=key)
                    continue
                if found[suffix] == "ready" and state.get(f"explore_want_{suffix}_{tid}") == tag:
                    state.pop(f"explore_want_{suffix}_{tid}")
                    urls[suffix] = _url(ctx, tid, asked, suffix)
                st.button(
                    f"Download this view ({label})",
                    icon=":material/download:",
                    on_click=start,
                    args=(suffix,),
                    key=key,
                )
            for suffix in query.VIEW_KINDS:
                direct.save(key=f"explore_save_{suffix}_{tid}", url=urls.get(suffix))
        if f"explore_error_{tid}" in state:
            st.error("This view cannot be downloaded: " + fmt.plain(state.pop(f"explore_error_{tid}")))
        for suffix, kind in found.items():
            if kind in ("failed", "refused"):  # refused: above Excel's limits (the CSV is still offered)
                message = service.view_state(actor, tid, asked, suffix).message
                st.error(f"The {query.VIEW_KINDS[suffix]} of this view could not be made: " + fmt.plain(message))

    row()


def _url(ctx: Context, task_id: str, asked: query.Query, suffix: str) -> str | None:
    try:
        url = ctx.service.view_url(ctx.actor, task_id, asked, suffix)
    except S3TaskError as e:
        st.session_state[f"explore_error_{task_id}"] = str(e)
        return None
    if url is None:
        st.session_state[f"explore_error_{task_id}"] = "this task store cannot make download links"
    return url
