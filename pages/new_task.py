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
byte ranges its preview is read from: ``ui/workbookfile.py``), and on Submit the service
begins its upload straight to the store (s3task.tasks.browser_uploads; the picker is
``ui/direct.py``, what the page does with the browser's report ``ui/browser_upload.py``).
If the browser cannot reach the store, the page falls back to Streamlit's uploader, which
sends the file through the app.

This page is layout: the form across reruns is ``ui/new_task_form.py``, the file and its
preview ``ui/file_preview.py``, a type's settings ``ui/type_settings.py``, the recipe
offer ``ui/recipe_offer.py``, and the form's logic ``ui/task_form.py``.
"""

from __future__ import annotations

import streamlit as st

from s3task import handlers
from s3task.errors import S3TaskError
from s3task.handlers import TaskType
from s3task.tasks.browser_uploads import NoUploadLink
from ui import context, file_preview, recipe_offer, type_settings, unfinished_uploads
from ui import format as fmt
from ui import task_form as tf
from ui.direct import Plan
from ui.new_task_form import NewTaskForm

ctx = context.get()
st.title("New task")
st.write(
    "Pick a CSV file or an Excel workbook and check its first rows, choose what should happen to them, then press "
    "**Submit**: "
    "the file is processed in the background, and its page shows the progress and the result."
)
page = NewTaskForm.start(ctx)
state, keys, prefilled = page.state, page.keys, page.prefilled
unfinished_uploads.offer(ctx, f"unfinished_uploads_{page.number}")  # a reload mid-upload lands here
service, actor = ctx.service, ctx.actor

mode = tf.upload_mode(
    direct_upload=ctx.app.direct_upload,
    fell_back=tf.FALLBACK in state,
    signs_urls=service.url_signer is not None,
    limit_mb=ctx.settings.max_upload_mb,
)
plan: Plan | None = state.get(keys.plan)
picked = file_preview.picker(page, mode, plan)
inspection, file_key = picked.inspection, picked.file_key
page.show_note()

offer_slot = st.container()  # a recipe for this file's header is offered here, above its preview
if inspection is not None:
    file_preview.preview(keys, inspection, file_key)
    if inspection.ok and inspection.columns and page.recipe_fill is None:
        with offer_slot:
            recipe_offer.offer(page, inspection, file_key)

st.subheader("The task")
name = st.text_input(
    "Task name",
    value=prefilled.name if prefilled else "",
    max_chars=tf.NAME_CHARS,
    placeholder="For example: March customer list",
    help="Shown in the task list, so you can find this task again.",
    key=keys.name,
)

types = [t for t in handlers.all_types() if not t.made_from_results]  # a comparison is made from a task page
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
chosen_settings = type_settings.settings(task_type, keys, prefilled, inspection, file_key, ctx)

if plan is not None:
    st.stop()  # uploading: the form stays as it is (its values kept), and Submit is not offered again

missing = tf.missing(name, inspection, chosen_settings.unmatched, chosen_settings.wanting)
if missing:
    st.caption(tf.to_submit(missing))

if st.button("Submit", type="primary", disabled=bool(missing), icon=":material/send:"):
    # The format the preview was read with: the worker reads the file exactly so.
    read_as = inspection.input_format if inspection else None
    payload = chosen_settings.payload
    recipe = page.recipe_fill.recipe_for(task_type.name) if page.recipe_fill else None
    try:
        if mode.direct:
            chosen = picked.chosen
            assert chosen is not None  # Submit is enabled only with a file
            # The file's fingerprint is recorded on the task: its upload can be continued with the same file.
            begun = service.begin_browser_upload(
                actor, name, task_type.name, payload, read_as, chosen.size, chosen.fingerprint(), recipe=recipe
            )
            state[keys.plan] = Plan(begun, chosen.id)
            st.rerun()  # the picker now gets its plan and starts sending
        with st.spinner("Uploading and queueing…"):
            assert picked.upload is not None  # Submit is enabled only with a file
            made = service.submit_file(actor, name, task_type.name, payload, picked.upload, read_as, recipe=recipe)
    except NoUploadLink as e:  # none now (Azure refused a user delegation key): through the app; nothing made
        state[tf.FALLBACK] = str(e)
        st.rerun()
    except S3TaskError as e:  # nothing half-made is left in the list (the service saw to it)
        st.error("The task was not submitted: " + fmt.plain(e), icon=":material/error:")
    else:
        page.done(made.task_id)
