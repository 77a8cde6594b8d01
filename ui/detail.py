"""Pieces of the Task page: status and progress, timeline, actions, output."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pandas as pd
import streamlit as st

from s3task import handlers
from s3task.errors import NotFound, S3TaskError, UnknownTaskType
from s3task.record import TaskRecord

from . import direct, services
from . import format as fmt
from .context import Context
from .tables import type_title

EVENTS = {
    "create": "Created",
    "submit": "Submitted, waiting for a worker",
    "claim": "Started",
    "release": "Handed back to the queue (worker stopped)",
    "fail": "Attempt failed",
    "retry": "Queued again",
    "complete": "Completed",
    "cancel": "Cancelled",
}


def header(ctx: Context, record: TaskRecord) -> None:
    st.title(fmt.plain(record.task_name))
    tz = st.context.timezone
    st.caption(
        f"{fmt.plain(type_title(record.task_type))} · created by {fmt.plain(record.created_by)} "
        f"on {fmt.local_time(record.created_at, tz)} · task id {record.task_id}"
    )


def status(ctx: Context, record: TaskRecord, now: datetime) -> None:
    st.badge(fmt.status_label(record), color=fmt.status_color(record))
    if record.status == "running":
        rate = fmt.rows_per_second(record, now)
        left = fmt.time_left(record, now)
        text = f"{record.progress:.0%} · {record.processed_count:,} rows"
        if rate:
            text += f" · {rate:,.0f} rows/s"
        if left is not None:
            text += f" · about {fmt.duration(left.total_seconds())} left"
        st.progress(record.progress, text=text)
    elif record.status == "queued":
        st.progress(0.0, text="Waiting for a worker to pick it up…")
        if not ctx.worker.embedded and services.live_workers(ctx.settings.store) == []:
            st.warning(
                "No worker has been seen in the last 3 minutes, so this task waits until one starts. "
                "Ask whoever runs s3task to start a worker.",
                icon=":material/hourglass_empty:",
            )
    elif record.status == "completed":
        st.progress(1.0, text=f"Done in {fmt.duration(fmt.elapsed_seconds(record, now) or 0)}")
    elif record.status == "created":
        st.info("This task was created but its file was never submitted. You can cancel it.")
    counts = st.columns(3)
    counts[0].metric("Rows processed", f"{_rows(record):,}")
    counts[1].metric("Succeeded", f"{record.success_count:,}")
    counts[2].metric("Rows with errors", f"{record.error_count:,}")
    _attempts(record)
    if record.status == "failed" and record.last_error:
        _failure(record)


def _rows(record: TaskRecord) -> int:
    return record.row_count if record.status == "completed" and record.row_count is not None else record.processed_count


def _attempts(record: TaskRecord) -> None:
    tz = st.context.timezone
    parts = []
    if record.attempt_id > 1 or record.failed_attempts or record.status == "running":
        parts.append(f"attempt {record.attempt_id}")
    if record.failed_attempts and not record.final:
        parts.append(f"{record.failed_attempts} of {record.max_attempts} allowed failures used")
    if record.status == "running" and record.worker_id:
        parts.append(f"worker {fmt.plain(record.worker_id)}, lease until {fmt.local_time(record.lease_expires_at, tz)}")
    if parts:
        text = " · ".join(parts)
        st.caption(text[0].upper() + text[1:])


def _failure(record: TaskRecord) -> None:
    tz = st.context.timezone
    if record.final:
        what = "This task failed and will not be retried automatically."
    elif record.retry_at:
        what = f"The last attempt failed. It will be retried automatically after {fmt.local_time(record.retry_at, tz)}."
    else:
        what = "The last attempt failed. It will be retried automatically."
    st.error(what, icon=":material/error:")
    st.caption("What went wrong")
    st.text(record.last_error or "")
    if record.final:
        st.caption(
            "Retrying runs the same file again. If the file was the problem, start a new task with a corrected file."
        )


def timeline(record: TaskRecord) -> None:
    tz = st.context.timezone
    rows = [
        {
            "When": fmt.local_time(entry.get("at"), tz),
            "What": EVENTS.get(str(entry.get("event")), str(entry.get("event"))),
            "Attempt": str(entry.get("attempt") or ""),
            "Details": str(entry.get("note") or ""),
        }
        for entry in record.history
    ]
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def actions(ctx: Context, record: TaskRecord) -> None:
    """Cancel (after a confirmation) and Retry, shown only when this user may use them.

    The buttons act in their callbacks, before the rerun they cause, so the
    rerun already shows the new state (and only the fragment reruns).
    """
    service, actor, task_id = ctx.service, ctx.actor, record.task_id
    confirm_key, error_key = f"confirm_cancel_{task_id}", f"action_error_{task_id}"
    state = st.session_state

    def act(call: Callable[[], object]) -> None:
        state.pop(confirm_key, None)
        try:
            call()
        except S3TaskError as e:
            state[error_key] = str(e)

    if error_key in state:
        st.error(fmt.plain(state.pop(error_key)), icon=":material/error:")
    can_cancel, can_retry = service.can_cancel(actor, record), service.can_retry(actor, record)
    if state.get(confirm_key) and can_cancel:
        with st.container(border=True):
            st.warning("Cancel this task? Work done so far is thrown away and it cannot be restarted.")
            yes, no = st.columns(2)
            yes.button(
                "Yes, cancel the task",
                type="primary",
                width="stretch",
                on_click=act,
                args=(lambda: service.cancel(actor, task_id),),
            )
            no.button("No, keep it", width="stretch", on_click=lambda: state.pop(confirm_key, None))
        return
    cols = st.columns(4)
    if can_retry:
        cols[0].button(
            "Retry now",
            icon=":material/replay:",
            width="stretch",
            on_click=act,
            args=(lambda: service.retry(actor, task_id),),
        )
    if can_cancel:
        cols[1].button(
            "Cancel task…",
            icon=":material/cancel:",
            width="stretch",
            on_click=lambda: state.update({confirm_key: True}),
        )
    if not service.may_act(actor, record) and not record.is_terminal:
        st.caption(f"Only {fmt.plain(record.created_by)} or an operator can cancel or retry this task.")


def output(ctx: Context, record: TaskRecord) -> None:
    service, actor = ctx.service, ctx.actor
    st.subheader("Result")
    if not service.may_act(actor, record):
        st.info(f"Only {fmt.plain(record.created_by)} or an operator can see and download the result of this task.")
        return
    _download(ctx, record)
    errors = record.error_count
    errors_only = False
    if _marks_errors(record.task_type):
        view = st.segmented_control(
            "Show",
            ["First 100 rows", f"Only rows with errors ({errors:,})"],
            default="First 100 rows",
            required=True,
            key=f"view_{record.task_id}",
            label_visibility="collapsed",
        )
        errors_only = view != "First 100 rows"
    try:
        frame = services.output_preview(
            service, actor, ctx.settings.store, record.task_id, record.output_object_path or "", errors_only
        )
    except S3TaskError as e:
        st.error("Could not read the result: " + fmt.plain(e), icon=":material/error:")
        return
    if errors_only and frame.empty:
        st.write("No row has an error.")
        return
    st.dataframe(frame, hide_index=True, width="stretch")
    shown = len(frame)
    total = errors if errors_only else _rows(record)
    if total > shown:
        st.caption(f"Showing {shown:,} of {total:,} rows. Download the file for all of them.")


def _marks_errors(task_type: str) -> bool:
    """Does this task type write an error column (so an errors-only view means something)?"""
    try:
        return handlers.get(task_type).error_column is not None
    except (UnknownTaskType, AttributeError):
        return True


def _download(ctx: Context, record: TaskRecord) -> None:
    """A button that makes a fresh download URL when clicked; the browser fetches the file from there.

    On S3 that is a presigned GET (with a Content-Disposition naming the file),
    on a local store the app's signed ``/transfer`` route, which streams it from
    disk: either way the app never holds the file, and no link sits in the page
    long enough to expire.
    """
    service, actor, task_id = ctx.service, ctx.actor, record.task_id
    state = st.session_state
    url_key, error_key = f"download_url_{task_id}", f"download_error_{task_id}"

    def fresh_url() -> None:
        try:
            url = service.output_url(actor, task_id)
        except S3TaskError as e:
            state[error_key] = str(e)
            return
        if url is None:
            state[error_key] = "this task store cannot make download links"
        state[url_key] = url

    filename = service.output_filename(record)
    try:
        size = service.store.head(record.output_object_path or "").size
    except NotFound:
        st.warning(
            "The result file is no longer in the task store (finished tasks' files may be kept for a limited time).",
            icon=":material/folder_off:",
        )
        return
    except S3TaskError:
        size = None  # the button says what is wrong if the store is really down
    st.button(
        "Download result (CSV)", type="primary", icon=":material/download:", on_click=fresh_url, key=f"dl_{task_id}"
    )
    direct.save(key=f"save_{task_id}", url=state.pop(url_key, None))
    if error_key in state:
        st.error("The result cannot be downloaded: " + fmt.plain(state.pop(error_key)), icon=":material/error:")
    st.caption(fmt.plain(filename) + (f" · {fmt.size(size)}" if size is not None else ""))
