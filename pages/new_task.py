"""New task: pick the CSV or workbook, check its first rows (and how it is read), name it, choose what to do, submit.

The file picker comes first; its preview says how the file is read (a CSV's delimiter and
text encoding, detected from the first bytes; a workbook's sheet and header row, found by
the worker's reader) and lets the user change that, re-reading the preview. The task
carries that format, so the worker reads the file as the preview did. The task type
defaults to "Copy rows unchanged" (every row kept, nothing changed: the safe first run of
a new file); each type shows one line, more on request, and only its own settings.

``new_task?from=<task-id>`` opens the form filled in from that task (name, type,
settings, input format): "start again with a corrected file" on a failed task's page.

The browser keeps the file: it sends the first 64 KB for the preview (of a workbook, the
byte ranges its preview is read from: ``ui/workbookfile.py``), and on
Submit it uploads the file straight to the store (``ui/direct.py``) while this
page only creates the task, hands out the upload URL and, once the browser says
the upload is done, queues the task. If the browser cannot reach the store, the
page falls back to Streamlit's uploader, which sends the file through the app.

The form's logic (its session keys, prefill, what is missing, the upload mode, a type's
one line) is in ``ui/task_form.py``; this page lays it out.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import streamlit as st

from s3task import handlers
from s3task.csvio import DELIMITERS, ENCODINGS, EXCEL_ROWS
from s3task.errors import S3TaskError, UploadInterrupted
from s3task.handlers import Param, TaskType
from s3task.handlers.columns import Need
from s3task.tasks.recipes import Recipe
from ui import context, direct, resume_upload
from ui import format as fmt
from ui import task_form as tf
from ui.csvfile import EXTENSIONS, PREVIEW_ROWS, Inspection, inspect_upload
from ui.direct import Chosen, Plan
from ui.workbookfile import DATES, header_line, sheet_label

ctx = context.get()
state = st.session_state
form = state.setdefault(tf.FORM_NUMBER, 0)
# A form filled in with a recipe has keys of its own for what the recipe sets (ui/task_form.py, FormKeys).
recipe_fill: tf.Prefill | None = state.get(tf.FormKeys(form).recipe)
keys = tf.FormKeys(form, recipe_fill.source_id if recipe_fill else "")

st.title("New task")
st.write(
    "Pick a CSV file or an Excel workbook and check its first rows, choose what should happen to them, then press "
    "**Submit**: "
    "the file is processed in the background, and its page shows the progress and the result."
)

service, actor = ctx.service, ctx.actor


def prefill(source_id: str) -> tf.Prefill:
    """The form filled in from the task ``source_id``, once per form."""
    done: tf.Prefill | None = state.get(keys.prefilled)
    if done is not None and done.source_id == source_id:
        return done
    try:
        source = service.get(actor, source_id)  # the service's rules for who may see a task
    except S3TaskError:
        source = None
    filled = tf.prefill(keys, source_id, source, handlers.all_types())
    for key in (keys.name, keys.type, *filled.params):  # this task's values, not an earlier form's
        state.pop(key, None)
    state[keys.prefilled] = filled
    return filled


source_id = str(st.query_params["from"]) if "from" in st.query_params else None
if source_id is not None:
    st.info(fmt.plain(prefill(source_id).note), icon=":material/info:")
# Kept for the form while the page is the one opened from that task; New task opened any other way
# starts empty (Streamlit has dropped the widgets' own values when the user left the page).
prefilled = tf.in_force(state.get(keys.prefilled), source_id)
if prefilled is None:
    state.pop(keys.prefilled, None)
prefilled = recipe_fill or prefilled  # a recipe chosen on this form goes on top
if recipe_fill is not None:
    st.info(fmt.plain(recipe_fill.note), icon=":material/menu_book:")
prefilled_format = prefilled.input_format if prefilled else None


limit_mb = ctx.settings.max_upload_mb
mode = tf.upload_mode(
    direct_upload=ctx.app.direct_upload,
    fell_back=tf.FALLBACK in state,
    signs_urls=service.url_signer is not None,
    limit_mb=limit_mb,
)
direct_mode = mode.direct
plan: Plan | None = state.get(keys.plan)


def name_from(file_name: str) -> None:
    name = tf.name_from_file(state.get(keys.name, ""), file_name)
    if name is not None:
        state[keys.name] = name


def name_from_file() -> None:
    chosen = state.get(keys.file)
    if chosen is not None:
        name_from(chosen.name)


def name_from_chosen() -> None:
    chosen = Chosen.from_state((state.get(keys.upload) or {}).get("file"))
    if chosen is not None:
        name_from(chosen.name)


def abandon(plan: Plan) -> None:
    """Drop an upload that will not finish: its parts, and the task made for it."""
    state.pop(keys.plan, None)
    service.abandon_upload(actor, plan.task_id, plan.upload_id)


def cancel_upload() -> None:
    if plan is not None:
        abandon(plan)
        state[keys.note] = ("info", "Upload cancelled. The file was not submitted.")


def finish_upload(plan: Plan, report: dict[str, Any]) -> None:
    """The browser says the file is in the store: join its parts, check it, queue the task."""
    parts = plan.joined_parts(report)
    state.pop(keys.plan, None)
    try:
        service.finish_upload(actor, plan.task_id, size=plan.size, upload_id=plan.upload_id, parts=parts)
    except UploadInterrupted as e:  # the store failed at the join: the task and its parts are kept
        resume_upload.stopped(plan.task_id, str(e))
    except S3TaskError as e:  # the upload was dropped and the task cancelled
        state[keys.note] = ("error", "The task was not submitted: " + str(e))
        st.rerun()
    state[tf.FORM_NUMBER] = form + 1
    state.pop(keys.inspected, None)  # the next form starts empty; this one's preview is not needed again
    st.switch_page("pages/task.py", query_params={"id": plan.task_id})


def upload_failed(plan: Plan, report: dict[str, Any]) -> None:
    message = str(report.get("message") or "unknown error")
    if report.get("kind") == "interrupted" and plan.continuable:
        # The parts the store holds stay with the task, whose page continues the upload (ui/resume_upload.py).
        state.pop(keys.plan, None)
        resume_upload.stopped(plan.task_id, message)
        state[tf.FORM_NUMBER] = form + 1
        state.pop(keys.inspected, None)
        st.switch_page("pages/task.py", query_params={"id": plan.task_id})
    abandon(plan)
    if report.get("kind") == "network":
        state[tf.FALLBACK] = message
    else:
        state[keys.note] = ("error", f"The upload failed ({message}). Press Submit to try again.")
    st.rerun()


def inspected(name: str, size: int, stream: Callable[[], Any], file_key: str) -> Inspection:
    """The file checked with the format chosen for it; a workbook is read once per choice, not on every run."""
    read_as = tf.chosen_format(state, keys, file_key, prefilled_format)
    signature = (file_key, name, size, read_as, mode.limit_bytes)

    def check() -> Inspection:
        return inspect_upload(name, size, stream(), max_bytes=mode.limit_bytes, input_format=read_as)

    return tf.remembered(state, keys.inspected, signature, check)


def workbook_choice(inspection: Inspection, file_key: str) -> None:
    """The sheet (names with their rows) and the header row taken, each a choice that reads the preview again."""
    used = inspection.input_format
    assert used is not None and used.sheet is not None
    names = [s.name for s in inspection.sheets]
    by_name = {s.name: s for s in inspection.sheets}
    left, right = st.columns(2)
    # The starting values go to the widgets on every run, not into their keys (see ui/task_form.py).
    with left:
        st.selectbox(
            "Sheet",
            names,
            index=names.index(used.sheet),
            format_func=lambda n: sheet_label(by_name[n]),
            key=keys.sheet(file_key),
        )
    if used.header_row is None:
        return  # the sheet is empty: there is no header row to change
    with right:
        st.number_input(
            "Header row",
            min_value=1,
            max_value=EXCEL_ROWS,
            value=used.header_row,
            step=1,
            help="The row that holds the column names, as Excel numbers rows; the rows above it are skipped.",
            key=keys.header(file_key, used.sheet),
        )
    if inspection.ok and inspection.columns:
        st.markdown(f"**{fmt.plain(header_line(used.header_row))}**")


def format_choice(inspection: Inspection, file_key: str) -> None:
    """What the file was read as, in plain words, and the two choices that change it (the preview re-reads)."""
    assert inspection.detected is not None and inspection.input_format is not None
    used, detected = inspection.input_format, inspection.detected
    if used == detected:
        why = "detected from the start of the file; if the preview looks wrong, change it here"
    else:
        why = f"as chosen; the start of the file looks like: {detected.describe()}"
    st.markdown(f"**{fmt.plain(used.describe())}** ({fmt.plain(why)})")
    delimiter_key, encoding_key = keys.format(file_key)
    left, right = st.columns(2)
    delimiters, encodings = list(DELIMITERS), list(ENCODINGS)
    # The starting value goes to the widget on every run, not into its key (see ui/task_form.py).
    with left:
        st.selectbox(
            "Values separated by",
            delimiters,
            index=delimiters.index(state.get(delimiter_key, used.delimiter)),
            format_func=lambda d: DELIMITERS[d].capitalize(),
            key=delimiter_key,
        )
    with right:
        st.selectbox(
            "Text encoding",
            encodings,
            index=encodings.index(state.get(encoding_key, used.encoding)),
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
    "tabs or pipes; UTF-8, UTF-16 or Windows text. Or an Excel workbook (.xlsx, .xlsm): one sheet, its header "
    "row found under any title"
)
if direct_mode:
    result = direct.uploader(key=keys.upload, plan=plan, owner=keys.upload, on_file_change=name_from_chosen)
    st.caption(f"{ABOUT_FILES}{mode.limit_text}.")
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
        # A workbook's preview reads the ranges the browser sent; a CSV's, its first bytes cut after a whole line.
        got = chosen
        stream = got.sparse if got.ranges else lambda: io.BytesIO(got.preview_bytes())
        inspection = inspected(chosen.name, chosen.size, stream, file_key)
else:
    if tf.FALLBACK in state:
        st.warning(
            "This page could not send the file to the task store directly "
            f"({fmt.plain(state[tf.FALLBACK])}), so this page uploads it through the app instead, "
            f"up to {limit_mb} MB. Choose the file again.",
            icon=":material/cloud_off:",
        )
    upload = st.file_uploader(
        "CSV or Excel file",
        type=[ext.lstrip(".") for ext in EXTENSIONS],
        max_upload_size=limit_mb,
        help=f"{ABOUT_FILES}, up to {limit_mb} MB.",
        key=keys.file,
        on_change=name_from_file,
    )
    if upload is not None:
        file_key = upload.file_id
        uploaded = upload
        inspection = inspected(upload.name, upload.size, lambda: uploaded, file_key)

if keys.note in state:
    kind, text = state.pop(keys.note)
    if kind == "error":
        st.error(fmt.plain(text), icon=":material/error:")
    else:
        st.info(fmt.plain(text), icon=":material/info:")

offer_slot = st.container()  # a recipe for this file's header is offered here, above its preview
if inspection is not None:
    if inspection.detected is not None:
        st.subheader("Preview")
        if inspection.sheets and inspection.input_format and inspection.input_format.sheet:
            workbook_choice(inspection, file_key)
        elif not inspection.is_workbook:
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
            if inspection.is_workbook:
                st.caption(DATES)


def use_recipe(recipe: Recipe) -> None:
    """Fill the form in from ``recipe``: the widgets it sets get keys of their own, drawn on its values."""
    state[keys.recipe] = tf.from_recipe(tf.recipe_keys(form, recipe), recipe)


def recipe_offer(inspection: Inspection, file_key: str) -> None:
    """The offer "Looks like *CRM monthly* — use that recipe?" for a file with a recipe's header (looked up once)."""

    def lookup() -> Recipe | None:
        try:
            return service.recipes.matching(actor, inspection.columns)
        except S3TaskError:
            return None  # recipes are a help: a store that cannot list them now offers none

    offered = tf.remembered(state, keys.recipe_offer, (file_key, tuple(inspection.columns)), lookup)
    if offered is None:
        return
    with st.container(border=True):
        st.markdown(f"Looks like **{fmt.plain(offered.name)}** — use that recipe?")
        st.caption(
            fmt.plain(f"{offered.describe()}: {handlers.get(offered.task_type).title}, read as ")
            + fmt.plain(tf.describe_format(offered.input_format))
        )
        st.button("Use this recipe", icon=":material/menu_book:", on_click=use_recipe, args=(offered,))


