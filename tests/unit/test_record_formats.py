"""A record's input format is typed: checked once where its JSON is read, and the same value after a round trip.

Before the file is submitted the record holds what was asked for (``detect`` allowed, a kind left out meaning
what the file shows); from the submit on, the format the submit settled. The worker, the errors workbook and
the CLI read ``record.read_as``, never a dict.
"""

from __future__ import annotations

import json

import pytest

from s3task.csvio import FormatRequest, InputFormat
from s3task.errors import InvalidInput
from s3task.record import TaskRecord, record_from_json
from s3task.states import Status


def _record(status: str, input_format: object) -> TaskRecord:
    return TaskRecord("7YBQ190X71PSB6WCX295JPT75S", "eu", "ann", "copy", status=status, input_format=input_format)


def _back(record: TaskRecord) -> TaskRecord:
    return record_from_json(record.to_json(), "status.json")


@pytest.mark.parametrize(
    ("status", "given", "typed"),
    [
        ("created", {"delimiter": "detect", "encoding": "detect"}, FormatRequest("detect", "detect")),
        ("created", {"kind": "xlsx", "sheet": "Orders"}, FormatRequest(kind="xlsx", sheet="Orders")),
        ("queued", {"delimiter": ";", "encoding": "windows-1252"}, InputFormat(";", "windows-1252")),
        ("queued", {"kind": "xlsx", "header_row": 3}, InputFormat(kind="xlsx", header_row=3)),
        ("completed", {}, InputFormat()),  # a record written before formats were stored: comma, UTF-8
    ],
)  # fmt: skip
def test_the_format_is_typed_where_the_record_is_read_and_survives_a_round_trip(status, given, typed) -> None:
    raw = json.loads(_record(status, {}).to_json())
    raw["input_format"] = given
    read = record_from_json(json.dumps(raw).encode(), "status.json")
    assert read.input_format == typed
    assert _back(read) == read and _back(read).input_format == typed


def test_the_submit_settles_the_request_and_the_worker_reads_the_settled_format() -> None:
    asked = _record("created", FormatRequest("detect", "detect"))
    with pytest.raises(InvalidInput, match="delimiter and encoding has not been detected yet"):
        asked.read_as  # noqa: B018 - the property is what is tested
    settled = asked.replace(status=Status.QUEUED, input_format=InputFormat(";", "utf-8"))
    assert settled.read_as == InputFormat(";", "utf-8")
    assert json.loads(settled.to_json())["input_format"] == {"delimiter": ";", "encoding": "utf-8"}  # as ever


def test_a_page_hands_the_door_a_typed_format_and_a_request_keeps_what_the_file_is_to_show() -> None:
    # What the New task page passes (an InputFormat) and what the API passes (JSON) ask for the same thing.
    assert FormatRequest.parse(InputFormat(";", "utf-8")) == FormatRequest.parse({"delimiter": "semicolon"})
    book = FormatRequest.parse(InputFormat(kind="xlsx", sheet="Orders", header_row=2))
    assert book.to_dict() == {"delimiter": ",", "encoding": "utf-8", "kind": "xlsx", "sheet": "Orders", "header_row": 2}
    assert book.settled() == InputFormat(kind="xlsx", sheet="Orders", header_row=2)


@pytest.mark.parametrize(
    "bad",
    [{"delimiter": "#"}, {"encoding": "ebcdic"}, {"sheet": 7, "kind": "xlsx"}, {"colour": "red"}],
)
def test_a_stored_format_this_version_cannot_read_is_kept_and_refused_where_the_file_is_read(bad) -> None:
    """A newer s3task's setting (or a damaged one): the record still reads, lists, shows and cancels, keeps
    the format as written, and the worker fails the task for good in words instead of skipping it forever."""
    raw = json.loads(_record("queued", {}).to_json())
    raw["input_format"] = bad
    read = record_from_json(json.dumps(raw).encode(), "tasks/x/status.json")
    assert json.loads(read.to_json())["input_format"] == bad
    with pytest.raises(InvalidInput, match="cannot be read by this s3task"):
        read.read_as  # noqa: B018 - the property is what is tested
    cancelled = read.replace(status=Status.ABANDONED)
    assert json.loads(cancelled.to_json())["input_format"] == bad


def test_the_api_shows_the_stored_format_as_before_and_a_request_still_to_detect_is_no_error() -> None:
    from s3task.web.models import task_of

    for status, given in (("created", {"delimiter": "detect", "encoding": "utf-16"}), ("queued", {"kind": "xlsx"})):
        raw = json.loads(_record(status, {}).to_json())
        raw["input_format"] = given
        shown = task_of(record_from_json(json.dumps(raw).encode(), "k"), retryable=False, cancellable=True)
        stored = json.loads(record_from_json(json.dumps(raw).encode(), "k").to_json())["input_format"]
        assert shown.model_dump(mode="json")["input_format"] == stored
