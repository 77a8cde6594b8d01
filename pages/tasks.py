"""Tasks: newest first, live progress while anything is active, filters over the tasks loaded so far.

The store lists tasks by id, newest first, and nothing else: there is no index by
status, type or name. So the page loads the newest tasks (``S3TASK_PAGE_SIZE`` at a
time; *Load older tasks* adds as many again) and filters and searches those. The
page says how many that is.
"""

from __future__ import annotations

import streamlit as st

from s3task.errors import S3TaskError
from s3task.record import TaskRecord
from s3task.tasks import MAX_LIST, Page
from ui import context, notify, tables
from ui import format as fmt

ctx = context.get()
state = st.session_state
size = ctx.app.page_size
state.setdefault("tasks_scope", "Mine")
state.setdefault("tasks_loaded", size)  # how many of the newest tasks to load


def reset_loaded() -> None:
    state["tasks_loaded"] = size


st.title("Tasks")

top = st.columns([3, 1], vertical_alignment="bottom")
with top[0]:
    scope = st.segmented_control(
        "Show",
        ["Mine", "Everyone"],
        key="tasks_scope",
        on_change=reset_loaded,
        required=True,
        help="Mine: tasks you created. Everyone: all tasks in this store.",
    )
with top[1]:
    st.page_link("pages/new_task.py", label="New task", icon=":material/add:")
mine = scope != "Everyone"


def load() -> Page | None:
    """The newest ``tasks_loaded`` tasks: one listing request per 200 (finished records come from cache)."""
    wanted = max(size, int(state["tasks_loaded"]))
    tasks: list[TaskRecord] = []
    problems: list[str] = []
    cursor: str | None = None
    try:
        while True:
            page = ctx.service.list(ctx.actor, limit=min(MAX_LIST, wanted - len(tasks)), cursor=cursor, mine=mine)
            tasks += page.tasks
            problems += page.problems
            cursor = page.next_cursor
            if cursor is None or len(tasks) + len(problems) >= wanted:
                return Page(tasks, cursor, problems)
    except S3TaskError as e:
        st.error("Could not read the task list: " + fmt.plain(e), icon=":material/error:")
        return None


def first_visit() -> None:
    st.info(
        "**No tasks yet.** s3task processes CSV files and Excel workbooks for you in the background:\n\n"
        "1. Open **New task**, give it a name and upload a CSV file or an Excel workbook.\n"
        "2. Check the preview and press **Submit**.\n"
        "3. Follow the progress here, then preview and download the result.",
        icon=":material/waving_hand:",
    )
    if st.button("Start a new task", type="primary", icon=":material/upload_file:"):
        st.switch_page("pages/new_task.py")


def filters(page: Page) -> tables.Filter:
    """Search and filter widgets, with a line saying what they cover."""
    search, status, kind = st.columns([2, 2, 2])
    name = search.text_input(
        "Search by name", key="tasks_search", placeholder="Part of a task name", help="Not case-sensitive."
    )
    statuses = status.multiselect("Status", tables.STATUS_LABELS, key="tasks_status", placeholder="Any status")
    types = kind.multiselect("Type", tables.type_titles(page.tasks), key="tasks_type", placeholder="Any type")
    return tables.Filter(name=name, statuses=tuple(statuses), types=tuple(types))


def coverage(page: Page, shown: int, active: bool) -> str:
    loaded = len(page.tasks)
    whose = "your" if mine else "this store's"
    if page.next_cursor is None:
        covered = f"all {loaded:,} of {whose} tasks" if loaded != 1 else f"the only one of {whose} tasks"
        where = ""
    else:
        covered = f"the newest {loaded:,} of {whose} tasks (loaded so far)"
        where = " *Load older tasks* extends them."
    if active:
        return f"Showing {shown:,} of {loaded:,}: search and filters cover {covered}.{where}"
    return f"Search and filters cover {covered}.{where}"


def show(page: Page) -> None:
    if page.problems:
        unread = fmt.counted(len(page.problems), "task")
        with st.expander(f"{unread} could not be read", icon=":material/warning:"):
            for problem in page.problems:
                st.text(problem)
    if not page.tasks:
        if mine:
            first_visit()
        else:
            st.write("No tasks in this store yet.")
        return
    chosen_filter = state.get("tasks_filter_now") or tables.Filter()
    matching = [r for r in page.tasks if chosen_filter.matches(r)]
    st.caption(coverage(page, len(matching), chosen_filter.active))
    if not matching:
        more = " Load older tasks to search further back." if page.next_cursor else ""
        st.write("No task loaded here matches." + more)
    else:
        now = ctx.service.now()
        chosen = tables.task_table(matching, now, key="tasks_open", show_owner=not mine)
        if chosen:
            st.switch_page("pages/task.py", query_params={"id": chosen})
    older = page.next_cursor is not None
    if older and st.button(f"Load older tasks ({size:,} more)", icon=":material/expand_more:", key="tasks_older"):
        state["tasks_loaded"] = len(page.tasks) + len(page.problems) + size
        st.rerun()


# Live while some loaded task may change on its own. The fragment re-reads the
# list (finished records come from the service's cache, so only live tasks cost
# a GET) and asks for a full rerun when liveness flips, which re-decides
# whether it should keep ticking.
first = load()
live = first is not None and any(fmt.is_live(r) for r in first.tasks)
state["tasks_fresh"] = first
state["tasks_filter_now"] = filters(first) if first is not None and first.tasks else None


@st.fragment(run_every=ctx.app.refresh_seconds if live else None)
def task_list() -> None:
    page = state.pop("tasks_fresh", None) or load()
    if page is None:
        return
    if any(fmt.is_live(r) for r in page.tasks) != live:
        st.rerun()
    notify.watch(ctx, page.tasks)  # tab title + desktop notification when one of mine ends
    show(page)


task_list()
if live:
    st.caption(f"Updating every {ctx.app.refresh_seconds:g} s while tasks are running.")
