"""The New task form's logic, as functions the page calls (``pages/new_task.py`` only lays out).

The form's session keys are defined once (:class:`FormKeys`, built from the form number, which
goes up after each submit so the next form starts empty); prefill from another task, which
fields are still missing, the format a file is read with (a CSV's delimiter and encoding, a workbook's
sheet and header row), the upload mode and a type's one-line summary are plain functions of their
inputs, unit-tested in ``tests/unit/test_new_task_form.py`` and ``tests/unit/test_new_task_workbook.py``.

A widget's starting value is given to the widget itself (``index=`` / ``value=``) on every run,
never written into its session key: Streamlit sends a value written into a widget's key to the
browser once, with that run's form, and a browser that has already sent the next request (a file
chosen before the whole form arrived) never shows it. The box then showed its own default (the
first type, "Clean up the table") while the page went on with the value in the session (issue 22,
item 0).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Hashable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from s3task.csvio import XLSX, InputFormat
from s3task.errors import InvalidInput
from s3task.handlers import TaskType, columns
from s3task.handlers.columns import Need
from s3task.record import TaskRecord
from s3task.tasks import recipes
from s3task.tasks.recipes import Recipe

from .csvfile import Inspection

#: The session key of the form number, bumped after a successful submit so the form starts empty.
FORM_NUMBER = "new_task_form"
#: Set (to the browser's error) once the browser has shown it cannot reach the store: from then on
#: this session uploads through Streamlit's uploader.
FALLBACK = "upload_fallback"
#: The type a new form starts with: it keeps every row and changes nothing, so a first run shows
#: that the file reads as intended before anything is changed (see docs/APP.md).
DEFAULT_TYPE = "copy"
NAME_CHARS = 200


@dataclass(frozen=True)
class FormKeys:
    """The session keys of one form (form number ``form``).

    ``variant`` names a recipe the form was filled in with: the widgets a recipe sets (the type box,
    the settings, the format and column boxes) then have keys of their own, so the browser draws them
    afresh on the recipe's values. (Dropping a widget's value from the session does not change what a
    browser that already shows the widget shows: its old value would stay on screen and come back.)
    """

    form: int
    variant: str = ""

    def _set(self, key: str) -> str:
        """The key of a widget a recipe sets."""
        return f"{key}__{self.variant}" if self.variant else key

    @property
    def name(self) -> str:
        return f"name_{self.form}"

    @property
    def type(self) -> str:
        return self._set(f"type_{self.form}")

    @property
    def file(self) -> str:
        """Streamlit's uploader (the fallback)."""
        return f"file_{self.form}"

    @property
    def upload(self) -> str:
        """The direct-upload component."""
        return f"upload_{self.form}"

    @property
    def plan(self) -> str:
        """The upload under way (a :class:`ui.direct.Plan`)."""
        return f"upload_plan_{self.form}"

    @property
    def note(self) -> str:
        """A one-time message about the last upload: ``(kind, text)``."""
        return f"upload_note_{self.form}"

    @property
    def prefilled(self) -> str:
        """The :class:`Prefill` this form was filled in with."""
        return f"prefilled_{self.form}"

    def param(self, type_name: str, param_name: str) -> str:
        return self._set(f"param_{self.form}_{type_name}_{param_name}")

    def format(self, file_key: str) -> tuple[str, str]:
        """The two format choices (delimiter, encoding) for one chosen file: a new file is detected afresh."""
        return self._set(f"delimiter_{self.form}_{file_key}"), self._set(f"encoding_{self.form}_{file_key}")

    def sheet(self, file_key: str) -> str:
        """A workbook's choice of sheet, for one chosen file."""
        return self._set(f"sheet_{self.form}_{file_key}")

    def header(self, file_key: str, sheet: str) -> str:
        """A workbook's header row, for one sheet of one chosen file: another sheet has its header found afresh."""
        return self._set(f"header_{self.form}_{file_key}_{sheet}")

    def column(self, type_name: str, param_name: str, file_key: str) -> str:
        """The box that picks a needed column (s3task.handlers.columns) of one file: a new file is matched afresh."""
        return self._set(f"column_{self.form}_{type_name}_{param_name}_{file_key}")

    @property
    def recipe(self) -> str:
        """The :class:`Prefill` of the recipe the person chose to use for this form."""
        return f"recipe_{self.form}"

    @property
    def recipe_offer(self) -> str:
        """The recipe offered for the chosen file's header (looked up once per file)."""
        return f"recipe_offer_{self.form}"

    @property
    def inspected(self) -> str:
        """The last file inspected and how (a workbook is read once per choice, not on every run of the page)."""
        return f"inspected_{self.form}"


