"""The row-by-row steps (issue 32): columns, rows, text, dates and numbers, on the cells a user reads back.

Every table is text, "" for an empty cell, with Unicode in it (accents, CJK, emoji). Each step is run as
the worker runs it, block by block, and the test reads the output cells, the words in the error column
and each step's count (rows in, rows out, cells changed). Dates come in the three European ways
(DD/MM/YYYY, DD.MM.YYYY, DD-MM-YYYY); numbers with a decimal comma and thousands separators.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from s3task.steps import StepError, parse
from s3task.steps.engine import Count, Runner, check_columns, check_values


def text_table(columns: dict[str, list[str]]) -> pa.Table:
    return pa.table({name: pa.array(cells, pa.large_string()) for name, cells in columns.items()})


def run(raw: list[dict[str, Any]], *blocks: pa.Table) -> tuple[list[dict[str, str]], dict[int, Count]]:
    """The output rows and each step's count; the list checked first as the submit check does."""
    steps = parse(raw)
    check_values(steps)
    assert check_columns(steps, blocks[0].column_names)[1] == {}
    runner = Runner(steps)
    out = list(runner.run(iter(blocks)))
    assert len(out) == len(blocks)  # a block in, a block out
    return pa.concat_tables(out).to_pylist(), runner.counts


def column(rows: list[dict[str, str]], name: str) -> list[str]:
    return [r[name] for r in rows]


PEOPLE = {
    "Name": ["Zoë", "李小龍", "Ana 🙂", ""],
    "Region": ["north", "South", "NORTH", ""],
    "Amount": ["10", "2.5", "-3", ""],
}


# --- columns -------------------------------------------------------------------------------


def test_keep_drop_rename_and_reorder_columns() -> None:
    block = text_table(PEOPLE)
    rows, counts = run([{"step": "keep_columns", "columns": ["Region", "Name"]}], block)
    assert list(rows[0]) == ["Region", "Name", "error"] and column(rows, "Name") == PEOPLE["Name"]
    assert counts == {1: Count(4, 4, 0)}
    rows, _ = run([{"step": "drop_columns", "columns": ["Region"]}], block)
    assert list(rows[0]) == ["Name", "Amount", "error"]
    rows, _ = run([{"step": "rename_columns", "names": {"Name": "名前", "Amount": "Montant €"}}], block)
    assert list(rows[0]) == ["名前", "Region", "Montant €", "error"] and column(rows, "名前") == PEOPLE["Name"]
    rows, _ = run([{"step": "reorder_columns", "columns": ["Amount"]}], block)
    assert list(rows[0]) == ["Amount", "Name", "Region", "error"]


# --- rows ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("condition", "kept"),
    [
        ({"column": "Region", "is": "equals", "value": "north"}, ["Zoë"]),
        ({"column": "Region", "is": "equals", "value": "north", "ignore_case": True}, ["Zoë", "Ana 🙂"]),
        ({"column": "Region", "is": "not_equals", "value": "north"}, ["李小龍", "Ana 🙂", ""]),
        ({"column": "Name", "is": "contains", "value": "小"}, ["李小龍"]),
        ({"column": "Name", "is": "contains", "value": "🙂"}, ["Ana 🙂"]),
        ({"column": "Region", "is": "starts_with", "value": "no", "ignore_case": True}, ["Zoë", "Ana 🙂"]),
        ({"column": "Name", "is": "ends_with", "value": "Ë", "ignore_case": True}, ["Zoë"]),
        ({"column": "Name", "is": "is_empty"}, [""]),
        ({"column": "Name", "is": "is_not_empty"}, ["Zoë", "李小龍", "Ana 🙂"]),
        ({"column": "Region", "is": "one_of", "values": ["south", "north"]}, ["Zoë"]),
        ({"column": "Region", "is": "one_of", "values": ["south", "north"], "ignore_case": True},
         ["Zoë", "李小龍", "Ana 🙂"]),
        ({"column": "Name", "is": "matches", "value": "^[A-Z]"}, ["Zoë", "Ana 🙂"]),
        ({"column": "Amount", "is": "greater_than", "value": 2}, ["Zoë", "李小龍"]),
        ({"column": "Amount", "is": "less_than", "value": "0"}, ["Ana 🙂"]),  # the empty cell is not a number
    ],
)  # fmt: skip
def test_keep_rows_by_each_test(condition: dict[str, Any], kept: list[str]) -> None:
    rows, counts = run([{"step": "keep_rows", "conditions": [condition]}], text_table(PEOPLE))
    assert column(rows, "Name") == kept
    assert counts == {1: Count(4, len(kept), 0)}


