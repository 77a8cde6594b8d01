"""New task: name it, choose what to do, upload the CSV, check the first rows, submit."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import streamlit as st

from s3task import handlers
from s3task.errors import S3TaskError
from s3task.handlers import Param, TaskType
from ui import context
from ui import format as fmt
from ui.csvfile import PREVIEW_ROWS, Inspection, inspect_upload

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


def name_from_file() -> None:
    """An unnamed task takes the uploaded file's name (the user can still change it)."""
    chosen = st.session_state.get(f"file_{form}")
    if chosen is not None and not st.session_state.get(f"name_{form}", "").strip():
        st.session_state[f"name_{form}"] = Path(chosen.name).stem[:200]


upload = st.file_uploader(
    "CSV file",
    type=["csv"],
    max_upload_size=limit_mb,
    help=f"A .csv file (comma-separated, UTF-8) with a header row, up to {limit_mb} MB.",
    key=f"file_{form}",
    on_change=name_from_file,
)

inspection: Inspection | None = None
if upload is not None:
    inspection = inspect_upload(upload.name, upload.size, upload, max_bytes=limit_mb * 2**20)
    if not inspection.ok:
        st.error(fmt.plain(inspection.problem), icon=":material/block:")
    else:
        st.subheader("Preview")
        st.caption(
            f"{fmt.size(inspection.size)} · {len(inspection.columns)} columns: "
            + fmt.plain(", ".join(inspection.columns))
            + f" · first {PREVIEW_ROWS} rows"
        )
        if inspection.note:
            st.warning(fmt.plain(inspection.note), icon=":material/warning:")
        st.dataframe(inspection.preview, hide_index=True, width="stretch")

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
        with st.spinner("Uploading and queueing…"):
            created = ctx.service.create(ctx.actor, name, task_type.name, payload)
            task_id = created.record.task_id
            ctx.service.upload_input(ctx.actor, task_id, upload)
            ctx.service.submit(ctx.actor, task_id)
    except S3TaskError as e:
        if task_id is not None:  # do not leave a half-made task in the list
            with contextlib.suppress(S3TaskError):
                ctx.service.cancel(ctx.actor, task_id)
        st.error("The task was not submitted: " + fmt.plain(e), icon=":material/error:")
    else:
        st.session_state["new_task_form"] = form + 1
        st.switch_page("pages/task.py", query_params={"id": task_id})
