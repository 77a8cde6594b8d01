"""The steps that need the whole file (issue 32): remove duplicates, a unique check, a lookup, in DuckDB.

The file comes in several blocks, so a duplicate, a repeated value or a match is found across them; the
rows come back in the file's order. A lookup takes a reference table (a completed task's result) and
never adds rows: a key repeated in the reference refuses the step with the keys named unless it says
which to use, and a reference over the limit is refused. A header-only file still gives its columns.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from s3task.steps import StepError, parse
from s3task.steps import wholefile as wholefile_module
from s3task.steps.engine import Count, Runner, check_columns, check_values
from s3task.steps.wholefile import Context


def text_table(columns: dict[str, list[str]]) -> pa.Table:
    return pa.table({name: pa.array(cells, pa.large_string()) for name, cells in columns.items()})


def outputs(
    raw: list[dict[str, Any]], blocks: list[pa.Table], reference: Iterable[pa.Table] | None = None
) -> tuple[list[pa.Table], dict[int, Count]]:
    steps = parse(raw)
    check_values(steps)
    assert check_columns(steps, blocks[0].column_names)[1] == {}
    opened: list[str] = []

    def open_reference(task_id: str) -> Iterable[pa.Table]:
        opened.append(task_id)
        return reference or []

    runner = Runner(steps, Context(open_reference=open_reference))
    out = list(runner.run(iter(blocks)))
    assert set(opened) <= {"task-ref"}
    return out, runner.counts


def run(
    raw: list[dict[str, Any]], *blocks: pa.Table, reference: Iterable[pa.Table] | None = None
) -> tuple[list[dict[str, str]], dict[int, Count]]:
    out, counts = outputs(raw, list(blocks), reference)
    return pa.concat_tables(out).to_pylist(), counts


ORDERS = (
    text_table({"Id": ["1", "2", "3"], "Who": ["Zoë", "李", "zoë"], "Item": ["🍎", "🍐", "🍎"]}),
    text_table({"Id": ["4", "5"], "Who": ["Zoë", ""], "Item": ["🍐", "🍎"]}),
    text_table({"Id": ["6", "7"], "Who": ["李", ""], "Item": ["🍐", "🍎"]}),
)


# --- remove duplicates ---------------------------------------------------------------------


def test_remove_duplicates_keeps_the_first_of_each_key_across_blocks_in_file_order() -> None:
    rows, counts = run([{"step": "remove_duplicates", "columns": ["Who"]}], *ORDERS)
    assert [r["Id"] for r in rows] == ["1", "2", "3", "5"]  # "zoë" is another key; empty cells are one key
    assert counts == {1: Count(7, 4, 0)}


def test_remove_duplicates_keeps_the_last_of_each_key_and_the_kept_rows_stay_in_file_order() -> None:
    rows, counts = run([{"step": "remove_duplicates", "columns": ["Who"], "keep": "last"}], *ORDERS)
    assert [r["Id"] for r in rows] == ["3", "4", "6", "7"]
    assert [r["Who"] for r in rows] == ["zoë", "Zoë", "李", ""]
    assert counts == {1: Count(7, 4, 0)}


def test_remove_duplicates_with_several_key_columns_or_the_whole_row() -> None:
    rows, _ = run([{"step": "remove_duplicates", "columns": ["Who", "Item"]}], *ORDERS)
    assert [r["Id"] for r in rows] == ["1", "2", "3", "4", "5"]
    same = text_table({"A": ["x", "x", "x", "東"], "B": ["1", "1", "2", "1"]})
    rows, counts = run([{"step": "remove_duplicates"}], same, same)  # no key columns: the whole row
    assert rows == [
        {"A": "x", "B": "1", "error": ""},
        {"A": "x", "B": "2", "error": ""},
        {"A": "東", "B": "1", "error": ""},
    ]
    assert counts == {1: Count(8, 3, 0)}


def test_the_rows_kept_keep_their_errors_and_later_steps_run_on_them() -> None:
    raw = [
        {"step": "check", "column": "Who", "required": True},
        {"step": "remove_duplicates", "columns": ["Item"], "keep": "last"},
        {"step": "change_case", "columns": ["Who"], "to": "upper"},
    ]
    rows, counts = run(raw, *ORDERS)
    assert rows == [
        {"Id": "6", "Who": "李", "Item": "🍐", "error": ""},
        {"Id": "7", "Who": "", "Item": "🍎", "error": "Who: is required"},
    ]
    assert counts == {1: Count(7, 7, 0), 2: Count(7, 2, 0), 3: Count(2, 2, 0)}


# --- unique --------------------------------------------------------------------------------


def test_unique_marks_every_row_whose_value_an_earlier_row_had_across_blocks() -> None:
    rows, counts = run([{"step": "check", "column": "Who", "unique": True}], *ORDERS)
    words = "Who: repeats an earlier row's value"
    assert [(r["Id"], r["error"]) for r in rows] == [
        ("1", ""),
        ("2", ""),
        ("3", ""),  # another case is another value
        ("4", words),
        ("5", ""),  # empty cells pass
        ("6", words),
        ("7", ""),
    ]
    assert counts == {1: Count(7, 7, 0)}


def test_unique_reads_cells_as_the_other_checks_do_spaces_at_the_ends_aside() -> None:
    block = text_table({"V": ["  ", "\u00a0", "x", " x ", "x\u00a0", "🙂", "🙂"]})
    rows, _ = run([{"step": "check", "column": "V", "unique": True, "required": True}], block)
    words = "V: repeats an earlier row's value"
    assert [r["error"] for r in rows] == ["V: is required", "V: is required", "", words, words, "", words]


def test_unique_with_other_constraints_gives_all_the_words_in_the_order_of_the_steps() -> None:
    raw = [
        {"step": "check", "column": "Who", "unique": True, "maxLength": 1},
        {"step": "check", "column": "Item", "enum": ["🍎"]},
    ]
    rows, counts = run(raw, *ORDERS)
    assert rows[3]["error"] == "Who: longer than 1 characters; Who: repeats an earlier row's value; Item: not one of 🍎"
    assert rows[5]["error"] == "Who: repeats an earlier row's value; Item: not one of 🍎"
    assert counts == {1: Count(7, 7, 0), 2: Count(7, 7, 0)}


# --- lookup --------------------------------------------------------------------------------

CITIES = [
    text_table({"Code": ["A1", "b 2"], "City": ["Zürich", "東京"], "Flag": ["🇨🇭", "🇯🇵"]}),
    text_table({"Code": ["C3", "D\u00a04"], "City": ["Paris 🗼", "Köln"], "Flag": ["🇫🇷", "🇩🇪"]}),
]
LOOKUP = {"step": "lookup", "reference": "task-ref", "on": ["Code"], "take": ["City", "Flag"]}


def test_lookup_adds_the_reference_columns_to_rows_whose_key_matches_exactly() -> None:
    blocks = (
        text_table({"Code": ["A1", "a1", "C3"], "N": ["1", "2", "3"]}),
        text_table({"Code": ["", "B2"], "N": ["4", "5"]}),
    )
    out, counts = outputs([LOOKUP], list(blocks), CITIES)
    rows = pa.concat_tables(out).to_pylist()
    assert out[0].column_names == ["Code", "N", "City", "Flag", "error"]
    no_match = "no match for Code in the reference table"
    assert rows == [
        {"Code": "A1", "N": "1", "City": "Zürich", "Flag": "🇨🇭", "error": ""},
        {"Code": "a1", "N": "2", "City": "", "Flag": "", "error": no_match},
        {"Code": "C3", "N": "3", "City": "Paris 🗼", "Flag": "🇫🇷", "error": ""},
        {"Code": "", "N": "4", "City": "", "Flag": "", "error": no_match},
        {"Code": "B2", "N": "5", "City": "", "Flag": "", "error": no_match},
    ]
    assert counts == {1: Count(5, 5, 4)}  # two rows matched, two cells each


def test_lookup_ignoring_case_and_spaces() -> None:
    block = text_table({"Code": ["a1", " B2 ", "c 3", "d4", "e5"]})
    rows, counts = run([{**LOOKUP, "match": "ignoring case and spaces"}], block, reference=CITIES)
    assert [r["City"] for r in rows] == ["Zürich", "東京", "Paris 🗼", "Köln", ""]  # a no-break space is a space
    assert [r["Code"] for r in rows] == ["a1", " B2 ", "c 3", "d4", "e5"]  # the key as written
    assert [bool(r["error"]) for r in rows] == [False, False, False, False, True]
    assert counts == {1: Count(5, 5, 8)}


def test_lookup_unmatched_rows_left_empty_without_an_error() -> None:
    rows, _ = run([{**LOOKUP, "unmatched": "leave empty"}], text_table({"Code": ["A1", "zz", ""]}), reference=CITIES)
    assert [(r["City"], r["error"]) for r in rows] == [("Zürich", ""), ("", ""), ("", "")]


def test_lookup_on_keys_of_other_names_and_several_columns() -> None:
    reference = [
        text_table({"land": ["CH", "CH", "DE"], "plz": ["8001", "3000", "8001"], "Ort": ["Zürich", "Bern", "Köln?"]})
    ]
    raw = {
        "step": "lookup",
        "reference": "task-ref",
        "on": ["Country", "Zip"],
        "reference_on": ["land", "plz"],
        "take": ["Ort"],
    }
    block = text_table({"Country": ["CH", "DE", "CH", "FR"], "Zip": ["3000", "8001", "8001", "8001"]})
    rows, _ = run([raw], block, reference=reference)
    assert [r["Ort"] for r in rows] == ["Bern", "Köln?", "Zürich", ""]
    assert rows[3]["error"] == "no match for Country + Zip in the reference table"


def test_lookup_never_adds_rows_a_repeated_key_is_refused_with_the_keys_named() -> None:
    reference = [
        text_table({"Code": ["A1", "B2", "東"], "City": ["one", "two", "三"], "Flag": ["", "", ""]}),
        text_table({"Code": ["東", "A1", "C3"], "City": ["四", "five", "six"], "Flag": ["", "", ""]}),
    ]
    block = text_table({"Code": ["A1", "東", "C3", "B2"]})
    with pytest.raises(StepError) as raised:
        run([LOOKUP], block, reference=reference)
    assert str(raised.value) == (
        "Step 1 (Look up columns from a reference table): keys repeat in the reference table (A1, 東); "
        "say whether to use the first or the last of each"
    )
    rows, counts = run([{**LOOKUP, "repeated_keys": "first"}], block, reference=reference)
    assert [r["City"] for r in rows] == ["one", "三", "six", "two"]
    assert counts == {1: Count(4, 4, 8)}
    rows, _ = run([{**LOOKUP, "repeated_keys": "last"}], block, reference=reference)
    assert [r["City"] for r in rows] == ["five", "四", "six", "two"]


def test_keys_that_repeat_only_when_case_and_spaces_are_ignored_repeat() -> None:
    reference = [text_table({"Code": ["ab", "A B"], "City": ["x", "y"], "Flag": ["", ""]})]
    raw = {**LOOKUP, "match": "ignoring case and spaces"}
    with pytest.raises(StepError, match=r"keys repeat in the reference table \(ab\)"):
        run([raw], text_table({"Code": ["AB"]}), reference=reference)
    rows, _ = run([LOOKUP], text_table({"Code": ["AB", "ab"]}), reference=reference)  # exactly: no repeat
    assert [r["City"] for r in rows] == ["", "x"]


@pytest.mark.parametrize("join_rows", [1_000_000, 0])
def test_a_chain_of_whole_file_steps_gives_the_same_rows_whether_its_views_join_at_once_or_in_turn(
    monkeypatch: pytest.MonkeyPatch, join_rows: int
) -> None:
    """Each step is a view over the one before; past JOIN_ROWS joined rows the rows so far become a table
    first. Both dedupes' lists: the rows kept (fewer than half) and the rows left out (most stay)."""
    monkeypatch.setattr(wholefile_module, "JOIN_ROWS", join_rows)
    blocks = (
        text_table({"Code": ["A1", "C3", "A1", "x"], "N": ["1", "2", "3", "4"], "K": ["p", "p", "q", "p"]}),
        text_table({"Code": ["C3", "b 2", "A1"], "N": ["5", "6", "7"], "K": ["q", "p", "p"]}),
    )
    raw = [
        {"step": "remove_duplicates", "columns": ["Code", "K"]},  # 6 of 7 stay: the one left out is listed
        {"step": "check", "column": "Code", "unique": True},
        {"step": "lookup", **LOOKUP, "match": "ignoring case and spaces", "unmatched": "leave empty"},
        {"step": "remove_duplicates", "columns": ["K"], "keep": "last"},  # 2 of 6 stay: those are listed
    ]
    rows, counts = run(raw, *blocks, reference=CITIES)
    repeated = "Code: repeats an earlier row's value"
    assert [(r["N"], r["City"], r["error"]) for r in rows] == [("5", "Paris 🗼", repeated), ("6", "東京", "")]
    assert counts == {1: Count(7, 6, 0), 2: Count(6, 6, 0), 3: Count(6, 6, 10), 4: Count(6, 2, 0)}