if inspection is not None and inspection.ok and inspection.columns and recipe_fill is None:
    with offer_slot:
        recipe_offer(inspection, file_key)

st.subheader("The task")
name = st.text_input(
    "Task name",
    value=prefilled.name if prefilled else "",
    max_chars=tf.NAME_CHARS,
    placeholder="For example: March customer list",
    help="Shown in the task list, so you can find this task again.",
    key=keys.name,
)

types = handlers.all_types()
# The box gets the type it shows as its own starting point on every run (never written into its
# key): the value the page goes on with and the one the browser shows cannot part (issue 22, item 0).
task_type: type[TaskType] = st.selectbox(
    "What should happen to the rows?",
    types,
    index=types.index(tf.form_type(types, state.get(keys.type), prefilled)),
    format_func=lambda t: t.title,
    key=keys.type,
)
st.caption(fmt.plain(tf.summary(task_type.description)))
if tf.says_more(task_type.description):
    with st.expander(f"More about “{task_type.title}”"):
        st.markdown(fmt.plain(task_type.description))


needs = {need.param: need for need in task_type.needs}
unmatched: list[str] = []  # the needed columns no column of the file is chosen for


def column_widget(need: Need, label: str, start: str, help_: str | None) -> str:
    """A box of the file's columns for a column the task type needs, on the one matched (or chosen)."""
    assert inspection is not None
    box = keys.column(task_type.name, need.param, file_key)
    choice = tf.column_choice(need, inspection, start)
    value: str = st.selectbox(
        label,
        choice.options,
        index=choice.index,
        format_func=lambda c: c or "— choose a column —",
        help=help_,
        key=box,
    )
    picked = value != choice.options[choice.index]
    st.caption(fmt.plain(f"{need.label.capitalize()}: column “{value}” (as chosen)." if picked else choice.line))
    if value == tf.NO_COLUMN:
        unmatched.append(need.label)
    return value


