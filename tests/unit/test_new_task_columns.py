"""The New task page's columns and recipes (issue 22 items 2 and 3): the column a task type needs shown
as matched (by header or values) and changeable, Submit held back while none is chosen; a recipe
offered for a file whose header is its own, filling the form in when used. Logic in ui/task_form.py,
the page through AppTest (Streamlit's uploader: the whole file reaches the app)."""

from __future__ import annotations

import app_pages
import pytest
from app_pages import goto, texts
from support import csv_bytes

from s3task import handlers
from s3task.handlers.email import EMAIL
from s3task.tasks import Actor, TaskService
from s3task.tasks.recipes import Recipe
from ui.csvfile import inspect_upload
from ui.task_form import NO_COLUMN, FormKeys, column_choice, from_recipe, missing

app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir
ANN = Actor("ann")
CONTACTS = [["id", "Contact", "City"], ["1", "ann@example.com", "Oslo"], ["2", "bob@example.org", "Rome"],
            ["3", "cy@example.net", "Lima"]]  # fmt: skip


def inspected(rows: list[list[str]], delimiter: str = ","):
    data = csv_bytes(rows).replace(b",", delimiter.encode())
    import io

    return inspect_upload("people.csv", len(data), io.BytesIO(data))


def test_the_needed_column_is_matched_on_the_preview_and_a_missing_one_is_chosen() -> None:
    by_values = column_choice(EMAIL, inspected(CONTACTS), "")
    assert (by_values.options, by_values.index) == (["id", "Contact", "City"], 1)
    assert by_values.line == "Email: column “Contact” (found by its values)."
    none = column_choice(EMAIL, inspected([["id", "name"], ["1", "Ann"]]), "")
    assert (none.options, none.index) == ([NO_COLUMN, "id", "name"], 0)
    assert none.line == "No email column found: choose the column that holds it."
    gone = column_choice(EMAIL, inspected(CONTACTS), "Mail")  # a recipe's column this file lacks
    assert gone.index == 1 and gone.line.startswith("This file has no column “Mail”. Email: column “Contact”")
    assert missing("x", inspected(CONTACTS), ["email"]) == ("the email column",)


def test_a_recipe_fills_in_its_type_settings_and_format() -> None:
    keys = FormKeys(3)
    recipe = Recipe("CRM monthly", "ann", "email_enrichment", {"email_column": "Mail"}, {"delimiter": ";"})
    filled = from_recipe(keys, recipe)
    assert filled.type_name == "email_enrichment"
    assert dict(filled.params) == {keys.param("email_enrichment", "email_column"): "Mail"}
    assert filled.input_format is not None and filled.input_format.delimiter == ";"
    assert "recipe “CRM monthly”" in filled.note


# --- the page (AppTest) -----------------------------------------------------------------------------------


def choose_file(at, name: str, data: bytes):
    return at.file_uploader[0].set_value((name, data, "text/csv")).run()


def box(at, label: str):
    return next(s for s in at.selectbox if s.label.startswith(label))


def submit_button(at):
    return next(b for b in at.button if b.label == "Submit")


