"""New task: pick the CSV, check its first rows (and how it is read), name it, choose what to do, submit.

The file picker comes first; its preview says how the file is read (its delimiter and
text encoding, detected from the first bytes) and lets the user change that, re-reading
the preview. The task carries that format, so the worker reads the file as the preview
did. The task type defaults to "Copy rows unchanged" (every row kept, nothing changed:
the safe first run of a new file); each type shows one line, more on request, and only
its own settings.

``new_task?from=<task-id>`` opens the form filled in from that task (name, type,
settings, input format): "start again with a corrected file" on a failed task's page.

The browser keeps the file: it sends the first 64 KB for the preview, and on
Submit it uploads the file straight to the store (``ui/direct.py``) while this
page only creates the task, hands out the upload URL and, once the browser says
the upload is done, queues the task. If the browser cannot reach the store, the
page falls back to Streamlit's uploader, which sends the file through the app.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import streamlit as st

from s3task import handlers
from s3task.csvio import DELIMITERS, ENCODINGS, InputFormat
from s3task.errors import InvalidInput, S3TaskError
from s3task.handlers import Param, TaskType
from ui import context, direct
from ui import format as fmt
from ui.csvfile import EXTENSIONS, PREVIEW_ROWS, Inspection, inspect_upload
from ui.direct import Chosen, Plan

ctx = context.get()
# Bumped after a successful submit so the form starts empty next time.
form = st.session_state.setdefault("new_task_form", 0)

st.title("New task")
st.write(
    "Pick a CSV file and check its first rows, choose what should happen to them, then press **Submit**: "
    "the file is processed in the background, and its page shows the progress and the result."
)

#: The type a new form starts with: it keeps every row and changes nothing, so a first run shows
#: that the file reads as intended before anything is changed (see docs/APP.md).
DEFAULT_TYPE = "copy"
state = st.session_state
FROM_KEY = f"prefilled_{form}"


def summary(description: str) -> str:
    """A type's description in one line: up to its first full stop or colon."""
    match = re.search(r"[.:;](\s|$)", description)
    return (description[: match.start()] if match else description).strip() + "."


def prefill(source_id: str) -> str:
    """Fill the form from the task ``source_id``, once per form; the one-line note to show about it."""
    done = state.get(FROM_KEY)
    if done and done[0] == source_id:
        return str(done[1])
    try:
        source = ctx.service.get(ctx.actor, source_id)  # the service's rules for who may see a task
        task_type = handlers.get(source.task_type)
    except S3TaskError:
        note = f"There is no task {source_id[:40]!r} to start from, so the form starts empty."
    else:
        state[f"name_{form}"] = source.task_name
        state[f"type_{form}"] = task_type
        for param in task_type.params:
            if source.payload.get(param.name) is not None:
                state[f"param_{form}_{task_type.name}_{param.name}"] = source.payload[param.name]
        with contextlib.suppress(InvalidInput):  # never submitted, so never settled: detect it from the file
            state[f"format_{form}"] = InputFormat.from_dict(source.input_format)
        note = f"Filled in from the task “{source.task_name}”: pick the corrected file and submit."
    state[FROM_KEY] = (source_id, note)
    return note


if "from" in st.query_params:
    st.info(fmt.plain(prefill(str(st.query_params["from"]))), icon=":material/info:")
prefilled_format: InputFormat | None = state.get(f"format_{form}")


limit_mb = ctx.settings.max_upload_mb
service, actor = ctx.service, ctx.actor
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


def format_keys(file_key: str) -> tuple[str, str]:
    """The session keys of the two format choices for one chosen file (a new file is detected afresh)."""
    return f"delimiter_{form}_{file_key}", f"encoding_{form}_{file_key}"


def chosen_format(file_key: str) -> InputFormat | None:
    """The format the user chose for this file (or the prefilled one); None: detect it."""
    delimiter_key, encoding_key = format_keys(file_key)
    if delimiter_key in state and encoding_key in state:
        return InputFormat(state[delimiter_key], state[encoding_key])
    return prefilled_format


def format_choice(inspection: Inspection, file_key: str) -> None:
    """What the file was read as, in plain words, and the two choices that change it (the preview re-reads)."""
    assert inspection.detected is not None and inspection.input_format is not None
    used, detected = inspection.input_format, inspection.detected
    if used == detected:
        why = "detected from the start of the file; if the preview looks wrong, change it here"
    else:
        why = f"as chosen; the start of the file looks like: {detected.describe()}"
    st.markdown(f"**{fmt.plain(used.describe())}** ({fmt.plain(why)})")
    delimiter_key, encoding_key = format_keys(file_key)
    state.setdefault(delimiter_key, used.delimiter)
    state.setdefault(encoding_key, used.encoding)
    left, right = st.columns(2)
    delimiters, encodings = list(DELIMITERS), list(ENCODINGS)
    with left:
        st.selectbox(
            "Values separated by",
            delimiters,
            format_func=lambda d: DELIMITERS[d].capitalize(),
            key=delimiter_key,
        )
    with right:
        st.selectbox(
            "Text encoding",
            encodings,
            format_func=lambda e: ENCODINGS[e].removesuffix(" text"),
            key=encoding_key,
            help="Excel's plain “CSV” is Windows (Western European) text; “CSV UTF-8” is UTF-8; "
            "“Unicode text” is UTF-16, separated by tabs.",
        )