def param_widget(param: Param) -> Any:
    label = param.name.replace("_", " ").capitalize() + (" *" if param.required else "")
    key = keys.param(task_type.name, param.name)
    help_ = param.help or None
    # The widget's own value once it has one, else the one filled in from another task, else the
    # declared default; given to the widget, not written into its key (see ui/task_form.py).
    start = state.get(key, (prefilled.params if prefilled else {}).get(key, param.default))
    if param.name in needs and inspection is not None and inspection.ok and inspection.columns:
        need = needs[param.name]
        column_help = f"The column of this file that holds the {need.label}: found by its header or its values."
        return column_widget(need, label, str(start or ""), column_help)
    if param.type == "bool":
        return st.checkbox(label, value=bool(start), help=help_, key=key)
    if param.type == "choice":
        options = list(param.choices)
        return st.selectbox(label, options, index=options.index(start) if start in options else 0, help=help_, key=key)
    if param.type == "int":
        return st.number_input(label, value=start, step=1, help=help_, key=key)
    if param.type == "float":
        return st.number_input(label, value=start, help=help_, key=key, format="%g")
    return st.text_input(label, value=start or "", help=help_, key=key)


payload: dict[str, Any] = {}
if task_type.params:
    with st.container(border=True):
        st.caption(f"Settings for “{fmt.plain(task_type.title)}”")
        payload = {p.name: param_widget(p) for p in task_type.params}

