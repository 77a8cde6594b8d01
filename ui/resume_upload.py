"""*Continue upload*: the page of a task still waiting for its file offers to send it from where it stopped.

A task made on the New task page records which file it is for (name, size, the SHA-256 of its first
and last MiB: s3task.fingerprint, worked out in the browser), and a large file's upload in parts is
noted on it before the first part goes (s3task.tasks.resumable). When that upload stops — the page
reloaded or closed, the network gone — the task waits. Here the person picks the file again; a
different file is refused in words and nothing changes; the same file goes through the uploader of
ui/direct.py, which sends only the parts the store does not hold (on a store without parts, the
local directory, the whole file again), and the task is queued as a new task's would be.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from s3task.errors import S3TaskError, UploadInterrupted
from s3task.fingerprint import Fingerprint
from s3task.record import TaskRecord

from . import direct
from . import format as fmt
from .context import Context

#: What the page says of a task waiting for a file it has no record of (made elsewhere, or before files were).
NEVER_SUBMITTED = "This task was created but its file was never submitted. You can cancel it."


def _keys(task_id: str) -> tuple[str, str, str]:
    """The session keys of one task's Continue upload: the uploader's, its plan's, and its note's."""
    key = f"resume_upload_{task_id}"
    return key, f"{key}_plan", f"{key}_note"


def stopped(task_id: str, message: str) -> None:
    """Say on the task's page that its upload stopped and what the store holds is kept (the New task page
    sends the person there when an upload in parts breaks off)."""
    st.session_state[_keys(task_id)[2]] = ("error", _stopped_words(message, kept=True))


def _stopped_words(message: str, *, kept: bool) -> str:
    held = " What the task store holds is kept." if kept else ""
    return f"The upload stopped ({message}).{held} Choose the file again to continue."


def offer(ctx: Context, record: TaskRecord) -> None:
    """The waiting task's words, and, where it can be continued by this user, the picker and the button."""
    recorded = Fingerprint.from_dict(record.input_fingerprint)
    # None: no file recorded, another user's task, or a store that gives no upload link (now)
    if recorded is None or ctx.service.browser_upload_link(ctx.actor, record.task_id) is None:
        st.info(NEVER_SUBMITTED)
        return
    st.info(
        f"The upload of {fmt.plain(recorded.name)} ({fmt.size(recorded.size)}) did not finish. To continue it, "
        "choose the same file again and press Continue upload: only what the task store does not hold yet "
        "is sent. Or cancel the task.",
        icon=":material/upload:",
    )
    _continue(ctx, record)


def _continue(ctx: Context, record: TaskRecord) -> None:
    service, actor, task_id, state = ctx.service, ctx.actor, record.task_id, st.session_state
    key, plan_key, note_key = _keys(task_id)
    plan: direct.Plan | None = state.get(plan_key)
    result = direct.uploader(key=key, plan=plan, owner=key)
    if plan is not None:
        for event, handle in (("uploaded", _uploaded), ("failed", _failed)):
            report = result.get(event)
            if isinstance(report, dict) and report.get("id") == task_id:
                handle(ctx, plan, report, plan_key, note_key)
        st.caption("The task is queued as soon as the upload finishes; keep this page open until then.")
        return
    if note_key in state:
        kind, text = state.pop(note_key)
        (st.error if kind == "error" else st.info)(fmt.plain(text), icon=":material/error:")
    chosen = direct.Chosen.from_state(result.get("file"))
    file = chosen.fingerprint() if chosen else None
    refused = ""
    if chosen is not None and file is None:
        refused = "This browser could not tell which file this is (it needs the page at an https address)."
    elif file is not None:
        try:
            service.same_file(record, file)
        except S3TaskError as e:
            refused = str(e)[0].upper() + str(e)[1:] + "."
    if refused:
        st.error(fmt.plain(refused), icon=":material/block:")

    def start() -> None:
        assert chosen is not None and file is not None
        try:
            state[plan_key] = direct.Plan(service.continue_browser_upload(actor, task_id, file), chosen.id)
        except S3TaskError as e:
            state[note_key] = ("error", "The upload could not continue: " + str(e))

    ready = file is not None and not refused
    st.button("Continue upload", type="primary", icon=":material/upload:", disabled=not ready, on_click=start)


def _uploaded(ctx: Context, plan: direct.Plan, report: dict[str, Any], plan_key: str, note_key: str) -> None:
    """The file is whole in the store: join its parts, check it and queue the task (as a new task's)."""
    st.session_state.pop(plan_key, None)
    try:
        ctx.service.finish_browser_upload(ctx.actor, plan.upload, direct.sent_parts(report))
    except UploadInterrupted as e:  # the store failed at the join: the task and its parts are kept
        st.session_state[note_key] = ("error", _stopped_words(str(e), kept=True))
    except S3TaskError as e:  # refused: the upload was dropped and the task cancelled, as a new task's
        st.session_state[note_key] = ("error", "The task was not submitted: " + str(e))
    st.rerun()


def _failed(ctx: Context, plan: direct.Plan, report: dict[str, Any], plan_key: str, note_key: str) -> None:
    """The upload stopped again: what the store holds stays, and the task waits, for another try."""
    st.session_state.pop(plan_key, None)
    message = str(report.get("message") or "unknown error")
    st.session_state[note_key] = ("error", _stopped_words(message, kept=plan.upload.continuable))
    st.rerun()
