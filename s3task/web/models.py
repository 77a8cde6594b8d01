"""Every body the API takes or gives, declared once (pydantic models).

The handlers build each response through these models and check each request
against them, and the OpenAPI document (:mod:`s3task.web.openapi`) is generated
from them, so the document cannot leave out a field the API returns.

The task a response carries (:class:`Task`) is derived from the record itself,
:class:`s3task.record.TaskRecord`: its fields, types and the status values come
from the dataclass, less the workers' own fields (:data:`HIDDEN`), plus what
the server works out for the caller. A field added to the record appears in
responses and in the document with no edit here. The task id's pattern is the
one :mod:`s3task.ids` checks ids with. An inbox's bodies are :mod:`s3task.web.inbox_models`'.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    create_model,
    model_serializer,
)

from ..counts import HELP, counts_of
from ..csvio import EXCEL_ROWS
from ..handlers import Param
from ..ids import _ID_RE, ID_LENGTH
from ..input_format import MAX_SHEET_NAME
from ..record import TaskRecord
from ..tasks import MAX_LIST, MAX_NAME

#: Record fields that are the workers' own and never leave the server.
HIDDEN = frozenset({"lease_token", "write_id"})
#: Tasks in a page when the caller does not say.
DEFAULT_LIMIT = 50

TASK_ID_PATTERN = f"^{_ID_RE.pattern}$"
TaskId = Annotated[
    str,
    Field(
        pattern=TASK_ID_PATTERN,
        min_length=ID_LENGTH,
        max_length=ID_LENGTH,
        description="A task id: 26 characters (Crockford base32); newer tasks sort first.",
    ),
]


RecipeName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1000,
        description="A saved recipe's name (your own, else a shared one), or as its key has it (`crm-monthly`).",
    ),
]


class _Response(BaseModel):
    """A response body: every field is always there, and nothing else is."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


class _Request(BaseModel):
    """A request body: only the declared fields, each of exactly its JSON type."""

    model_config = ConfigDict(extra="forbid", strict=True)


# --- the task ------------------------------------------------------------------------------


def _record_fields() -> dict[str, Any]:
    """The record's fields as the API shows them (all of them always present), with their types."""
    hints = typing.get_type_hints(TaskRecord)
    # input_format: the record's JSON as stored (a request's settings, or the ones the submit settled).
    sharper: dict[str, Any] = {"task_id": TaskId, "input_format": dict[str, Any]}
    return {
        f.name: (sharper.get(f.name, hints[f.name]), ...)
        for f in dataclasses.fields(TaskRecord)
        if f.name not in HIDDEN and f.name != "extra"
    }


_RecordView = create_model(
    "_RecordView",
    __config__=ConfigDict(extra="allow", json_schema_serialization_defaults_required=True),
    __module__=__name__,
    **_record_fields(),
)


class Task(_RecordView):  # type: ignore[misc, valid-type]
    """A task: its record (`status.json`) without the workers' own fields (lease token, write id),
    plus what the server works out for the caller. A record written by a newer s3task may carry more
    fields; they are passed on as they are."""

    progress: float = Field(ge=0, le=1, description="0 to 1: the share of the input processed (1 once completed).")
    terminal: bool = Field(description="It will not change by itself any more (completed, abandoned, failed for good).")
    retryable: bool = Field(description="The caller may retry it now.")
    cancellable: bool = Field(description="The caller may cancel it now.")
    rows_read: int = Field(ge=0, description=HELP["rows_read"] + " While it runs: so far.")
    rows_written: int | None = Field(
        ge=0,
        description=HELP["rows_written"] + " For a summary (output_kind summary), its rows. While it runs: so far; "
        "null before the first attempt starts.",
    )
    rows_with_errors: int | None = Field(
        ge=0, description=HELP["rows_with_errors"] + " Null when the task type does not mark errors."
    )
    rows_left_out: int | None = Field(
        ge=0,
        description=HELP["rows_left_out"] + " Rows read minus rows written; null when the task type never "
        "leaves rows out (or its output is a summary).",
    )
    output_kind: Literal["rows", "summary"] = Field(
        description="rows: the result's rows are the input's rows; summary: they describe the input (a profile)."
    )


