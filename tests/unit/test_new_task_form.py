"""The New task form's logic (ui/task_form.py), without Streamlit: keys, prefill, missing fields, upload mode."""

from __future__ import annotations

import pytest

from s3task import handlers
from s3task.csvio import InputFormat
from s3task.record import TaskRecord
from ui.csvfile import Inspection
from ui.task_form import (
    DEFAULT_TYPE,
    FormKeys,
    Prefill,
    form_type,
    in_force,
    missing,
    name_from_file,
    prefill,
    says_more,
    summary,
    to_submit,
    upload_mode,
)

TYPES = handlers.all_types()
KEYS = FormKeys(3)


def source(**fields) -> TaskRecord:
    base = {"task_id": "7ABC", "task_name": "Leads June", "created_by": "ann", "task_type": "clean"}
    return TaskRecord(**{**base, **fields})


def test_the_keys_of_a_form_are_its_number_s_and_differ_between_forms() -> None:
    # The names AppTest and the direct-upload tests reach the widgets by (type_0, upload_0) stay as they were.
    zero = FormKeys(0)
    assert (zero.name, zero.type, zero.file, zero.upload) == ("name_0", "type_0", "file_0", "upload_0")
    assert (zero.plan, zero.note, zero.prefilled) == ("upload_plan_0", "upload_note_0", "prefilled_0")
    assert zero.param("clean", "trim_spaces") == "param_0_clean_trim_spaces"
    assert zero.format("f1") == ("delimiter_0_f1", "encoding_0_f1")
    one = FormKeys(1)
    keys_of = lambda k: {k.name, k.type, k.file, k.upload, k.plan, k.note, k.prefilled, k.param("a", "b")}  # noqa: E731
    assert not keys_of(zero) & keys_of(one)
    assert zero.format("f1") != zero.format("f2")  # a new file is detected afresh


def test_prefill_takes_the_task_s_name_type_settings_and_format() -> None:
    record = source(payload={"drop_duplicate_rows": False, "trim_spaces": None}, input_format={"delimiter": ";"})
    filled = prefill(KEYS, "7ABC", record, TYPES)
    assert filled.note == "Filled in from the task “Leads June”: pick the corrected file and submit."
    assert (filled.name, filled.type_name) == ("Leads June", "clean")
    # A setting left empty takes the type's default: only the ones the task had are filled in.
    assert filled.params == {KEYS.param("clean", "drop_duplicate_rows"): False}
    assert filled.input_format == InputFormat(";", "utf-8")


def test_prefill_leaves_an_unsettled_format_to_be_detected_from_the_new_file() -> None:
    filled = prefill(KEYS, "7ABC", source(input_format={"delimiter": "detect"}), TYPES)
    assert filled.input_format is None and filled.type_name == "clean"


@pytest.mark.parametrize("record", [None, source(task_type="gone_type")], ids=["no task", "type not registered"])
def test_prefill_from_a_task_that_cannot_be_used_starts_the_form_empty(record: TaskRecord | None) -> None:
    filled = prefill(KEYS, "7ABC" + "x" * 60, record, TYPES)
    assert filled.note == f"There is no task {('7ABC' + 'x' * 60)[:40]!r} to start from, so the form starts empty."
    assert (filled.name, filled.type_name, dict(filled.params), filled.input_format) == ("", None, {}, None)


def test_the_form_s_type_is_the_box_s_own_else_the_prefilled_else_copy() -> None:
    clean, copy, profile = handlers.get("clean"), handlers.get("copy"), handlers.get("profile")
    assert DEFAULT_TYPE == "copy"
    assert form_type(TYPES, None) is copy  # not the first one by name (that is clean)
    assert form_type(TYPES, None, Prefill("x", "note", type_name="clean")) is clean
    assert form_type(TYPES, profile, Prefill("x", "note", type_name="clean")) is profile  # the user's choice wins
    assert form_type(TYPES, None, Prefill("x", "note")) is copy  # a prefill that found no task
    # A value that is no registered type (a plug-in gone) falls back; a list without copy gives its first.
    assert form_type(TYPES, "nothing") is copy
    assert form_type([profile, clean], None) is profile


def test_an_unnamed_task_takes_the_file_s_name_and_a_named_one_keeps_its_own() -> None:
    assert name_from_file("", "March customers.csv") == "March customers"
    assert name_from_file("   ", "dir/report.v2.csv") == "report.v2"
    assert name_from_file("", "x" * 300 + ".csv") == "x" * 200
    assert name_from_file("Mine", "March customers.csv") is None


def test_what_is_missing_says_what_to_add_and_nothing_once_it_is_all_there() -> None:
    good, bad = Inspection("a.csv", 10), Inspection("a.csv", 10, problem="The file is empty")
    assert missing("", None) == ("a task name", "a CSV or Excel file")
    assert to_submit(missing("", None)) == "To submit, add a task name and a CSV or Excel file."
    assert missing(" ", good) == ("a task name",)
    assert to_submit(missing("People", bad)) == "To submit, add a CSV or Excel file that can be read."
    assert missing("People", good) == () and to_submit(()) == ""


def test_upload_mode_direct_unless_off_or_fallen_back_and_the_app_s_limit_when_bytes_pass_through_it() -> None:
    mb = 2**20
    # To S3: the browser sends the file to the bucket; the app sets no limit (S3 has its own).
    s3 = upload_mode(direct_upload=True, fell_back=False, signs_urls=False, limit_mb=200)
    assert (s3.direct, s3.limit_bytes, s3.limit_text) == (True, None, "")
    # A local store: still from the browser, but through the app's signed route, so its limit holds.
    local = upload_mode(direct_upload=True, fell_back=False, signs_urls=True, limit_mb=200)
    assert (local.direct, local.limit_bytes, local.limit_text) == (True, 200 * mb, ", up to 200 MB")
    # Streamlit's uploader: after the browser could not reach the store, or with direct upload off.
    for direct_upload, fell_back in ((True, True), (False, False)):
        mode = upload_mode(direct_upload=direct_upload, fell_back=fell_back, signs_urls=False, limit_mb=5)
        assert (mode.direct, mode.limit_bytes, mode.limit_text) == (False, 5 * mb, ", up to 5 MB")


def test_a_type_s_summary_is_its_first_sentence_and_the_rest_is_offered() -> None:
    assert summary("Checks every row: adds four columns.") == "Checks every row."
    assert summary("Keeps rows; drops none. More here.") == "Keeps rows."
    assert summary("Version 1.2 keeps rows") == "Version 1.2 keeps rows."  # a dot inside a word is no full stop
    assert not says_more("Writes every row.") and not says_more("Writes every row")
    assert says_more("Writes every row. Then more.")
    copy = handlers.get("copy")
    assert summary(copy.description) == "Writes every row of the uploaded file to the output unchanged."


def test_a_prefill_is_in_force_only_on_the_page_opened_from_its_task() -> None:
    filled = Prefill("7YCJ4JANZZNAMAY9EV4CC6NNAR", "Filled in", "Leads", "clean")
    assert in_force(filled, "7YCJ4JANZZNAMAY9EV4CC6NNAR") is filled
    assert in_force(filled, None) is None  # New task from the menu
    assert in_force(filled, "7YCJ4JANZZ7R8TPBSX7XMA071K") is None  # another task's ?from=
    assert in_force(None, "7YCJ4JANZZNAMAY9EV4CC6NNAR") is None
