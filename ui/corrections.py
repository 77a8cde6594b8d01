"""On a task's page: its rows with errors, corrected and sent back (s3task.tasks.corrections), and the tasks
linked to it that way.

``lineage`` says, under the task's title, which task this one corrects (with the rows with errors
there and here) and which tasks correct this one; ``combined`` offers the original's combined result,
as CSV and as Excel, on the original's page and on each correction's. ``offer`` is the upload of the
corrected rows on a completed task with rows with errors: the errors workbook (``Rows with errors
(.xlsx, to correct)``) fixed and saved as .xlsx or .csv makes a new task, with this task's type and
settings, of only those rows.
"""

from __future__ import annotations

import csv
import io

import pandas as pd
import streamlit as st

from s3task import exports
from s3task.errors import S3TaskError
from s3task.record import TaskRecord
from s3task.tasks.corrections import EDITABLE_ROWS

from . import direct
from . import format as fmt
from .context import Context
from .nav import TASK
from .result import POLL_SECONDS, has_errors

UPLOAD_LABEL = "Upload the corrected rows"
FIX_LABEL = "Fix the rows with errors here"
RUN_LABEL = "Run these rows again"


def _errors(record: TaskRecord) -> str:
    if record.status != "completed":
        return fmt.status_label(record).lower()  # its status in the page's words ("cancelled", not "abandoned")
    n = record.error_count
    return "no rows with errors" if not n else f"{fmt.counted(n, 'row')} with errors"


def _linked(record: TaskRecord) -> str:
    """What a task made of this task's corrected rows is linked to: a correction's rows are the original's."""
    if record.corrects:
        return "linked to the original (listed there, in its combined result with every other fix)"
    return "linked to this one"


def lineage(ctx: Context, record: TaskRecord) -> None:
    """Where this task stands among its corrections: what it corrects, what corrects it, with the counts."""
    service = ctx.service
    if record.corrects:
        try:
            original = service.get(ctx.actor, record.corrects)
        except S3TaskError:
            st.caption(f"Corrected rows of task {record.corrects} (it cannot be read now).")
        else:
            with st.container(horizontal=True, key=f"corrects_{record.task_id}"):
                st.page_link(
                    TASK,
                    label=f"Corrected from “{fmt.plain(original.task_name)}”",
                    query_params={"id": original.task_id},
                    icon=":material/undo:",
                )
                st.caption(f"There: {_errors(original)}. Here: {_errors(record)}.")
            _original_combined(ctx, original)  # the original's result with every fix, offered here too
    if record.status != "completed":
        return
    try:
        found = service.corrections_of(ctx.actor, record.task_id)
    except S3TaskError as e:
        st.caption("The corrections of this task cannot be read now: " + fmt.plain(e))
        return
    if not found:
        return
    st.markdown(f"**Corrections** of its {fmt.counted(record.error_count, 'row')} with errors:")
    for correction in found:
        with st.container(horizontal=True, key=f"correction_{correction.task_id}"):
            st.page_link(
                TASK,
                label=fmt.plain(correction.task_name),
                query_params={"id": correction.task_id},
                icon=":material/redo:",
            )
            read = correction.row_count if correction.row_count is not None else correction.processed_count
            st.caption(f"{fmt.counted(read, 'row')} run again · {_errors(correction)}")
    if any(c.status == "completed" for c in found) and service.may_act(ctx.actor, record):
        combined(ctx, record)


COMBINED_LABEL = "Download the combined result (CSV)"
COMBINED_EXCEL_LABEL = "Download the combined result (Excel)"
#: The combined result's two files: whether it is the Excel one, its key's part, its button, while it is made.
_FORMATS = (
    (False, "csv", COMBINED_LABEL, "Preparing the combined result…"),
    (True, "xlsx", COMBINED_EXCEL_LABEL, "Preparing the combined workbook…"),
)