def test_a_reference_over_the_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wholefile_module, "MAX_REFERENCE_ROWS", 3)
    with pytest.raises(StepError) as raised:
        run([LOOKUP], text_table({"Code": ["A1"]}), reference=CITIES)  # 2 + 2 rows
    assert str(raised.value) == (
        "Step 1 (Look up columns from a reference table): the reference table has more than 3 rows "
        "(the most a lookup takes)"
    )
    monkeypatch.setattr(wholefile_module, "MAX_REFERENCE_ROWS", 4)
    rows, _ = run([LOOKUP], text_table({"Code": ["A1"]}), reference=CITIES)
    assert rows[0]["City"] == "Zürich"


def test_a_reference_without_the_columns_or_rows_or_at_all_is_refused_in_words() -> None:
    block = text_table({"Code": ["A1"]})
    with pytest.raises(StepError) as raised:
        run([{**LOOKUP, "take": ["Town"]}], block, reference=CITIES)
    assert str(raised.value) == (
        "Step 1 (Look up columns from a reference table): the reference table has no column 'Town' "
        "(it has: Code, City, Flag)"
    )
    with pytest.raises(
        StepError, match=r"^Step 1 \(Look up columns from a reference table\): the reference table is empty"
    ):
        run([LOOKUP], block, reference=[])
    steps = parse([{"step": "trim"}, LOOKUP])
    with pytest.raises(StepError, match=r"^Step 2 \(Look up .*\): a lookup needs the reference table, which cannot"):
        list(Runner(steps, Context()).run(iter([block])))


