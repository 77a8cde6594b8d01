"""New task: name it, choose what to do, pick the CSV, check the first rows, submit.

The browser keeps the file: it sends the first 64 KB for the preview, and on
Submit it uploads the file straight to the store (``ui/direct.py``) while this
page only creates the task, hands out the upload URL and, once the browser says
the upload is done, queues the task. If the browser cannot reach the store, the
page falls back to Streamlit's uploader, which sends the file through the app.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import streamlit as st

from s3task import handlers
from s3task.errors import InvalidInput, S3TaskError
from s3task.handlers import Param, TaskType
from ui import context, direct
from ui import format as fmt
from ui.csvfile import PREVIEW_ROWS, Inspection, inspect_upload
from ui.direct import Chosen, Plan

ctx = context.get()
# Bumped after a successful submit so the form starts empty next time.
form = st.session_state.setdefault("new_task_form", 0)

st.title("New task")
st.write(
    "Give the task a name, choose what should happen to the rows, and upload a CSV file. "
    "Check the preview, then press **Submit**: the file is processed in the background and "
    "you can follow it, preview the result and download it on the task's page."
)

name = st.text_input(
    "Task name",
    max_chars=200,
    placeholder="For example: March customer list",
    help="Shown in the task list, so you can find this task again.",
    key=f"name_{form}",
)

types = handlers.all_types()
task_type: type[TaskType] = st.selectbox(
    "What should happen to the rows?",
    types,
    format_func=lambda t: t.title,
    key=f"type_{form}",
)
st.caption(fmt.plain(task_type.description))


def param_widget(param: Param) -> Any:
    label = param.name.replace("_", " ").capitalize() + (" *" if param.required else "")
    key = f"param_{form}_{task_type.name}_{param.name}"
    help_ = param.help or None
    if param.type == "bool":
        return st.checkbox(label, value=bool(param.default), help=help_, key=key)
    if param.type == "choice":
        options = list(param.choices)
        index = options.index(param.default) if param.default in options else 0
        return st.selectbox(label, options, index=index, help=help_, key=key)
    if param.type == "int":
        return st.number_input(label, value=param.default, step=1, help=help_, key=key)
    if param.type == "float":
        return st.number_input(label, value=param.default, help=help_, key=key, format="%g")
    return st.text_input(label, value=param.default or "", help=help_, key=key)


payload: dict[str, Any] = {}
if task_type.params:
    with st.container(border=True):
        st.caption("Settings for this task type")
        payload = {p.name: param_widget(p) for p in task_type.params}

limit_mb = ctx.settings.max_upload_mb
service, actor = ctx.service, ctx.actor
state = st.session_state
# The browser sends the file to the store itself unless it has shown it cannot reach
# the store (then the page falls back to Streamlit's uploader for this session).
FALLBACK = "upload_fallback"
direct_mode = ctx.app.direct_upload and FALLBACK not in state
comp_key, plan_key, note_key = f"upload_{form}", f"upload_plan_{form}", f"upload_note_{form}"
plan: Plan | None = state.get(plan_key)
# The app's upload limit applies when the bytes pass through it: Streamlit's uploader,
# or the signed route of a local store. A browser uploading to S3 is limited by S3 alone.
through_app = not direct_mode or service.url_signer is not None
limit_bytes = limit_mb * 2**20 if through_app else None
limit_text = f", up to {limit_mb} MB" if through_app else ""


def name_from(file_name: str) -> None:
    """An unnamed task takes the uploaded file's name (the user can still change it)."""
    if not state.get(f"name_{form}", "").strip():
        state[f"name_{form}"] = Path(file_name).stem[:200]


def name_from_file() -> None:
    chosen = state.get(f"file_{form}")
    if chosen is not None:
        name_from(chosen.name)


def name_from_chosen() -> None:
    chosen = Chosen.from_state((state.get(comp_key) or {}).get("file"))
    if chosen is not None:
        name_from(chosen.name)


def abandon(plan: Plan) -> None:
    """Drop an upload that will not finish: its parts, and the task made for it."""
    state.pop(plan_key, None)
    service.abandon_upload(actor, plan.task_id, plan.upload_id)


def cancel_upload() -> None:
    if plan is not None:
        abandon(plan)
        state[note_key] = ("info", "Upload cancelled. The file was not submitted.")