def combined(ctx: Context, record: TaskRecord, *, caption: str | None = None) -> None:
    """The combined result's buttons, CSV and Excel: each made in the background when first asked for (the page
    polls meanwhile), then downloaded by the browser from a fresh URL, like the output's other copies."""
    service, actor, task_id = ctx.service, ctx.actor, record.task_id
    state = st.session_state

    def states() -> dict[bool, exports.CopyState]:
        return {excel: service.combined_state(actor, task_id, excel) for excel, *_ in _FORMATS}

    polling = any(s.kind == "preparing" for s in states().values())

    def fetch(excel: bool, kind: str) -> None:
        try:
            state[f"combined_url_{kind}_{task_id}"] = service.combined_url(actor, task_id, excel)
        except S3TaskError as e:
            state[f"combined_error_{task_id}"] = str(e)

    def start(excel: bool, kind: str) -> None:
        state[f"want_combined_{kind}_{task_id}"] = True
        try:
            service.prepare_combined(actor, task_id, excel)
        except S3TaskError as e:
            state[f"combined_error_{task_id}"] = str(e)

    @st.fragment(run_every=POLL_SECONDS if polling else None)
    def row() -> None:
        found = states()
        if any(s.kind == "preparing" for s in found.values()) != polling:
            st.rerun()
        with st.container(horizontal=True, key=f"combined_{task_id}"):
            for excel, kind, label, preparing in _FORMATS:
                now, key = found[excel], f"dl_combined_{kind}_{task_id}"
                if now.kind == "refused":
                    continue  # said under the buttons
                if now.kind == "preparing":
                    st.button(preparing, icon=":material/hourglass_top:", disabled=True, key=key)
                    continue
                if now.kind == "ready" and state.pop(f"want_combined_{kind}_{task_id}", False):
                    fetch(excel, kind)  # asked for before it was made: fetch it now
                act = fetch if now.kind == "ready" else start
                st.button(label, icon=":material/download:", on_click=act, args=(excel, kind), key=key)
            for _excel, kind, *_ in _FORMATS:
                direct.save(
                    key=f"save_combined_{kind}_{task_id}", url=state.pop(f"combined_url_{kind}_{task_id}", None)
                )
        for excel, *_ in _FORMATS:
            if found[excel].kind == "failed":
                message = fmt.plain(found[excel].message)
                st.error("The combined result could not be made: " + message, icon=":material/error:")
        if found[True].kind == "refused" and found[False].kind != "refused":
            st.caption("No Excel file of the combined result: " + fmt.plain(found[True].message) + ".")
        if message := state.pop(f"combined_error_{task_id}", None):
            st.error("The combined result cannot be downloaded: " + fmt.plain(message), icon=":material/error:")

    st.caption(
        caption
        or "The combined result is this task's result with the rows its corrections ran again in their places, "
        "in the file's order (a later correction's rows win)."
    )
    row()


def _original_combined(ctx: Context, original: TaskRecord) -> None:
    """On a correction's page: its original's combined result, once a correction of it has completed."""
    service = ctx.service
    if original.status != "completed" or not service.may_act(ctx.actor, original):
        return
    try:
        found = service.corrections_of(ctx.actor, original.task_id)
    except S3TaskError:
        return  # the original's page says so
    if not any(c.status == "completed" for c in found):
        return
    combined(
        ctx,
        original,
        caption=f"The combined result is the original “{fmt.plain(original.task_name)}”'s result with every fix in "
        "place: the rows each of its completed corrections ran again (this one too, once it has completed), in "
        "the file's order (a later correction's rows win).",
    )


