"""A lookup's reference table uploaded in the step builder (ui/step_reference.py), through AppTest: the file
becomes a copy task of its own ("Reference: managers.csv"), the step says it is preparing while the task waits
for a worker, then takes the task's id as its reference, so the preview looks up from it and Submit stores it;
a file that cannot be a table (not a table, a workbook with an empty sheet, a result too long) is refused in
the step's own words, leaving the step as it was; and someone else's uploaded reference is refused by the
reference access check. The app's worker is off here (tests/app_pages.py): the copy is done with the
lifecycle's own functions (``run_as_worker``), then the page runs again, as its refresh would."""

from __future__ import annotations

from pathlib import Path

import app_pages
import pytest
import test_step_builder_form as form
from app_pages import goto, run_as_worker, texts
from support import csv_bytes
from test_step_builder_form import add, button, errors, labelled, prepare, previewed, steps
from workbooks import bad_workbooks

from s3task.states import Status
from s3task.tasks import MAX_NAME, Actor, TaskService
from ui import step_reference

app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir
page = form.page
ANN, BEN = Actor("ann"), Actor("ben")
LOOKUP = "Look up columns from a reference table"
ORDERS = [["Order", "Account"], ["1", "A1"], ["2", "B2"], ["3", "Z9"]]
MANAGERS = csv_bytes([["Account", "Manager"], ["A1", "Mo"], ["B2", "Jo"], ["C3", "Li"]])


def lookup_step(at):
    """The file chosen, a lookup added: the page, and the lookup's box."""
    at = add(prepare(at, ORDERS), LOOKUP)
    return at, steps(at)[0]


def keyed_lookup(at):
    """A lookup on "Account" that adds "Manager", its reference not yet chosen: the page."""
    at, box = lookup_step(at)
    labelled(box.multiselect, "Key columns in this table").set_value(["Account"]).run()
    labelled(steps(at)[0].text_area, "Columns to add").input("Manager").run()
    return at


def upload(at, name: str, data: bytes, kind: str = "text/csv"):
    box = steps(at)[0]
    labelled(box.file_uploader, step_reference.UPLOAD_LABEL).set_value((name, data, kind)).run()
    return at


def reference_box(at):
    return labelled(steps(at)[0].text_input, "Reference table")


def references(service: TaskService, user: Actor = ANN) -> list:
    return [t for t in service.list(user).tasks if t.task_name.startswith("Reference: ")]


def test_a_reference_file_uploaded_becomes_a_task_the_preview_and_the_stored_step_use(
    page, service: TaskService
) -> None:
    at = keyed_lookup(page)
    at = upload(at, "managers.csv", MANAGERS)
    (made,) = references(service)
    assert (made.task_name, made.task_type, made.status) == ("Reference: managers.csv", "copy", Status.QUEUED)
    assert step_reference.PREPARING in texts(steps(at)[0])
    assert "Fill in “Reference table”." not in texts(steps(at)[0])  # it is being filled in: not asked for
    assert reference_box(at).value == ""  # the step waits for it; Submit too, saying why
    assert button(at, "Submit").disabled
    assert "To submit, add step 1's reference table (being prepared)." in texts(at)
    assert "is required" not in texts(at) and "cannot run" not in texts(at)  # nothing else asked of it meanwhile

    run_as_worker(service, made.task_id, MANAGERS)  # the worker's copy of the file
    at.run()  # what the step's refresh does once the task has ended
    box = steps(at)[0]
    assert step_reference.PREPARING not in texts(box)
    assert reference_box(at).value == made.task_id
    assert f"Uses managers.csv (3 rows), kept as the task “Reference: managers.csv”: {made.task_id}." in texts(box)
    assert previewed(at) == [
        {"Order": "1", "Account": "A1", "Manager": "Mo", "error": ""},
        {"Order": "2", "Account": "B2", "Manager": "Jo", "error": ""},
        {"Order": "3", "Account": "Z9", "Manager": "", "error": "no match for Account in the reference table"},
    ]
    labelled(at.text_input, "Task name").input("orders").run()
    button(at, "Submit").click().run()
    record = service.get(ANN, at.query_params["id"])
    (lookup,) = service.steps.parameters(record)["steps"]
    assert lookup == {"step": "lookup", "reference": made.task_id, "on": ["Account"], "take": ["Manager"]}