@dataclass(frozen=True)
class Prefill:
    """What a form filled in from a task starts with, and the note that says so."""

    source_id: str
    note: str
    name: str = ""
    type_name: str | None = None
    #: Parameter values by their session key (:meth:`FormKeys.param`).
    params: Mapping[str, Any] = field(default_factory=dict)
    input_format: InputFormat | None = None
    #: The recipe it was filled in with: a task of its type made from the form names it
    recipe: Recipe | None = None

    def recipe_for(self, task_type: str) -> Recipe | None:
        """The recipe a task of ``task_type`` made from this form is made from (None: its type was changed)."""
        return self.recipe if self.recipe is not None and self.recipe.task_type == task_type else None


def prefill(
    keys: FormKeys,
    source_id: str,
    source: TaskRecord | None,
    types: Sequence[type[TaskType]],
    params: Mapping[str, Any] | None = None,
) -> Prefill:
    """The form filled in from the task ``source`` (None: not there, or not the user's to see), whose parameters
    are ``params`` (its step list included; left out: its record's)."""
    task_type = next((t for t in types if source is not None and t.name == source.task_type), None)
    if source is None or task_type is None:
        return Prefill(source_id, f"There is no task {source_id[:40]!r} to start from, so the form starts empty.")
    given = source.payload if params is None else params
    values = {
        keys.param(task_type.name, p.name): given[p.name] for p in task_type.params if given.get(p.name) is not None
    }
    input_format = None
    with contextlib.suppress(InvalidInput):  # never submitted, so never settled: detect it from the file
        input_format = source.read_as
    note = f"Filled in from the task “{source.task_name}”: pick the corrected file and submit."
    return Prefill(source_id, note, source.task_name, task_type.name, values, input_format)


def recipe_keys(form: int, recipe: Recipe) -> FormKeys:
    """The keys of a form filled in with ``recipe`` (see :class:`FormKeys`)."""
    return FormKeys(form, "recipe_" + recipes.slug(recipe.name))


def from_recipe(keys: FormKeys, recipe: Recipe) -> Prefill:
    """The form filled in from a recipe (``keys``: :func:`recipe_keys`): its type, settings (the columns it
    names among them) and input format."""
    params = {keys.param(recipe.task_type, name): value for name, value in recipe.params.items() if value is not None}
    input_format = None
    with contextlib.suppress(InvalidInput):
        input_format = InputFormat.from_dict(recipe.input_format)
    note = f"Filled in with the recipe “{recipe.name}”: check the preview and submit."
    return Prefill(keys.variant, note, "", recipe.task_type, params, input_format, recipe)


#: The choice of a needed column's box that is no column: "choose one".
NO_COLUMN = ""


@dataclass(frozen=True)
class ColumnChoice:
    """A needed column's box: its options (the file's columns), the one it starts on, the line under it."""

    options: list[str]
    index: int
    line: str


def column_choice(need: Need, inspection: Inspection, chosen: str) -> ColumnChoice:
    """How a column the task type needs is matched in the chosen file (``chosen``: the box's value, or
    the one a recipe or another task named): by the same rules as submit, on the preview's rows."""
    names = list(inspection.columns)
    sample = preview_sample(inspection)
    line = ""
    try:
        match = columns.match(need, names, sample, chosen)
    except InvalidInput:  # named by a recipe or an earlier task, but not in this file
        match = columns.match(need, names, sample)
        line = f"This file has no column “{chosen}”. "
    options = names if match.column is not None else [NO_COLUMN, *names]
    if match.column is None:
        line += f"No {need.label} column found: choose the column that holds it."
    else:
        described = match.describe()
        line += described[:1].upper() + described[1:] + "."
    return ColumnChoice(options, options.index(match.column or NO_COLUMN), line)


def preview_sample(inspection: Inspection) -> dict[str, list[str]]:
    """The first rows read (up to 200), by column, as text: what a match's look at the values sees on the
    page, as submit's does, and what the step builder's preview runs over."""
    frame = inspection.rows if inspection.rows is not None else inspection.preview
    if frame is None or frame.empty:
        return {}
    return {str(c): ["" if v is None else str(v) for v in frame[c].tolist()] for c in frame.columns}


def describe_format(stored: Mapping[str, Any]) -> str:
    """A stored input format in words ("semicolons, UTF-8"), or what a format that does not read says."""
    try:
        return InputFormat.from_dict(stored).describe()
    except InvalidInput as e:
        return str(e)