# --- header-only files ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ([{"step": "remove_duplicates", "columns": ["Code"]}], ["Code", "N"]),
        ([{"step": "check", "column": "Code", "unique": True}], ["Code", "N"]),
        ([LOOKUP], ["Code", "N", "City", "Flag"]),
        ([{"step": "trim"}, {"step": "remove_duplicates"}, {"step": "split_column", "column": "N", "separator": "-",
          "into": ["N1", "N2"]}], ["Code", "N1", "N2"]),
        ([{"step": "keep_rows", "conditions": [{"column": "N", "is": "equals", "value": "x"}]}, LOOKUP],
         ["Code", "N", "City", "Flag"]),
    ],
)  # fmt: skip
def test_a_header_only_file_still_gives_the_output_columns(raw: list[dict[str, Any]], names: list[str]) -> None:
    out, counts = outputs(raw, [text_table({"Code": [], "N": []})], CITIES)
    assert [t.column_names for t in out] == [[*names, "error"]]
    assert out[0].num_rows == 0
    assert all(c.rows_in == c.rows_out == c.cells_changed == 0 for c in counts.values())


def test_every_row_removed_before_a_whole_file_step_still_gives_the_columns() -> None:
    every = [{"column": "Who", "is": "is_empty"}, {"column": "Who", "is": "is_not_empty"}]
    raw = [{"step": "remove_rows", "conditions": every, "match": "any"}, {"step": "remove_duplicates"}]
    out, counts = outputs(raw, list(ORDERS))
    assert [t.column_names for t in out] == [["Id", "Who", "Item", "error"]]
    assert counts == {1: Count(7, 0, 0), 2: Count(0, 0, 0)}