@pytest.mark.parametrize("bad", ["not a table", "no table", "too long"])
def test_a_file_that_cannot_be_the_reference_is_said_in_the_step_which_stays_as_it_was(
    page, service: TaskService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    at, _ = lookup_step(page)
    kept = service.submit_file(ANN, "March managers", "copy", None, MANAGERS)
    run_as_worker(service, kept.task_id, MANAGERS)
    reference_box(at).input(kept.task_id).run()  # the step's reference before the upload
    if bad == "not a table":
        at = upload(at, "managers.csv", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
        said = "managers.csv cannot be the reference table: The uploaded file cannot be processed"
        assert references(service) == []  # refused at the door: no task left behind
    elif bad == "no table":
        data, words = bad_workbooks(tmp_path)["no table"]
        at = upload(at, "managers.xlsx", data, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
        said = f"managers.xlsx cannot be the reference table: The uploaded file cannot be processed: {words}. "
        said += step_reference.ONE_SHEET
        assert references(service) == []
    else:
        monkeypatch.setattr("s3task.tasks.references.MAX_REFERENCE_ROWS", 2)  # the app runs in this process
        at = upload(at, "managers.csv", MANAGERS)
        (made,) = references(service)
        run_as_worker(service, made.task_id, MANAGERS)
        at.run()
        said = f"The reference file managers.csv: task {made.task_id}'s result has 3 rows; a lookup takes at most 2."
    box = steps(at)[0]
    assert any(e.startswith(said) for e in errors(box)), (errors(box), texts(box), reference_box(at).value)
    assert reference_box(at).value == kept.task_id  # the step as it was
    assert step_reference.PREPARING not in texts(box)
    assert labelled(box.file_uploader, step_reference.UPLOAD_LABEL)  # another file may be tried


def test_a_copy_that_fails_is_said_in_the_step(page, service: TaskService) -> None:
    at, _ = lookup_step(page)
    at = upload(at, "managers.csv", MANAGERS)
    (made,) = references(service)
    run_as_worker(service, made.task_id, error="row 3 has 4 cells; the header has 2")
    at.run()
    said = "managers.csv cannot be the reference table: Row 3 has 4 cells; the header has 2."
    assert errors(steps(at)[0]) == [f"{said} {step_reference.CHOSEN}"]  # and how to choose how it is read
    assert reference_box(at).value == ""


def test_someone_elses_uploaded_reference_is_refused(app, page, service: TaskService, monkeypatch) -> None:
    at, _ = lookup_step(page)
    at = upload(at, "managers.csv", MANAGERS)
    (made,) = references(service)
    run_as_worker(service, made.task_id, MANAGERS)
    at.run()
    assert reference_box(at).value == made.task_id  # ann's

    ben = add(prepare(goto(app("ben"), "pages/new_task.py"), ORDERS), LOOKUP)
    labelled(steps(ben)[0].multiselect, "Key columns in this table").set_value(["Account"]).run()
    labelled(steps(ben)[0].text_area, "Columns to add").input("Manager").run()
    reference_box(ben).input(made.task_id).run()
    refused = f"Task {made.task_id} belongs to ann; only they or an operator can look up from it"
    assert errors(steps(ben)[0]) == [refused + "."]  # in the step's own box
    assert refused[1:] in texts(ben)  # and over the preview, which read it as ben
    assert button(ben, "Submit").disabled
    assert service.list(BEN, mine=True).tasks == []


def test_the_same_file_chosen_again_is_the_same_task_not_a_copy_more(page, service: TaskService) -> None:
    # Found by the outside review: each time the file was chosen, one more "Reference: managers.csv" task.
    at, _ = lookup_step(page)
    at = upload(at, "managers.csv", MANAGERS)
    (made,) = references(service)
    run_as_worker(service, made.task_id, MANAGERS)
    at.run()
    assert reference_box(at).value == made.task_id
    at = add(at, LOOKUP)  # a second lookup, from the same file
    box = steps(at)[1]
    labelled(box.file_uploader, step_reference.UPLOAD_LABEL).set_value(("managers.csv", MANAGERS, "text/csv")).run()
    assert [t.task_id for t in references(service)] == [made.task_id]
    assert labelled(steps(at)[1].text_input, "Reference table").value == made.task_id
    assert f"Uses managers.csv (3 rows), kept as the task “Reference: managers.csv”: {made.task_id}." in texts(
        steps(at)[1]
    )
    # Other bytes under the same name are another file: a task of their own.
    other = csv_bytes([["Account", "Manager"], ["A1", "Al"]])
    second = labelled(steps(at)[1].file_uploader, step_reference.UPLOAD_LABEL)
    second.set_value(("managers.csv", other, "text/csv")).run()
    assert len(references(service)) == 2


def test_a_file_whose_task_was_cancelled_becomes_a_new_task(page, service: TaskService) -> None:
    at, _ = lookup_step(page)
    at = upload(at, "managers.csv", MANAGERS)
    (made,) = references(service)
    service.cancel(ANN, made.task_id)
    at.run()  # the step says the copy was cancelled
    at = upload(at, "managers.csv", MANAGERS)
    assert len(references(service)) == 2 and made.task_id in {t.task_id for t in references(service)}


def test_a_step_after_a_lookup_being_prepared_is_not_flagged_for_the_columns_it_will_add(
    page, service: TaskService
) -> None:
    # Found by the outside review: a check of "Manager" after the lookup said the column was not in the table
    # while a new reference file was being prepared.
    at = keyed_lookup(page)
    at = upload(at, "managers.csv", MANAGERS)
    (made,) = references(service)
    run_as_worker(service, made.task_id, MANAGERS)
    at.run()
    at = add(at, "Check values")
    labelled(steps(at)[1].selectbox, "Column").set_value("Manager").run()
    labelled(steps(at)[1].checkbox, "Required").check().run()
    assert "not in the table" not in texts(at)
    newer = csv_bytes([["Account", "Manager"], ["A1", "Al"]])
    labelled(steps(at)[0].file_uploader, step_reference.UPLOAD_LABEL).set_value(("june.csv", newer, "text/csv")).run()
    assert step_reference.PREPARING in texts(steps(at)[0])
    assert "not in the table" not in texts(at) and "cannot run" not in texts(at)
    assert "To submit, add step 1's reference table (being prepared)." in texts(at)


def test_a_reference_file_is_read_as_a_file_given_with_no_format(page, service: TaskService) -> None:
    # Found after stop 41: a reference was read as UTF-8 with commas whatever it was, so a semicolon file saved by
    # a European Excel became one column, "Account;Manager", and the lookup had no key. Now its delimiter and
    # encoding are found from it, as for the file a task is made from.
    at = keyed_lookup(page)
    upload(at, "managers.csv", "Account;Manager\r\nA1;Zoë\r\nB2;Jo\r\n".encode("windows-1252"))
    (made,) = references(service)
    assert (made.read_as.delimiter, made.read_as.encoding) == (";", "windows-1252")


def test_a_file_whose_name_is_too_long_for_a_task_name_still_becomes_the_reference(page, service: TaskService) -> None:
    # Found by the outside review: a file name of 191 characters or more made "Reference: …" longer than a task's
    # name may be, and the file was refused for a task name the person never chose.
    at = keyed_lookup(page)
    upload(at, "m" * 195 + ".csv", MANAGERS)
    (made,) = references(service)
    assert len(made.task_name) == MAX_NAME and made.task_name.startswith("Reference: mmm") and made.task_name[-1] == "…"
    assert not [t for t in texts(steps(at)[0]) if "cannot be the reference table" in t]
