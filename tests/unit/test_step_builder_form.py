"""The step builder of "Prepare the table" on the New task page, through AppTest, as a person uses it:
steps added from the menu change the preview and say their effect in words; a step whose column an
earlier step removed says so in its own box; steps are turned off, moved and removed; Submit makes a
"steps" task whose stored payload is the list built; a list that cannot run (a column typed that the
file lacks, a pattern that is no regular expression) names the step and makes no task; a recipe fills
the builder again. Streamlit's uploader (the whole file reaches the app); the words in ui/step_text.py."""

from __future__ import annotations

from collections.abc import Iterator

import app_pages
import pytest
from app_pages import goto, texts
from support import csv_bytes

from s3task import handlers
from s3task.steps import all_kinds
from s3task.steps.engine import Count
from s3task.tasks import Actor, TaskService
from ui import step_text

app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir
ANN = Actor("ann")
ORDERS = [
    ["Order", "Region", "Name", "Notes"],
    ["1", "North", " Ann ", "first"],
    ["2", "South", "Bob", "second"],
    ["3", "North", "", "third"],
    ["1", "North", "Ann", "again"],
]


# --- driving the page ---------------------------------------------------------------------------------------


@pytest.fixture
def page(app, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("S3TASK_DIRECT_UPLOAD", "0")
    return goto(app("ann"), "pages/new_task.py")


def prepare(at, rows: list[list[str]] = ORDERS, name: str = "orders.csv"):
    """The file chosen and "Prepare the table" as the type."""
    at = at.file_uploader[0].set_value((name, csv_bytes(rows), "text/csv")).run()
    return labelled(at.selectbox, "What should happen").set_value(handlers.get("steps")).run()


def labelled(widgets, label: str):
    found = [w for w in widgets if w.label.startswith(label)]
    assert found, f"no widget labelled {label!r}: {[w.label for w in widgets]}"
    return found[0]


def add(at, title: str):
    """Choose ``title`` in the menu, press Add step."""
    name = next(name for name, kind in all_kinds().items() if kind.title == title)
    labelled(at.selectbox, "Next step").set_value(name).run()
    return button(at, "Add step").click().run()


def button(node, label: str):
    return next(b for b in node.button if b.label == label)


def steps(at) -> list:
    """The step boxes, in order (each a container keyed ``…-step-<id>``)."""

    def walk(node) -> Iterator:
        for child in getattr(node, "children", {}).values():
            if "-step-" in str(getattr(child, "key", "") or ""):
                yield child
            else:
                yield from walk(child)

    return list(walk(at.main))


def heading(box) -> str:
    return str(box.markdown[0].value).replace("\\", "").replace("**", "")


def errors(box) -> list[str]:
    """The error messages in a box, as read (Markdown escapes removed)."""
    return [str(e.value).replace("\\", "").replace("\u2060", "") for e in box.error]


def previewed(at) -> list[dict[str, str]]:
    """The rows of the table after the steps (the last table on the page)."""
    return at.dataframe[-1].value.to_dict("records")


def submit_button(at):
    return button(at, "Submit")


def no_tasks(service: TaskService) -> bool:
    return service.list(ANN).tasks == []


# --- the words (ui/step_text.py) ------------------------------------------------------------------------------


def test_lines_typed_become_the_steps_values_and_back() -> None:
    assert step_text.pairs("N/A =\nSt. = Street\n\nno sign") == (
        [["N/A", ""], ["St.", "Street"]],
        ["Replacements, line 4: write it as “find = replace with”."],
    )
    assert step_text.pairs_text([["N/A", ""], ["St.", "Street"]]) == "N/A = \nSt. = Street"
    assert step_text.renames("Cust No = customer_id\n = x") == (
        {"Cust No": "customer_id"},
        ["Line 2: write it as “old name = new name”."],
    )
    assert (step_text.number("12"), step_text.number("1.5"), step_text.number("2026-01-01")) == (
        12,
        "1.5",
        "2026-01-01",
    )
    trim, join = all_kinds()["trim"], all_kinds()["join_columns"]
    assert step_text.payload(trim, {"step": "trim", "columns": [], "off": False}) == {"step": "trim"}
    joined = {"step": "join_columns", "columns": ["a", "b"], "separator": "", "into": "ab", "keep_originals": True}
    assert step_text.payload(join, joined) == {
        "step": "join_columns",
        "columns": ["a", "b"],
        "separator": "",
        "into": "ab",
    }  # "" joins with nothing; True is what leaving it out gives


def test_effects_are_said_in_words() -> None:
    words = step_text.effect
    assert words(Count(10, 7, 0), ["a"], ["a"], 10, whole_file=False) == "Removes 3 of these 10 rows."
    assert words(Count(7, 7, 31), ["a"], ["a"], 10, whole_file=False) == "Changes 31 cells."
    assert words(Count(7, 7, 14), ["a"], ["a", "b", "c"], 10, whole_file=False) == (
        "Adds 2 columns (b, c) and changes 14 cells."
    )
    assert words(Count(7, 5, 0), ["a"], ["a"], 10, whole_file=True) == (
        "In these 10 rows: removes 2 of the 7 rows left. The task applies it to the whole file."
    )
    assert words(Count(7, 7, 0), ["a"], ["a"], 10, whole_file=False) == "Changes nothing in these rows."
    assert words(Count(1, 0, 0), ["a"], ["a"], 1, whole_file=True) == (
        "In this 1 row: removes the only row. The task applies it to the whole file."
    )
    assert words(Count(1, 1, 1), ["a"], ["b"], 1, whole_file=False, renaming=True, marked=1) == (
        "Renames 1 column (a → b), changes 1 cell and gives 1 row a problem."
    )


# --- the page ------------------------------------------------------------------------------------------------


def test_steps_added_change_the_preview_and_say_what_they_did(page) -> None:
    at = prepare(page)
    assert "To submit, add at least one step." in texts(at)
    at = add(at, "Remove columns")
    (box,) = steps(at)
    assert heading(box) == "1. Remove columns"
    assert "Fill in “Columns to remove”." in texts(box)
    assert box.multiselect[0].options == ["Order", "Region", "Name", "Notes"]
    box.multiselect[0].set_value(["Notes"]).run()
    assert "Removes 1 column (Notes)." in texts(steps(at)[0])
    assert list(previewed(at)[0]) == ["Order", "Region", "Name", "error"]

    at = add(at, "Keep rows")
    box = steps(at)[1]
    column = labelled(box.selectbox, "Condition 1: column")
    assert column.options == ["— choose a column —", "Order", "Region", "Name"]  # Notes is gone by then
    column.set_value("Region").run()
    labelled(steps(at)[1].text_input, "Value").input("North").run()
    assert "Removes 1 of these 4 rows." in texts(steps(at)[1])
    assert [r["Order"] for r in previewed(at)] == ["1", "3", "1"]

    at = add(at, "Remove spaces at the ends")
    assert "Changes 1 cell." in texts(steps(at)[2])  # " Ann "
    at = add(at, "Remove duplicate rows")
    steps(at)[3].multiselect[0].set_value(["Order"]).run()
    assert "In these 4 rows: removes 1 of the 3 rows left. The task applies it to the whole file." in texts(
        steps(at)[3]
    )
    at = add(at, "Check values")
    labelled(steps(at)[4].selectbox, "Column").set_value("Name").run()
    labelled(steps(at)[4].checkbox, "Required").check().run()
    assert "Gives 1 row a problem." in texts(steps(at)[4])
    assert previewed(at) == [
        {"Order": "1", "Region": "North", "Name": "Ann", "error": ""},
        {"Order": "3", "Region": "North", "Name": "", "error": "Name: is required"},
    ]
    assert [heading(b) for b in steps(at)] == [
        "1. Remove columns", "2. Keep rows", "3. Remove spaces at the ends", "4. Remove duplicate rows",
        "5. Check values",
    ]  # fmt: skip
    assert not submit_button(at).disabled


def test_the_steps_run_over_the_first_200_rows_while_the_file_preview_shows_ten(page) -> None:
    """A North row past the tenth is still in the builder's preview: the effect counts 200 rows, not 10."""
    rows = [["Order", "Region"]] + [[str(n), "North" if n % 50 == 0 else "South"] for n in range(1, 251)]
    at = prepare(page, rows)
    assert len(at.dataframe[0].value) == 10  # the file's preview: its first ten rows
    at = add(at, "Keep rows")
    labelled(steps(at)[0].selectbox, "Condition 1: column").set_value("Region").run()
    labelled(steps(at)[0].text_input, "Value").input("North").run()
    assert "Removes 196 of these 200 rows." in texts(steps(at)[0])  # rows 50, 100, 150 and 200 are North
    assert [r["Order"] for r in previewed(at)] == ["50", "100", "150", "200"]


def test_a_step_whose_column_an_earlier_step_removed_says_so_in_its_box_and_steps_turn_off_move_and_go(
    page, service: TaskService
) -> None:
    at = add(prepare(page), "Remove spaces at the ends")
    steps(at)[0].multiselect[0].set_value(["Name"]).run()
    at = add(at, "Remove columns")
    steps(at)[1].multiselect[0].set_value(["Name"]).run()
    button(steps(at)[1], "Move up").click().run()
    first, second = steps(at)
    assert (heading(first), heading(second)) == ("1. Remove columns", "2. Remove spaces at the ends")
    problem = "The column 'Name' is not in the table (Step 1 (Remove columns) removed or renamed it)"
    assert errors(second) == [problem]  # at that step, in its own box
    assert not first.error and "Removes 1 column (Name)." in texts(first)
    assert "To submit, add a fix for step 2 (Remove spaces at the ends)." in texts(at)
    assert submit_button(at).disabled

    button(first, "Turn off").click().run()
    first, second = steps(at)
    assert heading(first) == "1. Remove columns · *off: not run*"
    assert "Off: this step is kept in the list but not run." in texts(first)
    assert not second.error and "Changes 1 cell." in texts(second)
    assert "Name" in previewed(at)[0]

    button(first, "Turn on").click().run()
    button(steps(at)[0], "Move down").click().run()
    first, second = steps(at)
    assert (heading(first), heading(second)) == ("1. Remove spaces at the ends", "2. Remove columns")
    assert not first.error and not second.error
    assert "Name" not in previewed(at)[0]

    button(steps(at)[0], "Remove").click().run()
    assert [heading(b) for b in steps(at)] == ["1. Remove columns"]
    assert "Removes 1 column (Name)." in texts(steps(at)[0])
    assert no_tasks(service)


def test_submit_makes_a_steps_task_whose_parameter_is_the_list(page, service: TaskService) -> None:
    at = add(prepare(page), "Remove columns")
    steps(at)[0].multiselect[0].set_value(["Notes"]).run()
    at = add(at, "Keep rows")
    labelled(steps(at)[1].selectbox, "Condition 1: column").set_value("Region").run()
    labelled(steps(at)[1].text_input, "Value").input("north").run()
    labelled(steps(at)[1].checkbox, "Ignore case").check().run()
    at = add(at, "Find and replace")
    labelled(steps(at)[2].text_area, "Replacements").input("Ann = Anna\nBob = Robert").run()
    button(steps(at)[2], "Turn off").click().run()
    submit_button(at).click().run()
    record = service.get(ANN, at.query_params["id"])
    assert record.task_type == "steps"
    # The list is kept beside the record, pinned by its ETag (s3task.task_steps); the record keeps no copy.
    assert (
        record.payload == {} and record.steps_etag == service.store.head(service.layout.steps_key(record.task_id)).etag
    )
    assert service.steps.parameters(record) == {"steps": [
        {"step": "drop_columns", "columns": ["Notes"]},
        {"step": "keep_rows", "conditions": [{"column": "Region", "is": "equals", "ignore_case": True,
                                              "value": "north"}]},
        {"step": "replace", "pairs": [["Ann", "Anna"], ["Bob", "Robert"]], "off": True},
    ]}  # fmt: skip


def test_a_column_typed_that_the_file_lacks_names_the_step_and_makes_no_task(page, service: TaskService) -> None:
    at = add(prepare(page), "Remove spaces at the ends")
    at = add(at, "Remove columns")
    steps(at)[1].multiselect[0].set_value(["Regoin"]).run()  # typed: the box takes names it does not offer
    assert "Step 2 (Remove columns): the column 'Regoin' is not in the table" in texts(at)
    assert errors(steps(at)[1]) == ["The column 'Regoin' is not in the table"]
    assert "To submit, add a fix for step 2 (Remove columns)." in texts(at)
    assert submit_button(at).disabled  # a person cannot press it
    assert no_tasks(service)


def test_the_line_over_submit_names_three_fixes_and_counts_the_rest(page) -> None:
    at = prepare(page)
    for _ in range(5):
        at = add(at, "Remove columns")  # each waits for its columns
    assert (
        "To submit, add a fix for step 1 (Remove columns), a fix for step 2 (Remove columns), "
        "a fix for step 3 (Remove columns) and a fix for 2 more steps."
    ) in texts(at)
    assert all("Fill in “Columns to remove”." in texts(box) for box in steps(at))
    assert submit_button(at).disabled


def test_a_pattern_that_is_no_regular_expression_names_the_step_and_makes_no_task(page, service: TaskService) -> None:
    at = add(prepare(page), "Check values")
    labelled(steps(at)[0].selectbox, "Column").set_value("Name").run()
    labelled(steps(at)[0].text_input, "Pattern").input("((").run()
    said = texts(at)
    assert "Step 1 (Check values): the pattern '((' is not a regular expression this can use" in said
    assert "To submit, add a fix for step 1 (Check values)." in said
    assert errors(steps(at)[0])[0].startswith("The pattern '((' is not a regular expression")
    assert submit_button(at).disabled
    assert no_tasks(service)


def test_a_recipe_fills_the_builder_again(page, service: TaskService) -> None:
    built = [
        {"step": "drop_columns", "columns": ["Notes"]},
        {"step": "keep_rows", "conditions": [{"column": "Region", "is": "equals", "value": "North"}]},
        {"step": "check", "column": "Name", "required": True},
        {"step": "join_columns", "columns": ["Region", "Name"], "into": "Who"},  # joined with " ", left out
    ]
    march = service.submit_file(ANN, "March", "steps", {"steps": built}, csv_bytes(ORDERS))
    service.recipes.save(ANN, "Orders monthly", march.task_id)
    april = [ORDERS[0], ["7", "North", "Dee", ""], ["8", "West", "", ""]]
    at = page.file_uploader[0].set_value(("april.csv", csv_bytes(april), "text/csv")).run()
    button(at, "Use this recipe").click().run()
    assert "Filled in with the recipe “Orders monthly”" in texts(at)
    assert labelled(at.selectbox, "What should happen").value is handlers.get("steps")
    boxes = steps(at)
    assert [heading(b) for b in boxes] == ["1. Remove columns", "2. Keep rows", "3. Check values", "4. Join columns"]
    assert boxes[0].multiselect[0].value == ["Notes"]
    assert labelled(boxes[1].selectbox, "Condition 1: column").value == "Region"
    assert labelled(boxes[1].text_input, "Value").value == "North"
    assert labelled(boxes[2].checkbox, "Required").value is True
    assert labelled(boxes[3].text_input, "Separator").value == " "  # what leaving it out gives
    assert "Removes 1 of these 2 rows." in texts(boxes[1])
    assert previewed(at) == [{"Order": "7", "Region": "North", "Name": "Dee", "Who": "North Dee", "error": ""}]
    submit_button(at).click().run()
    record = service.get(ANN, at.query_params["id"])
    assert service.steps.parameters(record) == service.steps.parameters(march)  # the list as the recipe kept it


def test_a_form_started_again_from_a_steps_task_has_its_list(app, service: TaskService, monkeypatch) -> None:
    monkeypatch.setenv("S3TASK_DIRECT_UPLOAD", "0")
    built = [{"step": "remove_rows", "conditions": [{"column": "Region", "is": "one_of", "values": ["South", "East"]}]}]
    march = service.submit_file(ANN, "March", "steps", {"steps": built}, csv_bytes(ORDERS))
    at = app("ann")
    at.query_params["from"] = march.task_id
    at = goto(at, "pages/new_task.py")
    assert "Filled in from the task “March”" in texts(at)
    (box,) = steps(at)
    assert heading(box) == "1. Remove rows"
    assert labelled(box.selectbox, "Test").value == "one_of"
    assert labelled(box.text_area, "Values").value == "South\nEast"
