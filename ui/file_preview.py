"""The New task page's file: the picker (the browser's own, which sends the file straight to the store, or
Streamlit's uploader as the fallback), the preview of the file's first rows, and the choices that change
how it is read — a workbook's sheet and header row, a CSV's delimiter and text encoding — each of which
reads the preview again (once per choice, not on every run)."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from s3task.csvio import DELIMITERS, ENCODINGS, EXCEL_ROWS

from . import direct
from . import format as fmt
from . import task_form as tf
from .browser_upload import on_report
from .csvfile import EXTENSIONS, PREVIEW_ROWS, Inspection, inspect_upload
from .direct import Chosen, Plan
from .new_task_form import NewTaskForm
from .workbookfile import DATES, header_line, sheet_label

ABOUT_FILES = (
    "A .csv file (or Excel's .txt “Unicode text”) with a header row: values separated by commas, semicolons, "
    "tabs or pipes; UTF-8, UTF-16 or Windows text. Or an Excel workbook (.xlsx, .xlsm): one sheet, its header "
    "row found under any title"
)


@dataclass
class Picked:
    """The file chosen on this run (none yet: all None): in the browser (``chosen``) or sent through the app
    (``upload``), its key for the widgets that belong to it, and its preview."""

    chosen: Chosen | None = None
    upload: Any = None
    file_key: str = ""
    inspection: Inspection | None = None


def picker(page: NewTaskForm, mode: tf.UploadMode, plan: Plan | None) -> Picked:
    """The file picker of the upload ``mode``; with the direct upload, what the browser reports of an upload
    under way is acted on first (ui/browser_upload.py)."""
    keys, state, got = page.keys, page.state, Picked()
    if mode.direct:
        result = direct.uploader(key=keys.upload, plan=plan, owner=keys.upload, on_file_change=page.name_from_chosen)
        st.caption(f"{ABOUT_FILES}{mode.limit_text}.")
        if plan is not None:
            on_report(page, plan, result)
        got.chosen = Chosen.from_state(result.get("file"))
        if got.chosen is not None:
            chosen = got.chosen
            got.file_key = chosen.id
            # A workbook's preview reads the ranges the browser sent; a CSV's, its first bytes cut after a line.
            stream = chosen.sparse if chosen.ranges else lambda: io.BytesIO(chosen.preview_bytes())
            got.inspection = _inspected(page, mode, chosen.name, chosen.size, stream, got.file_key)
        return got
    limit_mb = page.ctx.settings.max_upload_mb
    if tf.FALLBACK in state:
        st.warning(
            "This page could not send the file to the task store directly "
            f"({fmt.plain(state[tf.FALLBACK])}), so this page uploads it through the app instead, "
            f"up to {limit_mb} MB. Choose the file again.",
            icon=":material/cloud_off:",
        )
    got.upload = st.file_uploader(
        "CSV or Excel file",
        type=[ext.lstrip(".") for ext in EXTENSIONS],
        max_upload_size=limit_mb,
        help=f"{ABOUT_FILES}, up to {limit_mb} MB.",
        key=keys.file,
        on_change=page.name_from_file,
    )
    if got.upload is not None:
        upload = got.upload
        got.file_key = upload.file_id
        got.inspection = _inspected(page, mode, upload.name, upload.size, lambda: upload, got.file_key)
    return got


def _inspected(
    page: NewTaskForm, mode: tf.UploadMode, name: str, size: int, stream: Callable[[], Any], file_key: str
) -> Inspection:
    """The file checked with the format chosen for it; a workbook is read once per choice, not on every run."""
    prefilled = page.prefilled.input_format if page.prefilled else None
    read_as = tf.chosen_format(page.state, page.keys, file_key, prefilled)
    signature = (file_key, name, size, read_as, mode.limit_bytes)

    def check() -> Inspection:
        return inspect_upload(name, size, stream(), max_bytes=mode.limit_bytes, input_format=read_as)

    return tf.remembered(page.state, page.keys.inspected, signature, check)


def preview(keys: tf.FormKeys, inspection: Inspection, file_key: str) -> None:
    """How the file is read (the choices that change it), what is wrong with it, or its first rows."""
    if inspection.detected is not None:
        st.subheader("Preview")
        if inspection.sheets and inspection.input_format and inspection.input_format.sheet:
            _workbook_choice(keys, inspection, file_key)
        elif not inspection.is_workbook:
            _format_choice(keys, inspection, file_key)
    if not inspection.ok:
        st.error(fmt.plain(inspection.problem), icon=":material/block:")
        return
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


def _workbook_choice(keys: tf.FormKeys, inspection: Inspection, file_key: str) -> None:
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


def _format_choice(keys: tf.FormKeys, inspection: Inspection, file_key: str) -> None:
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
            index=delimiters.index(st.session_state.get(delimiter_key, used.delimiter)),
            format_func=lambda d: DELIMITERS[d].capitalize(),
            key=delimiter_key,
        )
    with right:
        st.selectbox(
            "Text encoding",
            encodings,
            index=encodings.index(st.session_state.get(encoding_key, used.encoding)),
            format_func=lambda e: ENCODINGS[e].removesuffix(" text"),
            key=encoding_key,
            help="Excel's plain “CSV” is Windows (Western European) text; “CSV UTF-8” is UTF-8; "
            "“Unicode text” is UTF-16, separated by tabs.",
        )