def test_remove_rows_all_or_any_and_dates_compared_as_dates() -> None:
    block = text_table({"Id": ["1", "2", "3", "4"], "Due": ["2024-01-31", "2024-03-01", "", "01/02/2024"]})
    before = {"column": "Due", "is": "before", "value": "2024-02-29"}
    after = {"column": "Due", "is": "after", "value": "2024-02-29"}
    rows, _ = run([{"step": "keep_rows", "conditions": [before]}], block)
    assert column(rows, "Id") == ["1"]  # "01/02/2024" is not a YYYY-MM-DD date: it meets neither
    rows, _ = run([{"step": "keep_rows", "conditions": [after]}], block)
    assert column(rows, "Id") == ["2"]
    rows, counts = run([{"step": "remove_rows", "conditions": [before, after], "match": "any"}], block)
    assert column(rows, "Id") == ["3", "4"] and counts == {1: Count(4, 2, 0)}
    rows, _ = run([{"step": "remove_rows", "conditions": [before, after]}], block)  # all: no row is both
    assert column(rows, "Id") == ["1", "2", "3", "4"]


def test_keep_rows_keeps_the_error_words_of_the_rows_it_keeps() -> None:
    raw = [
        {"step": "check", "column": "Amount", "type": "number", "minimum": 0},
        {"step": "remove_rows", "conditions": [{"column": "Name", "is": "is_empty"}]},
    ]
    rows, counts = run(raw, text_table(PEOPLE))
    assert [(r["Name"], r["error"]) for r in rows] == [("Zoë", ""), ("李小龍", ""), ("Ana 🙂", "Amount: less than 0")]
    assert counts == {1: Count(4, 4, 0), 2: Count(4, 3, 0)}


# --- text ----------------------------------------------------------------------------------


def test_trim_and_collapse_spaces_count_the_cells_they_change() -> None:
    block = text_table({"A": ["  Zoë\t", "東京", "", " \u00a0x\u00a0 "], "B": ["a   b", " c\n\nd ", "🙂  🙂", "e"]})
    rows, counts = run([{"step": "trim", "columns": []}], block)
    assert column(rows, "A") == ["Zoë", "東京", "", "x"]  # a no-break space is a space too
    assert column(rows, "B") == ["a   b", "c\n\nd", "🙂  🙂", "e"]
    assert counts == {1: Count(4, 4, 3)}
    rows, counts = run([{"step": "collapse_spaces", "columns": ["B"]}], block)
    assert column(rows, "B") == ["a b", " c d ", "🙂 🙂", "e"]
    assert column(rows, "A") == block.column("A").to_pylist()  # only the column listed
    assert counts == {1: Count(4, 4, 3)}


def test_change_case_of_accented_and_other_scripts() -> None:
    block = text_table({"A": ["élodie o'brien", "ÇA VA", "東京", "", "straße"]})
    rows, counts = run([{"step": "change_case", "columns": ["A"], "to": "title"}], block)
    assert column(rows, "A") == ["Élodie O'Brien", "Ça Va", "東京", "", "Straße"]
    assert counts == {1: Count(5, 5, 3)}
    rows, _ = run([{"step": "change_case", "columns": [], "to": "upper"}], block)
    assert column(rows, "A")[:3] == ["ÉLODIE O'BRIEN", "ÇA VA", "東京"]
    rows, _ = run([{"step": "change_case", "columns": [], "to": "lower"}], block)
    assert column(rows, "A")[:2] == ["élodie o'brien", "ça va"]


