"""Pieces of the Task page: status and progress, timeline, actions, operator details (the result: ui/result.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pandas as pd
import streamlit as st

from s3task import handlers
from s3task.counts import count_help, counts_of
from s3task.errors import S3TaskError
from s3task.record import TaskRecord
from s3task.tasks.recipes import Recipe

from . import format as fmt
from . import resume_upload, services
from .context import Context
from .nav import NEW_TASK
from .tables import type_title

#: What each step of a task's history means, in the words staff read on the task page.
EVENTS = {
    "create": "Created",
    "upload": "File upload started",
    "submit": "Submitted, waiting to start",
    "claim": "Started",
    "release": "Paused, waiting to start again",
    "fail": "Stopped by a problem",
    "retry": "Waiting to start again",
    "complete": "Completed",
    "cancel": "Cancelled",
    # Written by records made before a correction stopped being a history entry (the corrections list is now).
    "correct": "Corrected rows sent to a new task",
}
#: The same steps in an operator's words (the details section): attempts, workers and leases.
OPERATOR_EVENTS = {
    **EVENTS,
    "upload": "Upload in parts started (can be continued)",
    "submit": "Submitted, waiting for a worker",
    "claim": "Claimed by a worker",
    "release": "Released to the queue (worker stopped)",
    "fail": "Attempt failed",
    "retry": "Queued again",
}
#: What a cancel does, as the worker does it (s3task/worker: the attempt is killed and ends without
#: writing; a result is only ever the output of a completed attempt): said before one confirms it.
CANCEL_WARNING = (
    "Cancel this task? It stops within a couple of seconds and gives no result: the rows it has processed so "
    "far are not kept, only their counts. A cancelled task cannot be restarted."
)
#: A waiting task, to a user who may not act on it (its owner is offered to continue or cancel: ui/resume_upload.py).
NOT_SUBMITTED = "This task was created but its file was never submitted."
#: Steps whose note is for staff too (who cancelled, who asked for a retry); other notes name workers and leases.
STAFF_NOTES = {"cancel"}


def header(ctx: Context, record: TaskRecord) -> None:
    st.title(fmt.plain(record.task_name))
    tz = st.context.timezone
    st.caption(
        f"{fmt.plain(type_title(record.task_type))} · created by {fmt.plain(record.created_by)} "
        f"on {fmt.local_time(record.created_at, tz)} · task id {record.task_id}"
    )
    if record.recipe is not None:
        st.caption(made_from(record, ctx.service.recipes.made_from(record)), help=MADE_FROM_HELP)


MADE_FROM_HELP = "A recipe keeps a task's settings under a name; saving it again makes its next version."


def made_from(record: TaskRecord, recipe: Recipe | None) -> str:
    """Which recipe, and which version of it, a task was made from, in words."""
    ref = record.recipe
    assert ref is not None
    if recipe is None:
        return f"Made from a recipe that has been removed since (version {ref.version})."
    now = "" if recipe.version == ref.version else f"; it is at version {recipe.version} now"
    return f"Made from the recipe “{fmt.plain(recipe.name)}” (version {ref.version}{now})."


def status(ctx: Context, record: TaskRecord, now: datetime) -> None:
    st.badge(fmt.status_label(record), color=fmt.status_color(record))
    if record.status == "running":
        st.progress(record.progress, text=fmt.running_text(record, now))
    elif record.status == "queued":
        st.progress(0.0, text="Waiting for a worker to pick it up…")
        if not ctx.worker.embedded and services.live_workers(ctx.settings.store) == []:
            st.warning(
                f"No worker has been seen in the last {fmt.duration(services.WORKER_WINDOW_SECONDS)}, "
                "so this task waits until one starts. "
                "Ask whoever runs s3task to start a worker.",
                icon=":material/hourglass_empty:",
            )
    elif record.status == "completed":
        # In a container of its own: a new, full bar, not the running one sliding up from where it was.
        with st.container():
            st.progress(1.0, text=f"Done in {fmt.done_in(fmt.elapsed_seconds(record, now))}")
    elif record.status == "created" and ctx.service.may_act(ctx.actor, record):
        resume_upload.offer(ctx, record)  # "Continue upload", where the file's upload can be continued
    elif record.status == "created":  # another user's: whose it is is said under the actions, and no more
        st.info(NOT_SUBMITTED)
    shown = counts_of(record).shown()
    for column, (name, label, value) in zip(st.columns(len(shown)), shown, strict=True):
        help_ = count_help(record, name)
        if record.status == "abandoned" and name == "rows_written":  # no count that reads like a result
            label, help_ = CANCELLED_ROWS, CANCELLED_ROWS_HELP
        column.metric(label, "–" if value is None else f"{value:,}", help=help_)
    if record.status == "failed" and record.last_error:
        _failure(record, ctx.service.may_act(ctx.actor, record))


#: A cancelled task's rows written: what it had reached, not a result (issue 36 item 16).
CANCELLED_ROWS = "Rows written before the cancel (not kept)"
CANCELLED_ROWS_HELP = "The task was cancelled: the rows it had written are not kept, so it gives no result file."


def _rows(record: TaskRecord) -> int:
    """Rows in the result file (rows written)."""
    return counts_of(record).rows_written or 0


def _attempts(record: TaskRecord) -> str:
    """Attempts, allowed failures, worker and lease: one line for operators."""
    tz = st.context.timezone
    parts = [f"attempt {record.attempt_id} (of at most {record.max_attempts} that may fail)"]
    if record.failed_attempts:
        parts.append(f"{record.failed_attempts} failed")
    if record.release_count:
        parts.append(f"{record.release_count} handed back by stopping workers")
    if record.status == "running" and record.worker_id:
        parts.append(f"worker {fmt.plain(record.worker_id)}, lease until {fmt.local_time(record.lease_expires_at, tz)}")
    text = " · ".join(parts)
    return text[0].upper() + text[1:]


def input_failure(record: TaskRecord) -> bool:
    """Did the task fail for good because of its file (so running the same file again cannot help)?"""
    return record.final and record.final_reason == "input"


def made_from_results(record: TaskRecord) -> bool:
    """Is the task made from other tasks' results, not a file (a comparison: s3task.handlers.compare)?"""
    try:
        return handlers.get(record.task_type).made_from_results
    except S3TaskError:  # a type whose module is not loaded here
        return False


