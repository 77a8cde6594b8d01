"""The task record (``status.json``): its fields and its JSON. Reading and writing it, only ever by
compare-and-set, is :mod:`s3task.records`'."""

from __future__ import annotations

import dataclasses
import json
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, overload

from .errors import (
    CorruptRecord,
    InvalidInput,
    UnsupportedSchema,
)
from .input_format import FormatRequest, InputFormat, UnreadableFormat
from .layout import MAX_RECORD_BYTES
from .states import State, Status, state_of

log = logging.getLogger(__name__)

#: 2: a record may name the recipe it was made from (``recipe_id``, ``recipe_version``) and keep its step
#: list beside it (``steps_etag``). Schema 1 records read as made from no recipe, their parameters all in
#: ``payload``; a worker of schema 1 skips and reports a record of schema 2.
SCHEMA_VERSION = 2
HISTORY_LIMIT = 50
MAX_CORRECTIONS = 20  # the most corrections a task lists (s3task.tasks.corrections): each an id in its record


def new_write_id() -> str:
    return secrets.token_hex(8)


@overload
def to_iso(dt: datetime) -> str: ...
@overload
def to_iso(dt: None) -> None: ...
def to_iso(dt: datetime | None) -> str | None:
    return None if dt is None else dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_iso(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC) if value else None


@dataclass(frozen=True)
class RecipeRef:
    """Which recipe, and which saved version of it, a task was made from."""

    id: str
    version: int


@dataclass
class TaskRecord:
    # identity
    task_id: str
    task_name: str
    created_by: str
    task_type: str
    payload: dict[str, Any] = field(default_factory=dict)
    #: How the input is read: as asked for while the task waits for its file (a FormatRequest: ``detect``
    #: allowed), as the submit settled it from then on (an InputFormat). A dict given is checked into one.
    input_format: InputFormat | FormatRequest | UnreadableFormat = field(default_factory=FormatRequest)
    #: The file the task was made for: {"name", "size", "edges_sha256"} (s3task.fingerprint); {}: none recorded
    input_fingerprint: dict[str, Any] = field(default_factory=dict)
    #: Its upload in parts, to be continued: {"upload_id", "part_size"} (s3task.tasks.resumable); {}: none
    input_upload: dict[str, Any] = field(default_factory=dict)
    #: Corrected rows (s3task.tasks.corrections): the task this one runs again; the tasks run again from this one
    corrects: str | None = None
    corrections: list[str] = field(default_factory=list)  # oldest first, each listed before it is created
    #: The recipe the task was made from (s3task.tasks.recipes: its id, as its inbox's key has it, and the
    #: version saved then), its settings with what was given on top; None: made without one
    recipe_id: str | None = None
    recipe_version: int | None = None
    #: The task's step list is kept beside the record (s3task.task_steps: ``steps.json``), read only at this
    #: ETag; None: every parameter is in ``payload``
    steps_etag: str | None = None
    # lifecycle
    schema_version: int = SCHEMA_VERSION
    status: Status = Status.CREATED
    attempt_id: int = 0
    revision: int = 0
    write_id: str = ""
    max_attempts: int = 3
    failed_attempts: int = 0
    release_count: int = 0
    final: bool = False
    retry_at: str | None = None
    # progress
    row_count: int | None = None
    processed_count: int = 0
    success_count: int = 0
    error_count: int = 0
    bytes_processed: int = 0
    protected_count: int = 0  # output cells given a leading ' in the CSV so that a spreadsheet does not run them
    #: A step list's effect per step that ran: {"step", "rows_in", "rows_out", "cells_changed"} (s3task.steps)
    step_counts: list[dict[str, Any]] = field(default_factory=list)
    # storage
    input_object_path: str = ""
    output_object_path: str | None = None
    input_etag: str | None = None
    input_size_bytes: int | None = None
    # ownership
    worker_id: str | None = None
    lease_expires_at: str | None = None
    lease_token: str | None = None
    # audit
    last_error: str | None = None
    #: Why a task failed for good: "input" (the file cannot be used as it is: a retry fails the same way)
    #: or "attempts" (every allowed attempt failed; a retry may help). None otherwise, and in older records.
    final_reason: str | None = None
    created_at: str = ""
    updated_at: str = ""
    queued_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # a newer s3task's fields (same schema version), kept

    def __post_init__(self) -> None:
        self.status = Status(self.status)  # a plain string from code or JSON becomes the enum, or fails here
        self.input_format = _format_of(self.input_format, self.status)

    @property
    def recipe(self) -> RecipeRef | None:
        """The recipe the task was made from, if any."""
        if self.recipe_id is None:
            return None
        return RecipeRef(self.recipe_id, self.recipe_version or 1)

    @property
    def state(self) -> State:
        """Where the record is in the lifecycle (failed for good is a state of its own)."""
        return state_of(self.status, self.final)

    @property
    def read_as(self) -> InputFormat:
        """How the input is read (a workbook's sheet and header row, a CSV's delimiter and encoding);
        :class:`InvalidInput` while the format is still to be detected (a task not yet submitted)."""
        given = self.input_format
        return given if isinstance(given, InputFormat) else given.settled()

    @property
    def is_terminal(self) -> bool:
        return self.state.terminal

    @property
    def progress(self) -> float:
        """0..1, exact by bytes while running."""
        if self.status == Status.COMPLETED:
            return 1.0
        if not self.input_size_bytes:
            return 0.0
        return min(1.0, self.bytes_processed / self.input_size_bytes)

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        data["input_format"] = self.input_format.to_dict()
        return {**self.extra, **data}

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), indent=1, ensure_ascii=False).encode()

    def replace(self, **changes: Any) -> TaskRecord:
        return dataclasses.replace(self, **changes)