def finish_upload(plan: Plan, report: dict[str, Any]) -> None:
    """The browser says the file is in the store: join its parts, check it, queue the task."""
    parts = [(int(n), str(etag)) for n, etag in report.get("parts") or []]
    state.pop(plan_key, None)
    try:
        service.finish_upload(actor, plan.task_id, size=plan.size, upload_id=plan.upload_id, parts=parts)
    except S3TaskError as e:  # the upload was dropped and the task cancelled
        state[note_key] = ("error", "The task was not submitted: " + str(e))
        st.rerun()
    state["new_task_form"] = form + 1
    st.switch_page("pages/task.py", query_params={"id": plan.task_id})


def upload_failed(plan: Plan, report: dict[str, Any]) -> None:
    abandon(plan)
    message = str(report.get("message") or "unknown error")
    if report.get("kind") == "network":
        state[FALLBACK] = message
    else:
        state[note_key] = ("error", f"The upload failed ({message}). Press Submit to try again.")
    st.rerun()


inspection: Inspection | None = None
upload = None
if direct_mode:
    result = direct.uploader(key=comp_key, plan=plan, owner=comp_key, on_file_change=name_from_chosen)
    st.caption(f"A .csv file (comma-separated, UTF-8) with a header row{limit_text}.")
    for event, handle in (("uploaded", finish_upload), ("failed", upload_failed)):
        report = result.get(event)
        if plan is not None and isinstance(report, dict) and report.get("id") == plan.task_id:
            handle(plan, report)
    chosen = Chosen.from_state(result.get("file"))
    if chosen is not None:
        head = chosen.preview_bytes()
        inspection = inspect_upload(chosen.name, chosen.size, io.BytesIO(head), max_bytes=limit_bytes)
else:
    if FALLBACK in state:
        st.warning(
            "Your browser could not send the file to the task store directly "
            f"({fmt.plain(state[FALLBACK])}), so this page uploads it through the app instead, "
            f"up to {limit_mb} MB. Choose the file again.",
            icon=":material/cloud_off:",
        )
    upload = st.file_uploader(
        "CSV file",
        type=["csv"],
        max_upload_size=limit_mb,
        help=f"A .csv file (comma-separated, UTF-8) with a header row, up to {limit_mb} MB.",
        key=f"file_{form}",
        on_change=name_from_file,
    )
    if upload is not None:
        inspection = inspect_upload(upload.name, upload.size, upload, max_bytes=limit_mb * 2**20)

if note_key in state:
    kind, text = state.pop(note_key)
    if kind == "error":
        st.error(fmt.plain(text), icon=":material/error:")
    else:
        st.info(fmt.plain(text), icon=":material/info:")

if inspection is not None:
    if not inspection.ok:
        st.error(fmt.plain(inspection.problem), icon=":material/block:")
    else:
        st.subheader("Preview")
        if inspection.columns:
            st.caption(
                f"{fmt.size(inspection.size)} · {len(inspection.columns)} columns: "
                + fmt.plain(", ".join(inspection.columns))
                + f" · first {PREVIEW_ROWS} rows"
            )
        if inspection.note:
            st.warning(fmt.plain(inspection.note), icon=":material/warning:")
        if inspection.columns:
            st.dataframe(inspection.preview, hide_index=True, width="stretch")

if plan is not None:
    st.caption("The task is queued as soon as the upload finishes; keep this page open until then.")
    st.button("Cancel upload", icon=":material/close:", on_click=cancel_upload)
    st.stop()

missing = []
if not name.strip():
    missing.append("a task name")
if inspection is None:
    missing.append("a CSV file")
elif not inspection.ok:
    missing.append("a CSV file that can be read")
if missing:
    st.caption("To submit, add " + " and ".join(missing) + ".")

if st.button("Submit", type="primary", disabled=bool(missing), icon=":material/send:"):
    task_id = None
    try:
        if direct_mode:
            assert chosen is not None
            created = service.create(actor, name, task_type.name, payload)
            task_id = created.record.task_id
            if created.upload_url is None:
                raise InvalidInput("this task store gives no upload links; reload the page to upload through the app")
            state[plan_key] = direct.plan_upload(service, actor, task_id, created.upload_url, chosen)
        else:
            with st.spinner("Uploading and queueing…"):
                assert upload is not None  # Submit is enabled only with a file
                task_id = service.submit_file(actor, name, task_type.name, payload, upload).task_id
    except S3TaskError as e:
        if task_id is not None:  # do not leave a half-made task in the list
            service.abandon_upload(actor, task_id)
        st.error("The task was not submitted: " + fmt.plain(e), icon=":material/error:")
    else:
        if direct_mode:
            st.rerun()  # the uploader now gets its plan and starts sending
        state["new_task_form"] = form + 1
        st.switch_page("pages/task.py", query_params={"id": task_id})
