"""A step list read from JSON and checked against a file's header before any row is read (issue 32).

What a person building a list sees: a list that cannot run is refused with the step named by number
and title ("Step 2 (Keep rows): ..."), a column an earlier step removed says which step removed it, a
bad regular expression or date format is refused before a file is seen, and columns named like the
list's own words ("step", "columns", "note", "off") are only columns.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from s3task.steps import StepError, as_text, parse
from s3task.steps.engine import Runner, check_columns, check_values, require_columns


def text_table(columns: dict[str, list[str]]) -> pa.Table:
    return pa.table({name: pa.array(cells, pa.large_string()) for name, cells in columns.items()})


def run(raw: list[dict[str, Any]], *blocks: pa.Table) -> list[dict[str, str]]:
    steps = parse(raw)
    check_values(steps)
    return pa.concat_tables(Runner(steps).run(iter(blocks))).to_pylist()


def refused(raw: Any) -> str:
    with pytest.raises(StepError) as raised:
        check_values(parse(raw))
    return str(raised.value)


# --- reading the list ----------------------------------------------------------------------


def test_a_list_is_read_from_text_bytes_or_the_parsed_value_and_off_steps_keep_their_number() -> None:
    raw = [
        {"step": "trim", "columns": ["Name"], "note": "spaces from the old system"},
        {"step": "change_case", "columns": ["Name"], "to": "upper", "off": True},
        {"step": "change_case", "columns": ["Name"], "to": "title"},
    ]
    for given in (raw, json.dumps(raw), json.dumps(raw).encode(), {"steps": raw}):
        steps = parse(given)
        assert [s.number for s in steps.steps] == [1, 2, 3]
        assert [s.number for s in steps.active] == [1, 3]
    steps = parse(raw)
    assert steps.steps[0].note == "spaces from the old system"
    assert parse(as_text(steps)).to_json() == steps.to_json()  # the text a person keeps reads back the same
    # The step that is off changes nothing: upper case would have stayed upper.
    assert run(raw, text_table({"Name": ["  éMILE zola "]})) == [{"Name": "Émile Zola", "error": ""}]


def test_an_unknown_step_is_refused_with_its_number_and_the_steps_there_are() -> None:
    message = refused([{"step": "trim", "columns": []}, {"step": "sort_rows", "columns": ["Name"]}])
    assert message.startswith("Step 2: there is no step 'sort_rows' (the steps are: change_case, check,")
    assert "trim" in message
    assert refused([{"columns": []}]).startswith("Step 1: there is no step None")
    assert refused(["trim"]) == 'Step 1: a step is a JSON object with a "step" field'


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("[{", "the step list is not valid JSON"),
        ({"step": "trim"}, "a step list is a JSON array of steps"),
        ([{"step": "trim", "colums": ["A"]}],
         "Step 1 (Remove spaces at the ends): it has no field 'colums' (its fields: columns)"),
        ([{"step": "change_case", "columns": []}], "Step 1 (Change case): To (to) is required"),
        ([{"step": "change_case", "to": "camel"}],
         "Step 1 (Change case): To (to) is one of upper, lower, title; not 'camel'"),
        ([{"step": "trim", "off": "yes"}], 'Step 1 (Remove spaces at the ends): "off" is true or false'),
        ([{"step": "trim", "columns": ["A", "A"]}], "names the column 'A' twice"),
        ([{"step": "trim", "columns": "A"}], "Step 1 (Remove spaces at the ends): Columns (columns) is a list"),
        ([{"step": "keep_rows", "conditions": []}], "Step 1 (Keep rows): Conditions (conditions) is required"),
        ([{"step": "keep_rows", "conditions": [{"column": "A", "is": "like", "value": "x"}]}],
         '"is" is one of equals'),
        ([{"step": "keep_rows", "conditions": [{"column": "A", "is": "equals"}]}], '"value" is required for equals'),
        ([{"step": "keep_rows", "conditions": [{"column": "A", "is": "greater_than", "value": "1,5"}]}],
         "Step 1 (Keep rows): Conditions (conditions), condition 1: greater_than compares numbers; "
         "'1,5' is not a number"),
        ([{"step": "remove_rows", "conditions": [{"column": "A", "is": "before", "value": "31/12/2024"}]}],
         "Step 1 (Remove rows): Conditions (conditions), condition 1: before compares dates written YYYY-MM-DD"),
        ([{"step": "replace", "columns": []}],
         "Step 1 (Find and replace): say what to find: fill in Find (find), or Replacements (pairs)"),
        ([{"step": "split_column", "column": "A", "separator": " ", "into": []}],
         "Step 1 (Split a column): New columns (into) is required"),
        ([{"step": "rename_columns", "names": ["A", "B"]}],
         "Step 1 (Rename columns): Old name → new name (names) is an object"),
        ([{"step": "trim"}] * 201, "the list has 201 steps; at most 200"),
    ],
)  # fmt: skip
def test_a_list_that_cannot_be_read_is_refused_in_words(raw: Any, words: str) -> None:
    assert words in refused(raw)


def test_a_bad_regular_expression_is_refused_before_a_file_is_seen() -> None:
    message = refused(
        [{"step": "trim"}, {"step": "keep_rows", "conditions": [{"column": "A", "is": "matches", "value": "(("}]}]
    )
    assert message.startswith("Step 2 (Keep rows): Conditions (conditions), condition 1: the pattern '((' is not a")
    message = refused([{"step": "check", "column": "A", "pattern": "[a-"}])
    assert message.startswith("Step 1 (Check values): the pattern '[a-' is not a regular expression this can use")
    # RE2 has no look-behind: refused rather than failing on the file's first block.
    assert "'(?<=x)y' is not a regular expression" in refused([{"step": "check", "column": "A", "pattern": "(?<=x)y"}])


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        (
            {"from": "DD/MM"},
            "Step 1 (Change date format): Written as now: 'DD/MM' is not a date format: it needs DD, MM",
        ),
        ({"from": "%d/%m/%Y"}, "Written as now: '%d/%m/%Y' is not a date format"),
        ({"from": "DD/MM/YYYY/YYYY"}, "'DD/MM/YYYY/YYYY' is not a date format"),
        ({"to": "YYYY-MM-DDT00"}, "Step 1 (Change date format): Write as: 'YYYY-MM-DDT00' has letters or digits other"),
    ],
)
def test_a_bad_date_format_is_refused_with_the_step_named(fields: dict[str, str], words: str) -> None:
    assert words in refused([{"step": "format_dates", "columns": ["Born"], **fields}])


# --- the list against a header ---------------------------------------------------------------


def test_a_missing_column_and_one_an_earlier_step_removed_are_named_with_the_step_that_removed_it() -> None:
    steps = parse(
        [
            {"step": "drop_columns", "columns": ["Region"]},
            {"step": "keep_rows", "conditions": [{"column": "Region", "is": "equals", "value": "north"}]},
            {"step": "rename_columns", "names": {"Name": "Full name"}},
            {"step": "trim", "columns": ["Name"]},
            {"step": "trim", "columns": ["Nmae"]},
            {"step": "change_case", "columns": ["Full name"], "to": "upper"},
        ]
    )
    after, problems = check_columns(steps, ["Name", "Region"])
    assert problems == {
        2: "Step 2 (Keep rows): the column 'Region' is not in the table "
        "(Step 1 (Remove columns) removed or renamed it)",
        4: "Step 4 (Remove spaces at the ends): the column 'Name' is not in the table "
        "(Step 3 (Rename columns) removed or renamed it)",
        5: "Step 5 (Remove spaces at the ends): the column 'Nmae' is not in the table",
    }
    assert after == ["Full name"]  # step 6 applied: the steps after one that cannot are still checked
    with pytest.raises(StepError, match=r"^Step 2 \(Keep rows\): the column 'Region' is not in the table"):
        require_columns(steps, ["Name", "Region"])


def test_a_step_that_is_off_is_not_checked_against_the_header() -> None:
    steps = parse([{"step": "trim", "columns": ["Gone"], "off": True}, {"step": "trim", "columns": ["Name"]}])
    assert check_columns(steps, ["Name"]) == (["Name"], {})


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"step": "rename_columns", "names": {"Region": "Name"}},
         "Step 1 (Rename columns): two columns would be named 'Name'"),
        ({"step": "split_column", "column": "Name", "separator": " ", "into": ["First", "Region"]},
         "Step 1 (Split a column): the table already has a column named 'Region'"),
        ({"step": "join_columns", "columns": ["Name", "Region"], "into": "Region"},
         "Step 1 (Join columns): the table already has a column named 'Region'"),
        ({"step": "lookup", "reference": "t-1", "on": ["Name"], "take": ["Region"]},
         "Step 1 (Look up columns from a reference table): the table already has a column named 'Region'"),
    ],
)  # fmt: skip
def test_a_step_that_would_make_two_columns_of_one_name_is_refused(raw: dict[str, Any], words: str) -> None:
    assert check_columns(parse([raw]), ["Name", "Region"])[1] == {1: words}


def test_columns_named_like_the_lists_own_words_are_only_columns() -> None:
    header = ["step", "columns", "note", "off", "is", "value", "error_note"]
    raw = [
        {"step": "keep_rows", "conditions": [{"column": "step", "is": "equals", "value": "columns"}]},
        {"step": "trim", "columns": ["columns", "note"]},
        {"step": "rename_columns", "names": {"off": "error_off"}},
        {"step": "reorder_columns", "columns": ["value", "is"]},
        {"step": "check", "column": "value", "required": True},
    ]
    names, problems = check_columns(parse(raw), header)
    assert problems == {}
    assert names == ["value", "is", "step", "columns", "note", "error_off", "error_note"]
    block = text_table(
        {
            "step": ["columns", "trim"],
            "columns": [" a ", " b "],
            "note": ["  n", "m  "],
            "off": ["true", "false"],
            "is": ["equals", "x"],
            "value": ["", "1"],
            "error_note": ["", ""],
        }
    )
    assert run(raw, block) == [
        {"value": "", "is": "equals", "step": "columns", "columns": "a", "note": "n", "error_off": "true",
         "error_note": "", "error": "value: is required"},
    ]  # fmt: skip


def test_a_column_named_error_must_be_renamed_and_names_s3task_keeps_are_refused() -> None:
    trim = parse([{"step": "trim", "columns": []}])
    assert check_columns(trim, ["Name", "error"])[1] == {
        -1: "after the steps the table has a column named 'error', the name of the column the task adds for each "
        "row's problems: rename or remove it with a step"
    }
    assert check_columns(trim, ["Name", "errors", "Error"]) == (["Name", "errors", "Error"], {})  # only "error"
    renamed = parse([{"step": "rename_columns", "names": {"error": "error (old)"}}])
    assert check_columns(renamed, ["Name", "error"]) == (["Name", "error (old)"], {})
    out = run([{"step": "rename_columns", "names": {"error": "error (old)"}}], text_table({"error": ["x"]}))
    assert out == [{"error (old)": "x", "error": ""}]
    for reserved in ("__s3task_row", "__s3task_errors"):
        assert check_columns(trim, ["Name", reserved])[1] == {
            0: f"the file has a column named {reserved!r}, a name s3task keeps for itself"
        }
