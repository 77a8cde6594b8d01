"""A "Prepare the table" task's steps on its page: each step in words, and what it did over the whole file
(rows in, rows out, cells changed) once the task has run."""

from __future__ import annotations

from typing import Any

import streamlit as st

from s3task.errors import S3TaskError
from s3task.record import TaskRecord
from s3task.steps import parse

from . import format as fmt
from .context import Context


def _steps(ctx: Context, record: TaskRecord) -> Any:
    """The task's list, read from the store once per page session (it never changes: its ETag is pinned)."""
    kept: dict[tuple[str, str | None], Any] = st.session_state.setdefault("task_steps", {})
    key = (record.task_id, record.steps_etag)
    if key not in kept:
        kept.clear()  # one task's list at a time
        kept[key] = ctx.service.steps.parameters(record).get("steps")
    return kept[key]


def show(ctx: Context, record: TaskRecord) -> None:
    """The list and, when the task completed, each step's counts (nothing for other task types)."""
    if record.task_type != "steps":
        return
    try:
        steps = parse(_steps(ctx, record))
    except S3TaskError as e:  # a record written by another version: said, not a crash
        st.caption("The steps cannot be shown: " + fmt.plain(e))
        return
    counts = {c.get("step"): c for c in record.step_counts}
    rows = []
    for step in steps.steps:
        count = counts.get(step.number, {})
        rows.append({
            "Step": step.number,
            "What it does": step.kind.title + (" (off)" if step.off else ""),
            "Rows in": count.get("rows_in"),
            "Rows out": count.get("rows_out"),
            "Cells changed": count.get("cells_changed"),
        })  # fmt: skip
    st.subheader("Steps")
    if not record.step_counts:
        st.caption("What each step did over the whole file shows here once the task has run.")
        rows = [{k: v for k, v in r.items() if k in ("Step", "What it does")} for r in rows]
    st.dataframe(rows, hide_index=True, width="stretch")