if plan is not None:
    st.stop()  # uploading: the form stays as it is (its values kept), and Submit is not offered again

missing = tf.missing(name, inspection, unmatched)
if missing:
    st.caption(tf.to_submit(missing))

if st.button("Submit", type="primary", disabled=bool(missing), icon=":material/send:"):
    task_id = None
    # The format the preview was read with: the worker reads the file exactly so.
    read_as = inspection.input_format.to_dict() if inspection and inspection.input_format else None
    try:
        if direct_mode:
            assert chosen is not None
            file = chosen.fingerprint()  # recorded on the task: its upload can be continued with the same file
            fingerprint = file.to_dict() if file else None
            created = service.create(actor, name, task_type.name, payload, read_as, fingerprint)
            task_id = created.record.task_id
            if created.upload_url is None:  # none now (Azure refused a user delegation key): through the app
                if not service.transitions.discard(created.record):  # nobody saw it: no trace in the list
                    service.abandon_upload(actor, task_id)
                state[tf.FALLBACK] = "the task store gives no upload links now"
                st.rerun()
            url, headers = created.upload_url, created.upload_headers
            state[keys.plan] = direct.plan_upload(service, actor, task_id, url, chosen, headers)
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
        state[tf.FORM_NUMBER] = form + 1
        state.pop(keys.inspected, None)
        st.switch_page("pages/task.py", query_params={"id": task_id})