def _failure(record: TaskRecord, mine: bool) -> None:
    """What went wrong, and what can be done: told to one who may act (the owner, an operator), of whom to
    anyone else (they have no button for it)."""
    tz = st.context.timezone
    who = f"{fmt.plain(record.created_by)} or an operator can"
    if input_failure(record) and made_from_results(record):
        what = "These results cannot be compared as they are. " + (
            "Compare them again from the newer result's page, with other key columns."
            if mine
            else f"{who} compare them again with other key columns."
        )
    elif input_failure(record):
        what = "The file cannot be processed as it is. " + (
            "Correct it and start again with the corrected file." if mine else f"{who} correct it and start again."
        )
    elif record.final:
        what = "Processing kept failing, so s3task stopped trying. " + (
            "Running it again may work if the problem has passed."
            if mine
            else f"{who} run it again, which may work if the problem has passed."
        )
    elif record.retry_at:
        when = fmt.local_time(record.retry_at, tz)
        what = f"Processing stopped by a problem. s3task tries again by itself at {when}."
    else:
        what = "Processing stopped by a problem. s3task tries again by itself."
    st.error(what + _ran_again(record, tz), icon=":material/error:")
    st.caption("What went wrong")
    st.text(record.last_error or "")


def _ran_again(record: TaskRecord, tz: str | None) -> str:
    """The line that says a person ran the task again, when, and that it stopped again: after such a
    run the top of the page must not look as it did before it (only the timeline would tell)."""
    runs = [e for e in record.history if e.get("event") == "claim"]
    asked = [e for e in record.history if e.get("event") == "retry" and e.get("note") == "by request"]
    fails = [e for e in record.history if e.get("event") == "fail"]
    if len(runs) < 2 or not asked or not fails:
        return ""
    same = len(fails) >= 2 and fails[-2].get("note") == fails[-1].get("note")
    again = "with the same problem" if same else "with the problem below"
    return (
        f" It was run again at {fmt.local_time(asked[-1].get('at'), tz)} (run {len(runs)} of this file) and "
        f"stopped again at {fmt.local_time(fails[-1].get('at'), tz)}, {again}."
    )