def test_no_blocks_at_all_give_no_blocks() -> None:
    steps = parse([{"step": "remove_duplicates"}])
    assert list(Runner(steps).run(iter([]))) == []


def test_with_a_scratch_folder_the_rows_wait_on_disk_and_come_back_the_same(tmp_path: Path) -> None:
    """An attempt's whole-file steps hold in DuckDB only the columns they read; the rows wait on disk in the
    attempt's scratch folder and are merged back in order. Two runs of them (a row-by-row step between), rows
    with errors from a check before: the same output as a preview's (in memory), and nothing left behind."""
    blocks = [
        text_table(
            {"Code": ["A1", "C3", " A1", "x", ""], "N": ["1", "2", "3", "4", "5"], "K": ["p", "", "q", "p", "q"]}
        ),
        text_table({"Code": ["C3", "b 2", "A1"], "N": ["6", "7", "8"], "K": ["q", "p", "p"]}),
        text_table({"Code": ["D\u00a04", "x"], "N": ["9", "10"], "K": ["", "p"]}),
    ]
    raw = [
        {"step": "check", "column": "K", "required": True},
        {"step": "remove_duplicates", "columns": ["Code", "K"]},
        {"step": "check", "column": "Code", "unique": True},
        {**LOOKUP, "match": "ignoring case and spaces", "unmatched": "error"},
        {"step": "trim", "columns": ["Code"]},
        {"step": "remove_duplicates", "columns": ["City"], "keep": "last"},
        {"step": "check", "column": "Code", "unique": True},
    ]
    steps = parse(raw)

    def rows(scratch: str | None) -> list[dict[str, Any]]:
        context = Context(scratch=scratch, open_reference=lambda _task: CITIES)
        out = list(Runner(steps, context).run(iter(blocks), numbered=True))
        return pa.concat_tables(out).to_pylist()

    on_disk = rows(str(tmp_path))
    assert on_disk == rows(None)
    repeated, unmatched = "Code: repeats an earlier row's value", "no match for Code in the reference table"
    assert [(r["N"], r["Code"], r["City"], r["error"]) for r in on_disk] == [
        ("3", "A1", "Zürich", repeated),
        ("5", "", "", unmatched),
        ("6", "C3", "Paris 🗼", repeated),
        ("7", "b 2", "東京", ""),
        ("9", "D\u00a04", "Köln", "K: is required"),
    ]
    assert [r["__s3task_row"] for r in on_disk] == [2, 4, 5, 6, 8]  # the input rows, for the errors workbook
    assert list(tmp_path.iterdir()) == []
