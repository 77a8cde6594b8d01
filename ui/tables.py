"""The task table on the Tasks page: one row per task, a click opens it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd
import streamlit as st

from s3task import handlers
from s3task.errors import UnknownTaskType
from s3task.record import TaskRecord

from . import format as fmt

_LABELS = list(dict.fromkeys(label for label, _ in fmt.STATUS_STYLE.values()))
_COLORS = [fmt.STATUS_CSS[next(c for lab, c in fmt.STATUS_STYLE.values() if lab == label)] for label in _LABELS]


def type_title(name: str) -> str:
    try:
        return handlers.get(name).title
    except UnknownTaskType:
        return name


def task_frame(records: list[TaskRecord], now: datetime) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [r.task_id for r in records],
            "open": [":material/arrow_forward: Open"] * len(records),
            "name": [r.task_name for r in records],
            "type": [type_title(r.task_type) for r in records],
            "status": [[fmt.status_label(r)] for r in records],
            "progress": [round(r.progress * 100) for r in records],
            "rows": [r.processed_count if r.status != "completed" else (r.row_count or 0) for r in records],
            "errors": [r.error_count for r in records],
            "created_by": [r.created_by for r in records],
            "created": [fmt.ago(r.created_at, now) for r in records],
        }
    )


COLUMNS: dict[str, object] = {
    "open": None,  # a button per row; configured per table, as it needs the table's key
    "name": st.column_config.TextColumn("Name", width="medium"),
    "status": st.column_config.MultiselectColumn("Status", options=_LABELS, color=_COLORS),
    "progress": st.column_config.ProgressColumn("Progress", min_value=0, max_value=100, format="%d%%"),
    "rows": st.column_config.NumberColumn("Rows", format="localized"),
    "errors": st.column_config.NumberColumn("Errors", format="localized"),
    "created": st.column_config.TextColumn("Created"),
    "type": st.column_config.TextColumn("Type"),
    "created_by": st.column_config.TextColumn("Created by"),
}


def task_table(records: list[TaskRecord], now: datetime, *, key: str, show_owner: bool = True) -> str | None:
    """Show the tasks; return the id of the task whose Open button was clicked, if any."""
    frame = task_frame(records, now)
    config: dict[str, Any] = {
        **COLUMNS,
        "open": st.column_config.ButtonColumn("", type="tertiary", key=key, width="small"),
    }
    st.dataframe(
        frame,
        column_config=config,
        column_order=[c for c in COLUMNS if show_owner or c != "created_by"],
        hide_index=True,
        width="stretch",
    )
    click = st.session_state.get(key)  # set only in the rerun caused by the click
    return str(frame["id"].iloc[click["row"]]) if click is not None else None
