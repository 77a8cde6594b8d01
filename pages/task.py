"""Task: status and live progress, timeline, cancel/retry, result preview and download.

Deep link: ``/task?id=<task-id>``.
"""

from __future__ import annotations

import streamlit as st

from s3task.errors import InvalidTaskId, S3TaskError, TaskNotFound
from s3task.record import TaskRecord
from ui import (
    chart_view,
    compare_view,
    context,
    corrections,
    detail,
    notify,
    profile_view,
    recipe_save,
    result,
    step_counts,
)
from ui import format as fmt

ctx = context.get()
st.page_link("pages/tasks.py", label="All tasks", icon=":material/arrow_back:")

task_id = st.query_params.get("id", "")
if not task_id:
    st.info("No task chosen. Pick one from the task list.", icon=":material/info:")
    st.stop()


def load() -> TaskRecord | None:
    try:
        return ctx.service.get(ctx.actor, task_id)
    except InvalidTaskId:
        st.error("This link does not point to a task (the task id is not valid).", icon=":material/link_off:")
    except TaskNotFound:
        st.error("There is no task with this id in this store.", icon=":material/search_off:")
    except S3TaskError as e:
        st.error("Could not read the task: " + fmt.plain(e), icon=":material/error:")
    return None


record = load()
if record is None:
    st.stop()
detail.header(ctx, record)
corrections.lineage(ctx, record)  # what it corrects, what corrects it
if record.status == "completed":
    result.downloads(ctx, record)  # the result comes first

# Live while the task can change on its own; the fragment re-reads only this
# record and asks for a full rerun when the task stops (or starts) being live.
live = fmt.is_live(record)
st.session_state["task_fresh"] = record


@st.fragment(run_every=ctx.app.refresh_seconds if live else None)
def panel() -> None:
    current = st.session_state.pop("task_fresh", None) or load()
    if current is None:
        return
    if fmt.is_live(current) != live:
        st.rerun()
    notify.watch(ctx, [current], page_task=current)  # tab title + desktop notification when it ends; its top shown
    detail.status(ctx, current, ctx.service.now())
    detail.actions(ctx, current)
    if current.status == "completed":
        if current.task_type == "profile":
            profile_view.charts(ctx, current)  # the summary with readable numbers, and its charts
        elif current.task_type == "compare":
            compare_view.answer(ctx, current)  # the counts and each column in words, the highlighter's first rows
        else:
            result.preview(ctx, current)  # the rows, above the timeline
            chart_view.chart(ctx, current)  # one column's chart over every row
    step_counts.show(ctx, current)  # a "Prepare the table" task's steps, and what each did
    st.subheader("Timeline")
    detail.timeline(current)
    detail.operator_details(ctx, current)


panel()
corrections.offer(ctx, record)  # the rows with errors sent back corrected: outside the live part too
compare_view.offer(ctx, record)  # "Compare with another result": a comparison on a worker
recipe_save.offer(ctx, record)  # under the task, outside its live part: typing is not interrupted