@pytest.fixture
def page(app, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("S3TASK_DIRECT_UPLOAD", "0")
    return goto(app("ann"), "pages/new_task.py")


def test_the_page_shows_the_email_column_found_and_the_task_carries_it(page, service: TaskService) -> None:
    at = choose_file(page, "leads.csv", csv_bytes(CONTACTS))
    box(at, "What should happen").set_value(handlers.get("email_enrichment")).run()
    column = box(at, "Email column")
    assert column.value == "Contact" and column.options == ["id", "Contact", "City"]
    assert "Email: column “Contact” (found by its values)." in texts(at)
    column.set_value("City").run()  # the person knows better
    assert "Email: column “City” (as chosen)." in texts(at)
    box(at, "Email column").set_value("Contact").run()
    submit_button(at).click().run()
    record = service.get(ANN, at.query_params["id"])
    assert (record.task_type, record.payload["email_column"]) == ("email_enrichment", "Contact")


def test_without_an_email_column_submit_waits_for_one(page, service: TaskService) -> None:
    at = choose_file(page, "names.csv", csv_bytes([["id", "name"], ["1", "Ann"], ["2", "Bob"]]))
    box(at, "What should happen").set_value(handlers.get("email_enrichment")).run()
    assert box(at, "Email column").value == NO_COLUMN
    assert "To submit, add the email column." in texts(at)
    assert submit_button(at).disabled
    assert service.list(ANN).tasks == []


def test_a_file_with_a_recipes_header_is_offered_it_and_using_it_fills_the_form(page, service: TaskService) -> None:
    recipe = Recipe("CRM monthly", "ann", "email_enrichment", {"email_column": "Contact"},
                    {"delimiter": ";", "encoding": "utf-8"}, ["ID", "contact", "CITY"])  # fmt: skip
    service._recipes.save(ANN, recipe)
    at = choose_file(page, "april.csv", csv_bytes(CONTACTS).replace(b",", b";"))
    assert "Looks like **CRM monthly** — use that recipe?" in texts(at)  # the name in bold
    next(b for b in at.button if b.label == "Use this recipe").click().run()
    assert "Filled in with the recipe “CRM monthly”" in texts(at)
    assert "Looks like" not in texts(at)
    assert box(at, "What should happen").value is handlers.get("email_enrichment")
    assert box(at, "Email column").value == "Contact"
    submit_button(at).click().run()
    record = service.get(ANN, at.query_params["id"])
    assert record.task_type == "email_enrichment"
    assert (record.input_format.delimiter, record.payload["email_column"]) == (";", "Contact")
    assert (record.recipe_id, record.recipe_version) == ("own/ann/crm-monthly", 1)  # the task names its recipe
    # Its page says so.
    at.query_params["id"] = record.task_id
    at = goto(at, "pages/task.py")
    assert "Made from the recipe “CRM monthly” (version 1)." in texts(at)


def test_a_form_filled_from_a_recipe_whose_type_is_changed_makes_a_task_of_no_recipe(
    page, service: TaskService
) -> None:
    recipe = Recipe("CRM monthly", "ann", "email_enrichment", {"email_column": "Contact"},
                    {"delimiter": ";", "encoding": "utf-8"}, ["ID", "contact", "CITY"])  # fmt: skip
    service._recipes.save(ANN, recipe)
    at = choose_file(page, "april.csv", csv_bytes(CONTACTS).replace(b",", b";"))
    next(b for b in at.button if b.label == "Use this recipe").click().run()
    box(at, "What should happen").set_value(handlers.get("copy")).run()
    submit_button(at).click().run()
    record = service.get(ANN, at.query_params["id"])
    assert (record.task_type, record.recipe_id, record.recipe_version) == ("copy", None, None)


def test_a_tasks_page_keeps_its_settings_as_a_recipe(app, service: TaskService) -> None:
    rows = csv_bytes(CONTACTS).replace(b",", b";")
    task_id = service.submit_file(ANN, "March", "email_enrichment", None, rows, {"delimiter": ";"}).task_id
    at = app("ann")
    at.query_params["id"] = task_id
    at = goto(at, "pages/task.py")
    next(t for t in at.text_input if t.label == "Recipe name").input("CRM monthly")
    assert not any(c.label == "Share with everyone" for c in at.checkbox)  # sharing is an operator's
    next(b for b in at.button if b.label == "Save recipe").click().run()
    assert "Saved the recipe “CRM monthly”." in texts(at)
    saved = service.recipes.get(ANN, "CRM monthly")
    assert (saved.task_type, saved.params["email_column"], saved.header) == (
        "email_enrichment", "Contact", ["id", "Contact", "City"])  # fmt: skip
    next(b for b in at.button if b.label == "Save recipe").click().run()  # the same name again
    assert "The recipe was not saved: there is already a recipe named 'CRM monthly'" in texts(at)