def task_of(record: TaskRecord, *, retryable: bool, cancellable: bool) -> Task:
    """The task as the API shows it to a caller who may (or may not) retry or cancel it."""
    data = record.to_dict()
    for name in HIDDEN:
        data.pop(name, None)
    counts = counts_of(record)
    computed = {
        "progress": record.progress,
        "terminal": record.is_terminal,
        **counts.as_dict(),
        "output_kind": "summary" if counts.summary else "rows",
    }
    task: Task = Task.model_validate({**data, **computed, "retryable": retryable, "cancellable": cancellable})
    return task


# --- requests ---------------------------------------------------------------------------------


class InputFormat(_Request):
    """How the input file is written: a CSV's delimiter and encoding (ignored for a workbook), a workbook's sheet
    and header row. The task's `input_format` holds the settled values once it is submitted: for a CSV
    `delimiter` and `encoding`, for a workbook `kind` (`xlsx`), `sheet` and `header_row`."""

    delimiter: Literal[",", ";", "\t", "|", "detect"] = Field(
        default=",",
        description="What separates the values: comma, semicolon, tab or pipe; `detect`: what the file's first "
        "64 KB show, settled when the task is submitted.",
    )
    encoding: Literal["utf-8", "windows-1252", "utf-16-le", "utf-16-be", "utf-16", "detect"] = Field(
        default="utf-8",
        description="The file's text encoding: UTF-8 (with or without a byte-order mark), Windows-1252 (Excel's "
        "plain 'CSV' in Western Europe), UTF-16 (Excel's 'Unicode text'; `utf-16`: the byte order its byte-order mark "
        "says); `detect`: by the byte-order mark, "
        "else UTF-8 if the first 64 KB are UTF-8, else Windows-1252.",
    )
    sheet: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_SHEET_NAME,
        description="For an Excel workbook (.xlsx, .xlsm; told from the file's first bytes): the sheet to read, by "
        "name; left out: the sheet it opens on in Excel (its active tab). Refused at submit for a CSV, or when the "
        "workbook has no such sheet. The task's `input_format` holds the sheet taken once it is submitted.",
    )
    header_row: int | None = Field(
        default=None,
        ge=1,
        le=EXCEL_ROWS,
        description="For an Excel workbook: the row that holds the column names, as Excel numbers rows (1 is the "
        "first); left out: found (a title, notes or blank rows above the table are skipped). Refused at submit "
        "for a CSV. The task's `input_format` holds the row taken once it is submitted.",
    )

    @model_serializer(mode="wrap")
    def _given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The settings as s3task.csvio.parse_input_format takes them: a workbook's only when given."""
        settings: dict[str, Any] = handler(self)
        return {key: value for key, value in settings.items() if value is not None}