inspection: Inspection | None = None
upload = None
file_key = ""
ABOUT_FILES = (
    "A .csv file (or Excel's .txt “Unicode text”) with a header row: values separated by commas, semicolons, "
    "tabs or pipes; UTF-8, UTF-16 or Windows text"
)
if direct_mode:
    result = direct.uploader(key=comp_key, plan=plan, owner=comp_key, on_file_change=name_from_chosen)
    st.caption(f"{ABOUT_FILES}{limit_text}.")
    for event, handle in (("uploaded", finish_upload), ("failed", upload_failed)):
        report = result.get(event)
        if plan is not None and isinstance(report, dict) and report.get("id") == plan.task_id:
            handle(plan, report)
    if plan is not None:  # next to the upload's progress bar
        st.caption("The task is queued as soon as the upload finishes; keep this page open until then.")
        st.button("Cancel upload", icon=":material/close:", on_click=cancel_upload)
    chosen = Chosen.from_state(result.get("file"))
    if chosen is not None:
        file_key = chosen.id
        head = chosen.preview_bytes()
        inspection = inspect_upload(
            chosen.name, chosen.size, io.BytesIO(head), max_bytes=limit_bytes, input_format=chosen_format(file_key)
        )
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
        type=[ext.lstrip(".") for ext in EXTENSIONS],
        max_upload_size=limit_mb,
        help=f"{ABOUT_FILES}, up to {limit_mb} MB.",
        key=f"file_{form}",
        on_change=name_from_file,
    )
    if upload is not None:
        file_key = upload.file_id
        inspection = inspect_upload(
            upload.name, upload.size, upload, max_bytes=limit_mb * 2**20, input_format=chosen_format(file_key)
        )

if note_key in state:
    kind, text = state.pop(note_key)
    if kind == "error":
        st.error(fmt.plain(text), icon=":material/error:")
    else:
        st.info(fmt.plain(text), icon=":material/info:")

if inspection is not None:
    if inspection.detected is not None:
        st.subheader("Preview")
        format_choice(inspection, file_key)
    if not inspection.ok:
        st.error(fmt.plain(inspection.problem), icon=":material/block:")
    else:
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

st.subheader("The task")
name = st.text_input(
    "Task name",
    max_chars=200,
    placeholder="For example: March customer list",
    help="Shown in the task list, so you can find this task again.",
    key=f"name_{form}",
)

types = handlers.all_types()
type_key = f"type_{form}"
if state.get(type_key) not in types:
    state[type_key] = next((t for t in types if t.name == DEFAULT_TYPE), types[0])
task_type: type[TaskType] = st.selectbox(
    "What should happen to the rows?",
    types,
    format_func=lambda t: t.title,
    key=type_key,
)
st.caption(fmt.plain(summary(task_type.description)))
if summary(task_type.description).rstrip(".") != task_type.description.strip().rstrip("."):
    with st.expander(f"More about “{task_type.title}”"):
        st.markdown(fmt.plain(task_type.description))


def param_widget(param: Param) -> Any:
    label = param.name.replace("_", " ").capitalize() + (" *" if param.required else "")
    key = f"param_{form}_{task_type.name}_{param.name}"
    help_ = param.help or None
    # The default goes into the session first, so a value already there (the user's, or filled
    # in from another task) stays the widget's own.
    if param.type == "bool":
        state.setdefault(key, bool(param.default))
        return st.checkbox(label, help=help_, key=key)
    if param.type == "choice":
        options = list(param.choices)
        state.setdefault(key, param.default if param.default in options else options[0])
        return st.selectbox(label, options, help=help_, key=key)
    if param.type in ("int", "float"):
        state.setdefault(key, param.default)
        if param.type == "int":
            return st.number_input(label, step=1, help=help_, key=key)
        return st.number_input(label, help=help_, key=key, format="%g")
    state.setdefault(key, param.default or "")
    return st.text_input(label, help=help_, key=key)


payload: dict[str, Any] = {}
if task_type.params:
    with st.container(border=True):
        st.caption(f"Settings for “{fmt.plain(task_type.title)}”")
        payload = {p.name: param_widget(p) for p in task_type.params}

if plan is not None:
    st.stop()  # uploading: the form stays as it is (its values kept), and Submit is not offered again

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
    # The format the preview was read with: the worker reads the file exactly so.
    read_as = inspection.input_format.to_dict() if inspection and inspection.input_format else None
    try:
        if direct_mode:
            assert chosen is not None
            created = service.create(actor, name, task_type.name, payload, read_as)
            task_id = created.record.task_id
            if created.upload_url is None:
                raise InvalidInput("this task store gives no upload links; reload the page to upload through the app")
            state[plan_key] = direct.plan_upload(service, actor, task_id, created.upload_url, chosen)
        else:
            with st.spinner("Uploading and queueing…"):
                assert upload is not None  # Submit is enabled only with a file
                task_id = service.submit_file(actor, name, task_type.name, payload, upload, read_as).task_id
    except S3TaskError as e:
        if task_id is not None:  # do not leave a half-made task in the list
            service.abandon_upload(actor, task_id)
        st.error("The task was not submitted: " + fmt.plain(e), icon=":material/error:")
    else:
        if direct_mode:
            st.rerun()  # the uploader now gets its plan and starts sending
        state["new_task_form"] = form + 1
        st.switch_page("pages/task.py", query_params={"id": task_id})
