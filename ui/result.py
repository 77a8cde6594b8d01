"""The result of a completed task on its page: the downloads first, then a preview of the rows, with a
search, a filter and a sort over every row above it (:mod:`ui.explore_view`).

Every download is a button whose callback asks for a fresh URL (a presigned GET on S3, the
app's signed ``/transfer`` route on a local store); the browser fetches the file from there,
so the app never holds it. The CSV is the output as the worker wrote it. The Excel workbook,
the errors-only CSV and the CSV with exact values are copies made from it on first request
(:mod:`s3task.exports`): the button starts the making in the background, says "Preparing…"
(the part of the page it sits in re-reads every second, the rest of the page stays usable),
and the download starts by itself when the copy is ready.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from s3task import exports, handlers
from s3task.errors import NotFound, S3TaskError, UnknownTaskType
from s3task.record import TaskRecord

from . import direct, explore_view, services
from . import format as fmt
from .context import Context

#: How often a "Preparing…" button looks again.
POLL_SECONDS = 1.0
FIRST_ROWS = "First 100 rows"
ROUND_TRIP = (
    ":material/edit: Corrected rows run again as a task linked to this one: “Upload the corrected rows” "
    "(or, for a few, “Fix the rows with errors here”) at the foot of this page."
)
#: The preview grid's own toolbar offers "Download as CSV" of the rows it holds (100 at most),
#: which is easily taken for the result. Streamlit (1.67) has no per-grid option for it
#: (``client.disableDataExport`` turns export and copying off in every grid of the app), so
#: the preview hides that one button; search and full screen stay. The toolbar sits over the
#: top edge of the grid, so the grid keeps some room above it for the toolbar instead of
#: covering the errors toggle (on a phone it is always shown).
_PREVIEW_CSS = """
<style>
.st-key-result_preview [data-testid="stElementToolbarButton"]:has(button[aria-label="Download as CSV"]),
.st-key-result_preview button[aria-label="Download as CSV"] { display: none !important; }
.st-key-result_preview [data-testid="stDataFrame"] { margin-top: 2.5rem; }
</style>
"""


def marks_errors(task_type: str) -> bool:
    """Does this task type write an error column (so an errors-only view means something)?"""
    try:
        return handlers.get(task_type).error_column is not None
    except (UnknownTaskType, AttributeError):
        return True


def has_errors(record: TaskRecord) -> bool:
    return marks_errors(record.task_type) and record.error_count > 0


def protection_note(record: TaskRecord, excel: bool = True) -> str | None:
    """One line on the ``'`` the CSV has before some values, or None when it has none. ``excel``:
    an Excel file is offered (so the line may point to it; else to the CSV with exact values)."""
    n = record.protected_count
    if not n:
        return None
    cells = "1 value has" if n == 1 else f"{n:,} values have"
    shown = (
        "The preview and the Excel file show them as they are."
        if excel
        else "The preview and the CSV with exact values (under “For pandas and scripts”) show them as they are."
    )
    return (
        f"In the CSV file {cells} a ' in front, so that a spreadsheet shows them as text instead of running "
        f"them as formulas (they start with = + - @ or '). {shown}"
    )


def downloads(ctx: Context, record: TaskRecord) -> None:
    """The result's downloads (the first thing on a completed task's page)."""
    service, actor, task_id = ctx.service, ctx.actor, record.task_id
    st.subheader("Result")
    if not service.may_act(actor, record):
        st.info(f"Only {fmt.plain(record.created_by)} or an operator can see and download the result of this task.")
        return
    try:
        size: int | None = service.output_size(actor, task_id)
    except NotFound:
        st.warning(
            "The result file is no longer in the task store (finished tasks' files may be kept for a limited time).",
            icon=":material/folder_off:",
        )
        return
    except S3TaskError:
        size = None  # the button says what is wrong if the store is really down
    copies: list[Copy] = [Copy("xlsx", "Excel file (.xlsx)", "Preparing the Excel file…")]
    if has_errors(record):
        copies.append(Copy("errors", f"Only the rows with errors ({record.error_count:,})", "Preparing the rows…"))
        copies.append(Copy("errors-xlsx", "Rows with errors (.xlsx, to correct)", "Preparing the rows…"))
    _buttons(ctx, record, copies, csv=True)
    st.caption(fmt.plain(service.output_filename(record)) + (f" · {fmt.size(size)}" if size is not None else ""))
    if has_errors(record) and service.export_state(actor, task_id, "errors-xlsx").kind != "refused":
        st.caption(ROUND_TRIP)  # the way back is at the foot of the page (ui/corrections.py): say so up here
    refused = service.export_state(actor, task_id, "xlsx")
    if refused.kind == "refused":
        st.caption("No Excel file: " + fmt.plain(refused.message) + ".")
    note = protection_note(record, excel=refused.kind != "refused")
    if note:
        st.caption(":material/info: " + note)
    with st.expander("For pandas and scripts"):
        st.write(
            "The CSV with exact values has no ' added before any value. It is also the API's "
            "`GET /api/tasks/{id}/output?variant=exact` and the command `s3task download ID --exact`. "
            "The Parquet file gives each column a type when all its values allow one (true/false, whole "
            "numbers without leading zeros, numbers, dates, date-times; else text): "
            "`?variant=parquet`, `s3task download ID --parquet`."
        )
        copies = [
            Copy("exact", "CSV with exact values", "Preparing the CSV…"),
            Copy("parquet", "Parquet file (typed columns)", "Preparing the Parquet file…"),
        ]
        _buttons(ctx, record, copies, csv=False)


def _fresh_url(ctx: Context, task_id: str, variant: exports.Variant) -> Callable[[], None]:
    state = st.session_state
    url_key, error_key = f"download_url_{variant}_{task_id}", f"download_error_{variant}_{task_id}"

    def fresh_url() -> None:
        try:
            url = ctx.service.output_url(ctx.actor, task_id, variant)
        except S3TaskError as e:
            state[error_key] = str(e)
            return
        if url is None:
            state[error_key] = "this task store cannot make download links"
        state[url_key] = url

    return fresh_url


def _save(task_id: str, variant: exports.Variant) -> None:
    """The invisible part that makes the browser fetch a URL just made (placed in the row of buttons)."""
    direct.save(key=f"save_{variant}_{task_id}", url=st.session_state.pop(f"download_url_{variant}_{task_id}", None))


def _errors(task_id: str, variant: exports.Variant) -> None:
    error_key = f"download_error_{variant}_{task_id}"
    if error_key in st.session_state:
        message = fmt.plain(st.session_state.pop(error_key))
        st.error("The file cannot be downloaded: " + message, icon=":material/error:")


def _download(ctx: Context, record: TaskRecord, variant: exports.Variant, label: str, *, primary: bool) -> None:
    """A button that makes a fresh download URL when clicked; the browser fetches the file from there."""
    st.button(
        label,
        type="primary" if primary else "secondary",
        icon=":material/download:",
        on_click=_fresh_url(ctx, record.task_id, variant),
        key=f"dl_{variant}_{record.task_id}",
    )


@dataclass(frozen=True)
class Copy:
    """A download of a copy made on first request (:mod:`s3task.exports`)."""

    variant: exports.Variant
    label: str
    preparing: str


def _buttons(ctx: Context, record: TaskRecord, copies: list[Copy], *, csv: bool) -> None:
    """The download buttons in a row: the CSV (``csv``), then each copy, which is made when first asked for.

    A copy's button starts the making and says it is being prepared; the row then re-reads
    every second (a fragment: the rest of the page stays as it is) and the download starts
    by itself once the copy is made.
    """
    service, actor, task_id = ctx.service, ctx.actor, record.task_id
    state = st.session_state

    def states() -> dict[str, exports.CopyState]:
        return {c.variant: service.export_state(actor, task_id, c.variant) for c in copies}

    def preparing(found: dict[str, exports.CopyState]) -> bool:
        return any(s.kind == "preparing" for s in found.values())

    polling = preparing(states())

    def start(variant: exports.Variant) -> None:
        state[f"want_{variant}_{task_id}"] = True
        try:
            service.prepare_output(actor, task_id, variant)
        except S3TaskError as e:
            state[f"download_error_{variant}_{task_id}"] = str(e)

    @st.fragment(run_every=POLL_SECONDS if polling else None)
    def row() -> None:
        found = states()
        if preparing(found) != polling:
            st.rerun()  # start (or stop) looking again every second
        shown: list[exports.Variant] = [c.variant for c in copies]
        if csv:
            shown.insert(0, "csv")
        with st.container(horizontal=True, key=f"downloads_{copies[0].variant}_{task_id}"):
            if csv:
                _download(ctx, record, "csv", "Download result (CSV)", primary=True)
            for copy in copies:
                now, key = found[copy.variant], f"dl_{copy.variant}_{task_id}"
                if now.kind == "refused":
                    continue  # said under the buttons (Excel), or never offered (no errors)
                if now.kind == "preparing":
                    st.button(copy.preparing, icon=":material/hourglass_top:", disabled=True, key=key)
                elif now.kind == "ready":
                    fetch = _fresh_url(ctx, task_id, copy.variant)
                    if state.pop(f"want_{copy.variant}_{task_id}", False):
                        fetch()  # asked for before it was made: fetch it now
                    st.button(copy.label, icon=":material/download:", on_click=fetch, key=key)
                else:
                    st.button(copy.label, icon=":material/download:", on_click=start, args=(copy.variant,), key=key)
            for variant in shown:
                _save(task_id, variant)
        for variant in shown:
            _errors(task_id, variant)
        for copy in copies:
            if found[copy.variant].kind == "failed":
                message = fmt.plain(found[copy.variant].message)
                st.error(f"The {exports.LABELS[copy.variant]} could not be made: {message}", icon=":material/error:")

    row()


def preview(ctx: Context, record: TaskRecord) -> None:
    """The first 100 rows (or the first 100 with errors, error column first), values as they are."""
    service, actor = ctx.service, ctx.actor
    if not service.may_act(actor, record):
        return
    errors = record.error_count
    errors_only = False
    if has_errors(record):
        view = st.segmented_control(
            "Show",
            [FIRST_ROWS, f"Only rows with errors ({errors:,})"],
            default=FIRST_ROWS,
            required=True,
            key=f"view_{record.task_id}",
            label_visibility="collapsed",
        )
        errors_only = view != FIRST_ROWS
    path = record.output_object_path or ""
    try:
        frame = services.output_preview(service, actor, ctx.settings.store, record.task_id, path, errors_only)
        names = [] if errors_only else services.output_columns(service, actor, ctx.settings.store, record.task_id, path)
    except S3TaskError as e:
        st.error("Could not read the result: " + fmt.plain(e), icon=":material/error:")
        return
    if errors_only and frame.empty:
        st.write("No row has an error.")
        return
    st.html(_PREVIEW_CSS)
    if not errors_only and explore_view.explore(ctx, record, names):
        return  # a search, filter or sort is set: its answer over every row is shown instead
    with st.container(key="result_preview"):
        st.dataframe(frame, hide_index=True, width="stretch")
    shown = len(frame)
    total = errors if errors_only else _rows(record)
    if total > shown:
        more = "Search or sort above to reach any row, or download" if not errors_only else "Download"
        st.caption(f"Showing the first {shown:,} of {total:,} rows. {more} the file for all of them.")


def _rows(record: TaskRecord) -> int:
    return record.row_count if record.row_count is not None else record.processed_count