def test_find_and_replace_part_of_a_cell_whole_cells_ignoring_case_and_pairs() -> None:
    block = text_table({"City": ["St. Gallen", "st. moritz", "ST.", "Zürich", ""], "Code": ["a.b", "", "", "", ""]})
    rows, counts = run([{"step": "replace", "columns": ["City"], "find": "St.", "replace_with": "Sankt"}], block)
    assert column(rows, "City") == ["Sankt Gallen", "st. moritz", "ST.", "Zürich", ""]
    assert column(rows, "Code")[0] == "a.b" and counts == {1: Count(5, 5, 1)}
    # Ignoring case, the text found is text, not a pattern ("." is a dot), and "\1" in the replacement is kept.
    raw = {"step": "replace", "columns": [], "find": "st.", "replace_with": "S\\1$", "ignore_case": True}
    rows, _ = run([raw], block)
    assert column(rows, "City") == ["S\\1$ Gallen", "S\\1$ moritz", "S\\1$", "Zürich", ""]
    assert column(rows, "Code")[0] == "a.b"
    whole = {"step": "replace", "columns": ["City"], "find": "st.", "replace_with": "—", "whole_cell": True}
    rows, _ = run([{**whole, "ignore_case": True}], block)
    assert column(rows, "City") == ["St. Gallen", "st. moritz", "—", "Zürich", ""]
    rows, _ = run([whole], block)
    assert column(rows, "City")[2] == "ST."  # case counts unless told
    # Pairs (e.g. from a two-column file), one after another: the second sees the first's result.
    pairs = {"step": "replace", "columns": ["City"], "pairs": [["ü", "ue"], ["Zuerich", "Zurich"], ["🙂", "x"]]}
    rows, counts = run([pairs], block)
    assert column(rows, "City")[3] == "Zurich" and counts == {1: Count(5, 5, 1)}
    empty = {"step": "replace", "columns": ["City"], "find": "", "replace_with": "x", "whole_cell": True}
    with pytest.raises(StepError, match=r"^Step 1 \(Find and replace\): say what to find"):
        run([empty], block)


def test_split_a_column_into_new_ones_in_its_place() -> None:
    block = text_table({"Name": ["Zoë van Dijk", "李 小龍", "Ana", ""], "Region": ["n", "s", "e", "w"]})
    raw = {"step": "split_column", "column": "Name", "separator": " ", "into": ["First", "Last"]}
    rows, counts = run([raw], block)
    # The first column split: the new columns stand where it stood, the last one takes the rest.
    assert list(rows[0]) == ["First", "Last", "Region", "error"]
    assert [(r["First"], r["Last"]) for r in rows] == [("Zoë", "van Dijk"), ("李", "小龍"), ("Ana", ""), ("", "")]
    assert counts == {1: Count(4, 4, 8)}
    rows, _ = run([{**raw, "keep_original": True}], block)
    assert list(rows[0]) == ["Name", "First", "Last", "Region", "error"] and rows[0]["Name"] == "Zoë van Dijk"
    moved = text_table({"Region": ["n"], "Name": ["a・b・c"]})
    rows, _ = run([{**raw, "separator": "・"}], moved)
    assert rows == [{"Region": "n", "First": "a", "Last": "b・c", "error": ""}]
    with pytest.raises(StepError, match=r"^Step 1 \(Split a column\): .*(separator is empty|is required)"):
        check_values(parse([{**raw, "separator": ""}]))


def test_join_columns_after_the_last_of_them_or_in_their_place() -> None:
    block = text_table({"First": ["Zoë", "李", ""], "Last": ["van Dijk", "小龍", ""], "City": ["Köln", "東京", "x"]})
    raw = {"step": "join_columns", "columns": ["First", "Last"], "into": "Full name"}
    rows, counts = run([raw], block)
    assert list(rows[0]) == ["First", "Last", "Full name", "City", "error"]
    assert column(rows, "Full name") == ["Zoë van Dijk", "李 小龍", " "]
    assert counts == {1: Count(3, 3, 3)}
    rows, _ = run([{**raw, "keep_originals": False, "separator": " / "}], block)
    assert list(rows[0]) == ["Full name", "City", "error"]  # the first columns joined: in their place
    assert column(rows, "Full name")[:2] == ["Zoë / van Dijk", "李 / 小龍"]
    rows, _ = run([{**raw, "columns": ["City", "First"], "separator": "-", "keep_originals": False}], block)
    assert list(rows[0]) == ["Last", "Full name", "error"] and rows[0]["Full name"] == "Köln-Zoë"


