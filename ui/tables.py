"""The task table on the Tasks page: one row per task, a click opens it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
import streamlit as st

from s3task import handlers
from s3task.counts import HELP, LABELS, counts_of
from s3task.errors import UnknownTaskType
from s3task.record import TaskRecord

from . import format as fmt

_LABELS = list(dict.fromkeys(label for label, _ in fmt.STATUS_STYLE.values()))
_COLORS = [fmt.STATUS_CSS[next(c for lab, c in fmt.STATUS_STYLE.values() if lab == label)] for label in _LABELS]
#: The titles of the types whose result is a summary of the file, not its rows (s3task.counts).
_SUMMARIES = ", ".join(t.title for t in handlers.all_types() if t.output_rows == "summary")
#: The status filter's choices: what the Status column shows.
STATUS_LABELS = tuple(_LABELS)


def type_title(name: str) -> str:
    try:
        return handlers.get(name).title
    except UnknownTaskType:
        return name


def type_titles(records: list[TaskRecord]) -> list[str]:
    """The type filter's choices: every registered type, then any other type among ``records``."""
    titles = [t.title for t in handlers.all_types()]
    return list(dict.fromkeys([*titles, *sorted({type_title(r.task_type) for r in records})]))


@dataclass(frozen=True)
class Filter:
    """What the Tasks page's search and filters ask for; empty parts match everything."""

    name: str = ""
    statuses: tuple[str, ...] = ()
    types: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.name.strip() or self.statuses or self.types)

    def matches(self, record: TaskRecord) -> bool:
        if self.statuses and fmt.status_label(record) not in self.statuses:
            return False
        if self.types and type_title(record.task_type) not in self.types:
            return False
        words = self.name.casefold().split()
        name = record.task_name.casefold()
        return all(word in name for word in words)


#: Before the name of a task of corrected rows (s3task.tasks.corrections), listed under its original.
CORRECTION_MARK = "↳ "


def corrections_under(records: list[TaskRecord]) -> list[TaskRecord]:
    """The tasks in their order, except that a task of corrected rows whose original is among them comes
    right under it (after the original's earlier corrections), so that the list shows what corrects what."""
    listed = {r.task_id for r in records}
    under: dict[str, list[TaskRecord]] = {}
    for r in records:
        if r.corrects in listed and r.corrects != r.task_id:
            under.setdefault(r.corrects or "", []).append(r)
    placed: list[TaskRecord] = []
    seen: set[str] = set()

    def place(record: TaskRecord) -> None:
        if record.task_id in seen:
            return
        seen.add(record.task_id)
        placed.append(record)
        for child in sorted(under.get(record.task_id, []), key=lambda c: c.created_at):
            place(child)

    for r in records:
        if not (r.corrects in listed and r.corrects != r.task_id):
            place(r)
    for r in records:  # a loop of corrections (none is made so) still lists every task once
        place(r)
    return placed


def task_frame(records: list[TaskRecord], now: datetime) -> pd.DataFrame:
    counts = [counts_of(r) for r in records]
    return pd.DataFrame(
        {
            "id": [r.task_id for r in records],
            "open": [":material/arrow_forward: Open"] * len(records),
            "name": [(CORRECTION_MARK if r.corrects else "") + r.task_name for r in records],
            "type": [type_title(r.task_type) for r in records],
            "status": [[fmt.status_label(r)] for r in records],
            "progress": [round(r.progress * 100) for r in records],
            # The page's counts (s3task.counts); empty where a count does not apply to the task's type.
            "rows": pd.array([c.rows_read for c in counts], dtype="Int64"),
            "written": pd.array([c.rows_written for c in counts], dtype="Int64"),
            "errors": pd.array([c.rows_with_errors for c in counts], dtype="Int64"),
            "left_out": pd.array([c.rows_left_out for c in counts], dtype="Int64"),
            "created_by": [r.created_by for r in records],
            "created": [fmt.ago(r.created_at, now) for r in records],
        }
    )


COLUMNS: dict[str, object] = {
    "open": None,  # a button per row; configured per table, as it needs the table's key
    "name": st.column_config.TextColumn("Name", width="medium"),
    "status": st.column_config.MultiselectColumn("Status", options=_LABELS, color=_COLORS),
    "progress": st.column_config.ProgressColumn("Progress", min_value=0, max_value=100, format="%d%%"),
    "rows": st.column_config.NumberColumn(LABELS["rows_read"], help=HELP["rows_read"], format="localized"),
    "written": st.column_config.NumberColumn(
        LABELS["rows_written"],
        help=HELP["rows_written"] + f" For a summary of the file ({_SUMMARIES}): its rows.",
        format="localized",
    ),
    "errors": st.column_config.NumberColumn(
        LABELS["rows_with_errors"], help=HELP["rows_with_errors"], format="localized"
    ),
    "left_out": st.column_config.NumberColumn(LABELS["rows_left_out"], help=HELP["rows_left_out"], format="localized"),
    "created": st.column_config.TextColumn("Created"),
    "type": st.column_config.TextColumn("Type"),
    "created_by": st.column_config.TextColumn("Created by"),
}


#: Pixels a count column needs: "123,456,789,012" is 94 px in the grid's 14 px font, plus 16 px of padding.
COUNT_WIDTH = 120


def count_width(label: str) -> int:
    """A count column's width: the widest count, or its header (label and help icon), whichever is wider."""
    return max(COUNT_WIDTH, round(6.5 * len(label)) + 40)  # about 6 px a character, padding, help icon


def task_table(records: list[TaskRecord], now: datetime, *, key: str, show_owner: bool = True) -> str | None:
    """Show the tasks; return the id of the task whose Open button was clicked, if any."""
    frame = task_frame(corrections_under(records), now)
    config: dict[str, Any] = {
        **COLUMNS,
        "open": st.column_config.ButtonColumn("", type="tertiary", key=key, width="small"),
    }
    for name, column in config.items():
        # The grid sizes a column once, to what it holds first: a count that grows while the page is open
        # ("0" → "2,000,000") was then cut to "000,000". A fixed width fits any count up to billions.
        if isinstance(column, dict) and column.get("type_config", {}).get("type") == "number":
            config[name] = {**column, "width": count_width(str(column.get("label") or ""))}
    st.dataframe(
        frame,
        column_config=config,
        column_order=[c for c in COLUMNS if show_owner or c != "created_by"],
        hide_index=True,
        width="stretch",
        placeholder="—",  # a count that does not apply to the task's type
    )
    click = st.session_state.get(key)  # set only in the rerun caused by the click
    return str(frame["id"].iloc[click["row"]]) if click is not None else None