def timeline(record: TaskRecord) -> None:
    """What happened, when, in staff's words: no attempts, workers or leases (see :func:`operator_details`)."""
    tz = st.context.timezone
    rows = []
    for entry in record.history:
        event = str(entry.get("event"))
        row = {"When": fmt.local_time(entry.get("at"), tz), "What": EVENTS.get(event, event)}
        if event in STAFF_NOTES and entry.get("note"):
            row["What"] += f" ({entry['note']})"
        rows.append(row)
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def operator_details(ctx: Context, record: TaskRecord) -> None:
    """Attempts, workers, leases and the full history: for operators only, folded away."""
    if not ctx.actor.operator:
        return
    tz = st.context.timezone
    with st.expander("Details for operators", icon=":material/engineering:"):
        st.caption(_attempts(record))
        rows = [
            {
                "When": fmt.local_time(entry.get("at"), tz),
                "What": OPERATOR_EVENTS.get(str(entry.get("event")), str(entry.get("event"))),
                "Attempt": str(entry.get("attempt") or ""),
                "Details": str(entry.get("note") or ""),
            }
            for entry in record.history
        ]
        if rows:
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        st.caption(
            f"Input {fmt.plain(record.input_object_path)} · output {fmt.plain(record.output_object_path or 'none yet')}"
            f" · revision {record.revision}"
        )


def _confirm_cancel(
    act: Callable[[Callable[[], object]], None], cancel: Callable[[], object], keep: Callable[[], None]
) -> None:
    """The question before a cancel: yes cancels (through ``act``, which shows a refusal), no keeps the task."""
    with st.container(border=True):
        st.warning(CANCEL_WARNING)
        yes, no = st.columns(2)
        yes.button("Yes, cancel the task", type="primary", width="stretch", on_click=act, args=(cancel,))
        no.button("No, keep it", width="stretch", on_click=keep)


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
        _confirm_cancel(act, lambda: service.cancel(actor, task_id), lambda: state.pop(confirm_key, None))
        return
    # One row that wraps, each control as wide as its words: in four equal columns the longest label
    # ("Start again with a corrected file") was clipped on a 1366-px screen.
    row = st.container(horizontal=True)
    if can_retry and input_failure(record):
        # The same file fails the same way: offer a fresh start (a new task with this one's name and settings),
        # unless the task is made from results (a comparison), not a file. An operator may still run it again,
        # e.g. after a fix to the task type.
        if not made_from_results(record):
            row.page_link(
                NEW_TASK,
                label="Start again with a corrected file",
                icon=":material/restart_alt:",
                query_params={"from": task_id},
                width="content",
            )
        can_retry = actor.operator
        retry_label = "Compare again" if made_from_results(record) else "Run the same file again"
    else:
        retry_label = "Retry now"
    if can_retry:
        row.button(
            retry_label,
            icon=":material/replay:",
            width="content",
            on_click=act,
            args=(lambda: service.retry(actor, task_id),),
            key=f"retry_{task_id}",
        )
    if can_cancel:
        row.button(
            "Cancel task…",
            icon=":material/cancel:",
            width="content",
            on_click=lambda: state.update({confirm_key: True}),
        )
    if not service.may_act(actor, record) and not record.is_terminal:
        st.caption(f"Only {fmt.plain(record.created_by)} or an operator can cancel or retry this task.")