def offer(ctx: Context, record: TaskRecord) -> None:
    """The upload of the corrected rows, on a completed task with rows with errors the person may act on."""
    service, actor = ctx.service, ctx.actor
    if record.status != "completed" or not has_errors(record) or not service.may_act(actor, record):
        return
    if service.export_state(actor, record.task_id, "errors-xlsx").kind == "refused":
        return  # no errors workbook (its rows are not the input's one for one): nothing to correct from
    if record.error_count <= EDITABLE_ROWS:
        fix_here(ctx, record)
    upload = st.expander(UPLOAD_LABEL, icon=":material/upload_file:", key=upload_key(record.task_id), on_change="rerun")
    with upload:
        st.caption(
            "Download “Rows with errors (.xlsx, to correct)”, fix the rows in Excel (keep the “row in file” "
            "column as it is; the error column may stay or go) and upload it here, as .xlsx or .csv. A new "
            f"task with this task's type and settings runs only those rows, {_linked(record)}."
        )
        # The file picker only once opened (Streamlit draws a closed section's body too): on every first open of
        # a result with errors, the browser fetched and drew one before the result's rows showed (issue 36
        # item 17, BENCHMARKS.md).
        if not upload.open:
            return
        uploaded = st.file_uploader("Corrected rows", type=["xlsx", "csv"], key=f"corrected_{record.task_id}")
        if st.button("Run the corrected rows", icon=":material/play_arrow:", disabled=uploaded is None):
            assert uploaded is not None
            try:
                made = service.submit_correction(actor, record.task_id, uploaded.getvalue())
            except S3TaskError as e:
                st.error("The corrected rows were not run: " + fmt.plain(e), icon=":material/error:")
                return
            st.switch_page(TASK, query_params={"id": made.task_id})


def fix_here(ctx: Context, record: TaskRecord) -> None:
    """The rows with errors (up to EDITABLE_ROWS) in an editable grid; "Run these rows again" sends them as
    they are in the grid, through the same path as an uploaded file (a CSV of the errors workbook's columns)."""
    service, actor, task_id = ctx.service, ctx.actor, record.task_id
    # Drawn only once opened (Streamlit runs a closed expander's body too): its rows come from the errors
    # workbook, which the first read makes from the whole result — seconds on a first open of the page
    # (issue 36 item 17), spent only by whoever opens it.
    fix = st.expander(FIX_LABEL, icon=":material/edit:", key=fix_key(task_id), on_change="rerun")
    with fix:
        if not fix.open:
            return
        try:
            with st.spinner("Reading the rows with errors…"):
                names, rows = service.rows_to_correct(actor, task_id)
        except S3TaskError as e:
            st.error("The rows with errors cannot be shown: " + fmt.plain(e), icon=":material/error:")
            return
        st.caption(
            "Change the cells that are wrong, then run the rows again: a new task with this task's type and "
            f"settings runs them, {_linked(record)}. Delete a row to leave it out; the error and the row in "
            "the file stay as they are."
        )
        frame = pd.DataFrame(rows, columns=pd.Index(names), dtype=object)
        edited = st.data_editor(
            frame,
            disabled=names[:2],  # the error and the row in the file: what the task said, where it is
            hide_index=True,
            num_rows="delete",  # rows may be left out, none added (each stands for a row of the file)
            key=f"fix_{task_id}",
            width="stretch",
        )
        if st.button(RUN_LABEL, icon=":material/play_arrow:", key=f"run_fixed_{task_id}"):
            try:
                made = service.submit_correction(actor, task_id, grid_csv(names, edited))
            except S3TaskError as e:
                st.error("The rows were not run: " + fmt.plain(e), icon=":material/error:")
                return
            st.switch_page(TASK, query_params={"id": made.task_id})


def upload_key(task_id: str) -> str:
    """The session key of the task's "Upload the corrected rows" expander: True while it is open."""
    return f"upload_open_{task_id}"


def fix_key(task_id: str) -> str:
    """The session key of the task's "Fix the rows with errors here" expander: True while it is open."""
    return f"fix_open_{task_id}"


def grid_csv(names: list[str], frame: pd.DataFrame) -> bytes:
    """The grid's rows as a CSV of the errors workbook's columns (every value quoted, so its format is plain)."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(names)
    for values in frame.itertuples(index=False):
        writer.writerow(["" if v is None or (isinstance(v, float) and v != v) else str(v) for v in values])
    return out.getvalue().encode("utf-8")