def in_force(stored: Prefill | None, source_id: str | None) -> Prefill | None:
    """The prefill this run of the page uses: only while it is the page opened from that task (``?from=``)."""
    return stored if stored is not None and stored.source_id == source_id else None


def form_type(types: Sequence[type[TaskType]], current: object, prefilled: Prefill | None = None) -> type[TaskType]:
    """The type the form shows: the box's own value, else the prefilled type, else the default."""
    for wanted in (getattr(current, "name", None), prefilled.type_name if prefilled else None, DEFAULT_TYPE):
        found = next((t for t in types if t.name == wanted), None)
        if found is not None:
            return found
    return types[0]


def name_from_file(current_name: str, file_name: str) -> str | None:
    """The name an unnamed task takes from its file (None: it has a name; the user can still change it)."""
    return None if current_name.strip() else Path(file_name).stem[:NAME_CHARS]


def missing(
    name: str, inspection: Inspection | None, unmatched: Sequence[str] = (), wanting: Sequence[str] = ()
) -> tuple[str, ...]:
    """What the form still needs before it can be submitted (empty: Submit is enabled); ``unmatched``:
    the labels of the columns the task type needs that no column of the file was chosen for; ``wanting``:
    what else the settings need, in words (a step list's "a fix for step 2 (Remove columns)")."""
    needed = []
    if not name.strip():
        needed.append("a task name")
    if inspection is None:
        needed.append("a CSV or Excel file")
    elif not inspection.ok:
        needed.append("a CSV or Excel file that can be read")
    needed += [f"the {label} column" for label in unmatched]
    needed += list(wanting)
    return tuple(needed)


def chosen_format(
    values: Mapping[Any, Any], keys: FormKeys, file_key: str, prefilled: InputFormat | None
) -> InputFormat | None:
    """The format the user chose for this file — a CSV's delimiter and encoding, or a workbook's sheet and
    header row (the header of that sheet: None, found) — else the one the form was filled in with; None:
    what the file shows. (The inspection takes a format only where it is of the file's kind.)"""
    delimiter_key, encoding_key = keys.format(file_key)
    if delimiter_key in values and encoding_key in values:
        return InputFormat(values[delimiter_key], values[encoding_key])
    sheet = values.get(keys.sheet(file_key))
    if isinstance(sheet, str):
        header = values.get(keys.header(file_key, sheet))
        return InputFormat(kind=XLSX, sheet=sheet, header_row=int(header) if header is not None else None)
    return prefilled


T = TypeVar("T")


def remembered(store: MutableMapping[Any, Any], key: str, signature: Hashable, make: Callable[[], T]) -> T:
    """``make()``, kept in ``store[key]`` with its ``signature`` and made again only when that changes."""
    kept = store.get(key)
    if isinstance(kept, tuple) and len(kept) == 2 and kept[0] == signature:
        return kept[1]  # type: ignore[no-any-return]
    value = make()
    store[key] = (signature, value)
    return value


def to_submit(needed: Sequence[str]) -> str:
    """The line under the form that says what is missing ("" when nothing is)."""
    if not needed:
        return ""
    listed = ", ".join(needed[:-1]) + " and " + needed[-1] if len(needed) > 1 else needed[0]
    return f"To submit, add {listed}."


@dataclass(frozen=True)
class UploadMode:
    """How the chosen file reaches the store, and the size limit that applies."""

    #: True: the browser sends the file to the store itself; False: Streamlit's uploader, through the app.
    direct: bool
    #: The largest file the page accepts (None: no limit of the app's; S3 has its own).
    limit_bytes: int | None
    #: ", up to N MB" for the line about files, or "".
    limit_text: str


def upload_mode(*, direct_upload: bool, fell_back: bool, signs_urls: bool, limit_mb: int) -> UploadMode:
    """The browser uploads straight to the store unless that is off or it has shown it cannot reach it.

    The app's limit applies when the bytes pass through the app: Streamlit's uploader, or the
    signed route of a store that has no URLs of its own (``signs_urls``: the app signs them).
    """
    direct = direct_upload and not fell_back
    through_app = not direct or signs_urls
    if not through_app:
        return UploadMode(True, None, "")
    return UploadMode(direct, limit_mb * 2**20, f", up to {limit_mb} MB")


def summary(description: str) -> str:
    """A type's description in one line: up to its first full stop, colon or semicolon."""
    match = re.search(r"[.:;](\s|$)", description)
    return (description[: match.start()] if match else description).strip() + "."


def says_more(description: str) -> bool:
    """Whether the description says more than its one line (then the page offers the rest)."""
    return summary(description).rstrip(".") != description.strip().rstrip(".")