def test_join_with_no_separator_runs_the_cells_together() -> None:
    block = text_table({"A": ["ab", "東"], "B": ["cd", "京"]})
    rows, _ = run([{"step": "join_columns", "columns": ["A", "B"], "separator": "", "into": "AB"}], block)
    assert column(rows, "AB") == ["abcd", "東京"]
    steps = parse([{"step": "join_columns", "columns": ["A", "B"], "separator": "", "into": "AB"}])
    assert parse(steps.to_json()).steps[0]["separator"] == ""  # kept as it reads back


# --- fill ----------------------------------------------------------------------------------


def test_fill_empty_cells_from_above_carries_across_blocks() -> None:
    first = text_table({"Group": ["Ärzte", "", " "], "Who": ["a", "b", "c"]})
    second = text_table({"Group": ["", "東京 🗼", ""], "Who": ["d", "e", "f"]})
    third = text_table({"Group": ["", ""], "Who": ["g", "h"]})
    rows, counts = run([{"step": "fill_empty", "columns": ["Group"]}], first, second, third)
    assert column(rows, "Group") == ["Ärzte", "Ärzte", "Ärzte", "Ärzte", "東京 🗼", "東京 🗼", "東京 🗼", "東京 🗼"]
    assert column(rows, "Who") == list("abcdefgh")
    assert counts == {1: Count(8, 8, 6)}


def test_fill_empty_cells_with_nothing_above_stay_empty_and_with_a_value() -> None:
    rows, counts = run([{"step": "fill_empty", "columns": ["G"]}], text_table({"G": ["", "", "x", ""]}))
    assert column(rows, "G") == ["", "", "x", "x"] and counts == {1: Count(4, 4, 1)}
    block = text_table({"G": ["", " ", "x"], "H": ["", "", ""]})
    rows, counts = run([{"step": "fill_empty", "columns": ["G"], "with": "value", "value": "—"}], block)
    assert column(rows, "G") == ["—", "—", "x"] and column(rows, "H") == ["", "", ""]
    assert counts == {1: Count(3, 3, 2)}


# --- dates ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "cells"),
    [
        ("DD/MM/YYYY", ["31/12/2024", "01/02/2024", "29/02/2024"]),
        ("DD.MM.YYYY", ["31.12.2024", "01.02.2024", "29.02.2024"]),
        ("DD-MM-YYYY", ["31-12-2024", "01-02-2024", "29-02-2024"]),
    ],
)
def test_european_dates_are_rewritten_as_iso(written: str, cells: list[str]) -> None:
    block = text_table({"Born": [*cells, ""], "Name": ["Zoë", "李", "🙂", ""]})
    rows, counts = run([{"step": "format_dates", "columns": ["Born"], "from": written}], block)
    assert column(rows, "Born") == ["2024-12-31", "2024-02-01", "2024-02-29", ""]
    assert column(rows, "error") == ["", "", "", ""]
    assert counts == {1: Count(4, 4, 3)}


def test_an_impossible_date_is_left_as_written_and_its_row_gets_an_error() -> None:
    block = text_table({"Born": ["31/02/2024", "29/02/2023", "28/02/2023", "32/01/2024", "2024-01-05", "x", ""]})
    rows, counts = run([{"step": "format_dates", "columns": ["Born"], "from": "DD/MM/YYYY"}], block)
    assert column(rows, "Born") == ["31/02/2024", "29/02/2023", "2023-02-28", "32/01/2024", "2024-01-05", "x", ""]
    words = "Born: not a date written DD/MM/YYYY"
    assert column(rows, "error") == [words, words, "", words, words, words, ""]
    assert counts == {1: Count(7, 7, 1)}


def test_dates_written_out_in_another_format_and_two_digit_years() -> None:
    block = text_table({"D": ["1/2/24", "31/12/99", "01/02/2024", " 5/6/00 "]})
    rows, _ = run([{"step": "format_dates", "columns": ["D"], "from": "D/M/YY", "to": "DD.MM.YYYY"}], block)
    assert column(rows, "D") == ["01.02.2024", "31.12.1999", "01/02/2024", "05.06.2000"]
    assert column(rows, "error") == ["", "", "D: not a date written D/M/YY", ""]


