"""The New task page's side of a browser's upload straight to the store: it hands the service's plan to
the picker, and tells the service how the upload ended (s3task.tasks.browser_uploads runs the rest).

Uploaded: the service joins, checks and queues, and the task's page opens. Broken off midway, an upload
that can be continued is kept and the task's page says so (ui/resume_upload.py); any other is given up,
and the page says why — or, when the browser could not reach the store at all, falls back to sending the
file through the app. Cancelled: given up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from s3task.errors import S3TaskError, UploadInterrupted

from . import direct, resume_upload
from . import task_form as tf
from .new_task_form import NewTaskForm


def on_report(page: NewTaskForm, plan: direct.Plan, result: Mapping[str, Any]) -> None:
    """Act on what the picker reports of ``plan`` (``uploaded`` or ``failed``), then offer to cancel it."""
    for event, handle in (("uploaded", _uploaded), ("failed", _failed)):
        report = result.get(event)
        if isinstance(report, dict) and report.get("id") == plan.task_id:
            handle(page, plan, report)
    # next to the upload's progress bar
    st.caption("The task is queued as soon as the upload finishes; keep this page open until then.")
    st.button("Cancel upload", icon=":material/close:", on_click=_cancel, args=(page, plan))


def _cancel(page: NewTaskForm, plan: direct.Plan) -> None:
    page.state.pop(page.keys.plan, None)
    page.ctx.service.give_up_browser_upload(page.ctx.actor, plan.upload)
    page.note("info", "Upload cancelled. The file was not submitted.")


def _uploaded(page: NewTaskForm, plan: direct.Plan, report: dict[str, Any]) -> None:
    """The browser says the file is in the store: the service joins its parts, checks it, queues the task."""
    page.state.pop(page.keys.plan, None)
    try:
        page.ctx.service.finish_browser_upload(page.ctx.actor, plan.upload, direct.sent_parts(report))
    except UploadInterrupted as e:  # the store failed at the join: the task and its parts are kept
        resume_upload.stopped(plan.task_id, str(e))
    except S3TaskError as e:  # the upload was dropped and the task cancelled
        page.note("error", "The task was not submitted: " + str(e))
        st.rerun()
    page.done(plan.task_id)


def _failed(page: NewTaskForm, plan: direct.Plan, report: dict[str, Any]) -> None:
    message = str(report.get("message") or "unknown error")
    page.state.pop(page.keys.plan, None)
    interrupted = report.get("kind") == "interrupted"
    if page.ctx.service.browser_upload_stopped(page.ctx.actor, plan.upload, interrupted=interrupted):
        # The parts the store holds stay with the task, whose page continues the upload (ui/resume_upload.py).
        resume_upload.stopped(plan.task_id, message)
        page.done(plan.task_id)
    if report.get("kind") == "network":
        page.state[tf.FALLBACK] = message
    else:
        page.note("error", f"The upload failed ({message}). Press Submit to try again.")
    st.rerun()