class NewTask(_Request):
    """What `POST /api/tasks` takes."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"name": "June import", "type": "copy", "parameters": {}}]}
    )

    name: str = Field(
        description=f"What to call the task (in listings, and the output's file name): 1 to {MAX_NAME} characters, "
        "not all spaces."
    )
    type: str | None = Field(
        default=None,
        description="The name of a task type (GET /api/task-types); may be left out with a `recipe`, whose type it is.",
    )
    recipe: str | None = Field(
        default=None,
        min_length=1,
        max_length=80,
        description="A saved recipe's name (your own, else a shared one; `s3task recipe list`): the task takes its "
        "type, parameters and input format, and what this request gives explicitly goes on top.",
    )
    parameters: dict[str, Any] | None = Field(
        default=None,
        description="The task type's parameters by name (GET /api/task-types); none if left out. "
        "The type 'steps' takes {\"steps\": [...]}, a list as #/components/schemas/StepList describes.",
    )
    input_format: InputFormat | None = Field(
        default=None,
        description="How the input file is written; left out: comma-separated UTF-8, or for an Excel workbook its "
        "sheet it opens on with its header row found. The output is always comma-separated UTF-8.",
    )


def _whole(value: Any) -> Any:
    """A whole number as a query string spells it (as Python's `int` reads it)."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise ValueError("not a whole number") from None
    return value


def _flag(value: Any) -> Any:
    """true or false, spelled as for the settings: 1/0, true/false, yes/no, on/off, in any case."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError("not true or false")
    return value


class TaskQuery(BaseModel):
    """The query of `GET /api/tasks`; other names are ignored. A parameter left out takes its default,
    an empty one (`?cursor=`) is refused like any other value that is not valid."""

    model_config = ConfigDict(extra="ignore")

    limit: Annotated[int, BeforeValidator(_whole)] = Field(
        default=DEFAULT_LIMIT, ge=1, le=MAX_LIST, description="Tasks in this page at most."
    )
    cursor: TaskId | None = Field(default=None, description="The next_cursor of the previous page.")
    mine: Annotated[bool, BeforeValidator(_flag)] = Field(default=False, description="Only the caller's own tasks.")


class OutputQuery(BaseModel):
    """The query of `GET /api/tasks/{task_id}/output`; other names are ignored."""

    model_config = ConfigDict(extra="ignore")

    variant: Literal["csv", "exact", "errors", "xlsx", "parquet", "errors-xlsx", "combined", "combined-xlsx"] = Field(
        default="csv",
        description="Which file: `csv` the output as stored (UTF-8 with a BOM; a value a spreadsheet would run "
        "as a formula, or that starts with ', has a ' before it), `exact` the same CSV with the values exactly "
        "as produced (for pandas and scripts), `errors` only the rows with an error (error column first), "
        "`errors-xlsx` the same rows as an Excel workbook: the error, the row in the file the task read, then "
        "the input's cells as read (to fix and upload as a correction), `combined` the output with the rows its "
        "completed corrections ran again in their places (409 before one has completed; asked of a correction, "
        "its original's), `combined-xlsx` the same as an Excel workbook by the `xlsx` rule (409 above Excel's "
        "limits), "
        "`xlsx` an Excel workbook (numbers and dates where every value of a column is one Excel keeps exactly, "
        "else text cells), `parquet` a Parquet file with each column typed as its values "
        "allow (bool, int64, float64, date32, timestamp, else string; docs/API.md). The first request for exact, "
        "errors, errors-xlsx, xlsx, parquet, combined or combined-xlsx makes that file "
        "and answers when it is made (xlsx: about 12 s per 100,000 rows of 11 columns); later ones answer at once.",
    )


# --- responses --------------------------------------------------------------------------------


class ErrorBody(_Response):
    """Every error: a stable `code` to branch on and a `message` that says what to do next."""

    code: str
    message: str


class Upload(_Response):
    """Where to send the input: `PUT` the CSV file to `url` with exactly these `headers`."""

    url: str
    method: Literal["PUT"]
    headers: dict[str, str]
    expires_in: int = Field(description="Seconds the URL works for.")


class Created(_Response):
    task: Task
    upload: Upload | None = Field(
        description="None when the store cannot take uploads from clients, and for a comparison (type compare: made "
        "from two results, queued at once)."
    )


class OneTask(_Response):
    task: Task


class TaskPage(_Response):
    tasks: list[Task] = Field(description="Newest first.")
    next_cursor: TaskId | None = Field(description="Pass as cursor for the next page; null on the last page.")
    problems: list[str] = Field(description="Tasks whose record could not be read, with the reason.")


class TaskSteps(_Response):
    """A "steps" task's list, kept beside its record (pinned there by `steps_etag`), as it runs."""

    steps: list[dict[str, Any]] = Field(description="The steps, as #/components/schemas/StepList describes them.")


class OutputLink(_Response):
    url: str = Field(description="GET this for the output file.")
    expires_in: int = Field(description="Seconds the URL works for.")
    filename: str = Field(description="A name to save the file as.")


class TaskTypeInfo(_Response):
    name: str
    title: str
    description: str
    params: list[Param]


class TaskTypes(_Response):
    task_types: list[TaskTypeInfo]
