"""A lookup step's reference table in the step builder: a completed task's id, or a file uploaded in the step.

A reference file uploaded here becomes a task of its own ("Reference: managers.csv", type ``copy``) through
the door (``service.steps.submit_reference``, sent through the app as the New task page's fallback uploader sends a
file), so it is read as a file given with no format is (its delimiter and encoding found from it; a workbook's
first sheet), stored, access-checked and kept as every result is. The step
says "Preparing the reference table…" while a worker (the app's own, woken by the submit) copies it; a
fragment looks again every ``refresh_seconds`` and reruns the page when the task has ended. A completed copy
that a lookup may use (``service.steps.check_reference``: its rows within the cap) becomes the step's
reference, so the preview reads it; a file refused, a copy that failed or a result too long is said in the
step in words, and the step keeps the reference it had.

What is kept, in the step's item of the builder's list (``ui/step_builder.py``): ``ref_pending`` (the copy
task's id and the file's name while it runs), ``ref_said`` (what the step says after it: a refusal, or which
file it uses), ``ref_made`` (bumped when a reference is set, so the box shows it afresh). The session keeps
which task each file became (by its name and its bytes' SHA-256), so the same file chosen again, in this step
or another, is the same task, not a copy more, unless that task was cancelled or failed.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import streamlit as st

from s3task.errors import S3TaskError
from s3task.states import State
from s3task.tasks import reference_name

from . import format as fmt
from .csvfile import EXTENSIONS, WORKBOOK_EXTENSIONS

if TYPE_CHECKING:
    from s3task.steps.spec import Field

    from .context import Context

UPLOAD_LABEL = "Upload a reference file…"
PREPARING = "Preparing the reference table…"
#: A reference workbook has no sheet to choose here: what is said when its sheet cannot be read.
ONE_SHEET = (
    "A reference workbook is read from the sheet it opens on in Excel: open it on the table's sheet and save "
    "it, or save that sheet as a CSV file."
)
#: A reference file is read as a file given with no format is: what is said when its copy failed.
CHOSEN = (
    "To choose how it is read (its “Text encoding”, its “Values separated by”, its sheet), make it a task on the "
    "New task page (Copy rows unchanged) and give that task's id as the reference table."
)
#: Streamlit cuts the uploader's line of file kinds at the box's edge ("CSV, TXT, TSV, XLSX, X…" on a phone):
#: in a reference's uploader it wraps instead, so every kind accepted is shown.
_WRAP_KINDS = """
<style>
[class*="-reference-file-"] [data-testid="stFileUploaderDropzoneInstructions"],
[class*="-reference-file-"] [data-testid="stFileUploaderDropzoneInstructions"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}
</style>
"""
#: The session's record of the tasks reference files became: {(file name, SHA-256 of its bytes): task id}.
_FILES = "step_reference_files"
#: The copy task's states while a worker may still complete it (a failed attempt is retried by itself).
_WAITING = (State.CREATED, State.QUEUED, State.RUNNING, State.FAILED)


def reference_field(ctx: Context, item: dict[str, Any], f: Field, key: str) -> str:
    """The reference box (a task's id, typed or pasted), and under it the reference file's upload or its
    progress; returns the step's reference."""
    step = item["json"]
    if item.get("ref_pending"):
        _still_preparing(ctx, item)  # settled now, if its task has ended (the fragment below looks meanwhile)
    value = st.text_input(f.title, value=str(step.get(f.name) or ""), help=f.help or
                          "The id of a completed task of yours (its page shows it), or upload a file below.",
                          key=f"{key}-{item.get('ref_made', 0)}")  # fmt: skip
    said = item.get("ref_said")  # (how, words, the reference then): said while the box still holds that
    if said and said[2] == value.strip():
        if said[0] == "used":
            st.caption(fmt.plain(said[1]))
        else:
            st.error(fmt.plain(said[1]), icon=":material/error:")
    elif value.strip() and (problem := _problem(ctx, item, value.strip())):
        st.error(fmt.plain(problem), icon=":material/error:")
    if item.get("ref_pending"):
        _preparing(ctx, item)
    else:
        st.html(_WRAP_KINDS)
        st.file_uploader(UPLOAD_LABEL, type=[ext.lstrip(".") for ext in EXTENSIONS],
                         max_upload_size=ctx.settings.max_upload_mb, key=f"{key}-file-{item.get('ref_made', 0)}",
                         on_change=_uploaded, args=(ctx, item, f"{key}-file-{item.get('ref_made', 0)}"),
                         help="A CSV file or an Excel workbook (its first sheet, the one Excel opens on) whose rows "
                         "the lookup takes columns from: it becomes a task of its own, “Reference: …”, whose "
                         "result is the reference table.")  # fmt: skip
    return value.strip()


def _problem(ctx: Context, item: dict[str, Any], reference: str) -> str | None:
    """What keeps a lookup from reading the task ``reference`` (someone else's, none such, no result yet, too
    long), in words; None: nothing. Asked once a reference typed (the preview asks again as it reads it)."""
    known = item.get("ref_checked")
    if known is None or known[0] != reference:
        try:
            ctx.service.steps.check_reference(ctx.actor, reference, who="This reference")
        except S3TaskError as e:
            known = (reference, _sentence(e))
        else:
            known = (reference, None)
        item["ref_checked"] = known
    return known[1]


def _uploaded(ctx: Context, item: dict[str, Any], widget: str) -> None:
    """The file just chosen becomes a copy task (the app's worker is woken by the submit), or the task it
    already became in this session; refused: said."""
    uploaded = st.session_state.get(widget)
    if uploaded is None:
        return
    item.pop("ref_said", None)
    data = uploaded.getvalue()
    known: dict[tuple[str, str], str] = st.session_state.setdefault(_FILES, {})
    same = (uploaded.name, hashlib.sha256(data).hexdigest())
    if (task_id := known.get(same)) is not None and _reusable(ctx, task_id):
        item["ref_pending"] = (task_id, uploaded.name)  # settled at the next look, as a new one is
        item["ref_made"] = item.get("ref_made", 0) + 1
        return
    try:
        made = ctx.service.steps.submit_reference(ctx.actor, uploaded.name, data)
    except S3TaskError as e:  # nothing is left behind (the service saw to it); the step stays as it was
        said = f"{uploaded.name} cannot be the reference table: {_sentence(e)}"
        if uploaded.name.lower().endswith(WORKBOOK_EXTENSIONS):
            said += f" {ONE_SHEET}"
        item["ref_said"] = ("refused", said, _reference(item))
    else:
        item["ref_pending"] = (made.task_id, uploaded.name)
        known[same] = made.task_id
    item["ref_made"] = item.get("ref_made", 0) + 1  # a fresh picker next time, without this file


def _reusable(ctx: Context, task_id: str) -> bool:
    """Whether the task a file became earlier still stands for it: being copied, or copied."""
    try:
        record = ctx.service.get(ctx.actor, task_id, fresh=True)
    except S3TaskError:
        return False
    return record.state in (State.CREATED, State.QUEUED, State.RUNNING, State.COMPLETED)


def _still_preparing(ctx: Context, item: dict[str, Any]) -> bool:
    """Whether the reference file's task is still being copied; once it has ended, what it gave is settled."""
    task_id, file_name = item["ref_pending"]
    try:
        record = ctx.service.get(ctx.actor, task_id, fresh=True)
    except S3TaskError as e:
        return _settled(item, "refused", f"{file_name} cannot be the reference table: {_sentence(e)}")
    if record.state in _WAITING:
        return True
    if record.state != State.COMPLETED:
        why = record.last_error or fmt.status_label(record).lower()
        return _settled(item, "refused", f"{file_name} cannot be the reference table: {_sentence(why)} {CHOSEN}")
    try:
        ctx.service.steps.check_reference(ctx.actor, task_id, who=f"The reference file {file_name}")
    except S3TaskError as e:
        return _settled(item, "refused", _sentence(e))
    item["json"]["reference"] = task_id
    rows = record.row_count or 0
    used = f"Uses {file_name} ({fmt.counted(rows, 'row')}), kept as the task “{reference_name(file_name)}”: {task_id}."
    return _settled(item, "used", used)


def _reference(item: dict[str, Any]) -> str:
    return str(item["json"].get("reference") or "").strip()


def _settled(item: dict[str, Any], how: str, words: str) -> bool:
    """The copy has ended: what the step says of it, and a fresh box (it starts from the step's reference)."""
    item.pop("ref_pending", None)
    item["ref_said"] = (how, words, _reference(item))
    item["ref_made"] = item.get("ref_made", 0) + 1
    return False


def _preparing(ctx: Context, item: dict[str, Any]) -> None:
    """The copy's progress, looked at again every ``refresh_seconds``; the whole page reruns when it ends."""

    @st.fragment(run_every=ctx.app.refresh_seconds)
    def look() -> None:
        if item.get("ref_pending") and not _still_preparing(ctx, item):
            st.rerun()  # the whole page: the step, its preview and what Submit needs
        st.info(f"{PREPARING} ({fmt.plain(item['ref_pending'][1])})", icon=":material/hourglass_top:")

    look()


def _sentence(e: object) -> str:
    text = str(e).strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