def test_detected_dates_day_first_and_the_ambiguity_is_asked_not_guessed() -> None:
    rows, _ = run([{"step": "format_dates", "columns": ["D"]}], text_table({"D": ["13/01/2024", "01/02/2024", ""]}))
    assert column(rows, "D") == ["2024-01-13", "2024-02-01", ""]
    rows, _ = run([{"step": "format_dates", "columns": ["D"]}], text_table({"D": ["01.02.2024"]}))
    assert column(rows, "D") == ["2024-02-01"]  # dots: only day first is tried
    with pytest.raises(StepError) as raised:
        run([{"step": "format_dates", "columns": ["D"]}], text_table({"D": ["01/02/2024", "03/04/2024"]}))
    assert str(raised.value) == (
        "Step 1 (Change date format), column 'D': the dates could be D/M/YYYY or M/D/YYYY (e.g. '01/02/2024'); "
        "say which the file uses"
    )
    with pytest.raises(StepError, match="the dates could be D-M-YYYY or M-D-YYYY"):
        run([{"step": "format_dates", "columns": ["D"]}], text_table({"D": ["01-02-2024"]}))
    # Said which: read as told.
    rows, _ = run([{"step": "format_dates", "columns": ["D"], "from": "MM/DD/YYYY"}], text_table({"D": ["01/02/2024"]}))
    assert column(rows, "D") == ["2024-01-02"]


def test_a_detected_format_holds_for_the_later_blocks() -> None:
    # The first block settles day first; the second alone could be either, and is read day first.
    blocks = text_table({"D": ["", ""]}), text_table({"D": ["13/01/2024"]}), text_table({"D": ["01/02/2024", "x"]})
    rows, counts = run([{"step": "format_dates", "columns": ["D"]}], *blocks)
    assert column(rows, "D") == ["", "", "2024-01-13", "2024-02-01", "x"]
    assert column(rows, "error")[-1] == "D: not a date written D/M/YYYY"
    assert counts == {1: Count(5, 5, 2)}


def test_detection_that_finds_no_format_names_the_cell_that_fits_none() -> None:
    with pytest.raises(StepError) as raised:
        run([{"step": "format_dates", "columns": ["D"]}], text_table({"D": ["13/01/2024", "31/02/2024"]}))
    assert str(raised.value) == (
        "Step 1 (Change date format), column 'D': no one date format fits every cell (e.g. '31/02/2024'); "
        "say the format the dates are in"
    )


# --- numbers -------------------------------------------------------------------------------


def test_numbers_with_a_decimal_comma_and_thousands_separators_become_plain() -> None:
    cells = [
        "1.234,5",
        "1 234,5",
        "1\u00a0234,50",
        "1'234",
        "12,3",
        "-0,5",
        ",5",
        "+3",
        "1.234.567",
        "",
        "1,2,3",
        "abc",
    ]
    rows, counts = run([{"step": "format_numbers", "columns": ["N"], "decimal": ","}], text_table({"N": cells}))
    plain = ["1234.5", "1234.5", "1234.50", "1234", "12.3", "-0.5", "0.5", "3", "1234567", "", "1,2,3", "abc"]
    assert column(rows, "N") == plain
    words = "N: not a number written with ',' as its decimal mark"
    assert column(rows, "error") == [""] * 10 + [words, words]
    assert counts == {1: Count(12, 12, 9)}


def test_numbers_with_a_decimal_point() -> None:
    block = text_table({"N": ["1,234.5", "1.234,5", "1234", "€5"]})
    rows, counts = run([{"step": "format_numbers", "columns": ["N"], "decimal": "."}], block)
    assert column(rows, "N") == ["1234.5", "1.234,5", "1234", "€5"]
    words = "N: not a number written with '.' as its decimal mark"
    assert column(rows, "error") == ["", words, "", words]
    assert counts == {1: Count(4, 4, 1)}


def test_every_error_of_a_row_is_kept_in_the_order_of_the_steps() -> None:
    raw = [
        {"step": "format_numbers", "columns": ["N"], "decimal": ","},
        {"step": "format_dates", "columns": ["D"], "from": "DD.MM.YYYY"},
    ]
    rows, _ = run(raw, text_table({"N": ["x", "1,5"], "D": ["31.02.2024", "1.1.2024"]}))
    assert rows[0]["error"] == "N: not a number written with ',' as its decimal mark; D: not a date written DD.MM.YYYY"
    assert rows[1] == {"N": "1.5", "D": "1.1.2024", "error": "D: not a date written DD.MM.YYYY"}
