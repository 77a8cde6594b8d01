"""Tasks: newest first, live progress while anything is active, older pages by cursor."""

from __future__ import annotations

import streamlit as st

from s3task.errors import S3TaskError
from s3task.tasks import Page
from ui import context, tables
from ui import format as fmt

ctx = context.get()
state = st.session_state
state.setdefault("tasks_scope", "Mine")
state.setdefault("tasks_cursors", [None])  # the cursor of each page visited, newest page first

st.title("Tasks")


def reset_paging() -> None:
    state["tasks_cursors"] = [None]


top = st.columns([3, 1], vertical_alignment="bottom")
with top[0]:
    scope = st.segmented_control(
        "Show",
        ["Mine", "Everyone"],
        key="tasks_scope",
        on_change=reset_paging,
        required=True,
        help="Mine: tasks you created. Everyone: all tasks in this store.",
    )
with top[1]:
    st.page_link("pages/new_task.py", label="New task", icon=":material/add:")
mine = scope != "Everyone"
cursor = state["tasks_cursors"][-1]


def load() -> Page | None:
    try:
        return ctx.service.list(ctx.actor, limit=ctx.app.page_size, cursor=cursor, mine=mine)
    except S3TaskError as e:
        st.error("Could not read the task list: " + fmt.plain(e), icon=":material/error:")
        return None


def first_visit() -> None:
    st.info(
        "**No tasks yet.** s3task processes CSV files for you in the background:\n\n"
        "1. Open **New task**, give it a name and upload a CSV file.\n"
        "2. Check the preview and press **Submit**.\n"
        "3. Follow the progress here, then preview and download the result.",
        icon=":material/waving_hand:",
    )
    if st.button("Start a new task", type="primary", icon=":material/upload_file:"):
        st.switch_page("pages/new_task.py")


def show(page: Page) -> None:
    if page.problems:
        with st.expander(f"{len(page.problems)} task(s) could not be read", icon=":material/warning:"):
            for problem in page.problems:
                st.text(problem)
    if not page.tasks:
        if len(state["tasks_cursors"]) > 1:
            st.write("No older tasks.")
        elif mine:
            first_visit()
        else:
            st.write("No tasks in this store yet.")
        return
    now = ctx.service.store.now()
    chosen = tables.task_table(page.tasks, now, key="tasks_open", show_owner=not mine)
    if chosen:
        st.switch_page("pages/task.py", query_params={"id": chosen})


# Live while some task on this page may change on its own. The fragment re-reads
# the page (finished records come from the service's cache, so only live tasks
# cost a GET) and asks for a full rerun when liveness flips, which re-decides
# whether it should keep ticking.
first = load()
live = first is not None and any(fmt.is_live(r) for r in first.tasks)
state["tasks_fresh"] = first


@st.fragment(run_every=ctx.app.refresh_seconds if live else None)
def task_list() -> None:
    page = state.pop("tasks_fresh", None) or load()
    if page is None:
        return
    if any(fmt.is_live(r) for r in page.tasks) != live:
        st.rerun()
    show(page)
    older, newer = page.next_cursor, len(state["tasks_cursors"]) > 1
    if older or newer:
        left, mid, right = st.columns([1, 2, 1])
        if left.button("Newer", icon=":material/chevron_left:", disabled=not newer, width="stretch"):
            state["tasks_cursors"].pop()
            st.rerun()
        mid.caption(f"Page {len(state['tasks_cursors'])}", text_alignment="center")
        if right.button("Older", icon=":material/chevron_right:", disabled=not older, width="stretch"):
            state["tasks_cursors"].append(older)
            st.rerun()


task_list()
if live:
    st.caption(f"Updating every {ctx.app.refresh_seconds:g} s while tasks are running.")