def _format_of(given: Any, status: Status) -> InputFormat | FormatRequest | UnreadableFormat:
    """A record's input format, typed by where the record is: asked for until the file is submitted (so
    ``detect`` and a kind left out keep their meaning), settled after it (a stored ``{}`` or a CSV's two
    settings read as a CSV). One rule, so a record and the same record read back from JSON are equal."""
    if isinstance(given, UnreadableFormat) or (status != Status.CREATED and isinstance(given, InputFormat)):
        return given
    try:
        asked = FormatRequest.parse(given)
    except InvalidInput as e:
        if not isinstance(given, Mapping):
            raise
        return UnreadableFormat(dict(given), f"the task's input format cannot be read by this s3task: {e.message}")
    if status == Status.CREATED:
        return asked
    try:
        return asked.settled()
    except InvalidInput:
        return asked  # never settled (a task cancelled before its file came): kept as it was asked for


_FIELDS = {f.name: f for f in dataclasses.fields(TaskRecord) if f.name != "extra"}
_REQUIRED = ("task_id", "task_name", "created_by", "task_type", "status")
_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,), "Status": (str,), "int": (int,), "bool": (bool,), "dict[str, Any]": (dict,), "list[str]": (list,),
    "list[dict[str, Any]]": (list,), "str | None": (str, type(None)), "int | None": (int, type(None)),
    "InputFormat | FormatRequest | UnreadableFormat": (dict,),
}  # fmt: skip


def record_from_json(data: bytes, key: str) -> TaskRecord:
    """Parse ``status.json``; a clear :class:`CorruptRecord` / :class:`UnsupportedSchema` if we cannot."""
    if len(data) > MAX_RECORD_BYTES:
        raise CorruptRecord(f"{key}: record is {len(data)} bytes, more than a task record can be")
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise CorruptRecord(f"{key}: not valid JSON ({e})") from e
    if not isinstance(raw, dict):
        raise CorruptRecord(f"{key}: expected a JSON object")
    version = raw.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise CorruptRecord(f"{key}: schema_version is missing or not a number")
    if version > SCHEMA_VERSION:
        raise UnsupportedSchema(
            f"{key}: written by a newer s3task (schema {version}, this one knows {SCHEMA_VERSION}); left untouched"
        )
    missing = [name for name in _REQUIRED if name not in raw]
    if missing:
        raise CorruptRecord(f"{key}: missing {', '.join(missing)}")
    known: dict[str, Any] = {}
    for name, value in raw.items():
        f = _FIELDS.get(name)
        if f is None:
            continue
        allowed = _TYPES[str(f.type)]
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            raise CorruptRecord(f"{key}: field {name} has the wrong type ({type(value).__name__})")
        known[name] = value
    try:
        known["status"] = Status(known["status"])
    except ValueError as e:
        # Caught here, not as a ValueError deep in a caller's loop (cancel, describe, a worker's poll).
        raise CorruptRecord(f"{key}: unknown status {known['status']!r}") from e
    extra = {k: v for k, v in raw.items() if k not in _FIELDS}
    try:
        return TaskRecord(**known, extra=extra)
    except InvalidInput as e:  # the one structured field checked as it is read: its input format
        raise CorruptRecord(f"{key}: input_format: {e.message}") from e
