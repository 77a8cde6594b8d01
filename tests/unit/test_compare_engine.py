"""The compare engine (s3task/compare/): two streams of Arrow text tables compared by key columns in DuckDB,
with the pinned meanings an analyst relies on — refusals in words, "1.0" = "1" only where the Parquet copy's
rule makes a column a number on both sides, empty sides, Unicode keys, columns on one side only — and the
highlighter CSV (daff's format) read back as a user reads it."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pyarrow as pa
import pytest

from s3task.compare import compare, suggest_keys
from s3task.compare.highlighter import arrow
from s3task.compare.keys import refuse_without_keys
from s3task.errors import InvalidInput

TEXT = pa.large_string()


def side(columns: dict[str, list[str]], *, blocks: int = 1) -> list[pa.Table]:
    """A result as the project's reader gives it: tables of text, ``blocks`` of them (an empty one if no rows)."""
    table = pa.table({name: pa.array(values, TEXT) for name, values in columns.items()})
    if table.num_rows == 0 or blocks == 1:
        return [table]
    size = -(-table.num_rows // blocks)
    return [table.slice(i, size) for i in range(0, table.num_rows, size)]


def run(old: list[pa.Table], new: list[pa.Table], keys: list[str], **kw):
    out = io.StringIO(newline="")
    summary = compare(old, new, keys, out=out, **kw)
    text = out.getvalue()
    assert text.startswith("\ufeff")
    return summary, list(csv.reader(io.StringIO(text[1:], newline="")))


OLD = {"id": ["1", "2", "3", "4"], "name": ["Ann", "Ben", "Cy", "Di"], "price": ["10", "20", "30", "40"]}
NEW = {"id": ["1", "2", "4", "5"], "name": ["Ann", "Benjamin", "Di", "Ed"], "price": ["10", "25", "40", "50"]}


def test_counts_summary_and_the_highlighter_as_daff_writes_it() -> None:
    summary, rows = run(side(OLD, blocks=2), side(NEW, blocks=3), ["id"])
    assert (summary.added, summary.removed, summary.changed, summary.unchanged) == (1, 1, 1, 2)
    assert summary.columns_changed == {"name": 1, "price": 1} and summary.cells_changed == 2
    assert rows == [
        ["@@", "id", "name", "price"],
        ["->", "2", "Ben->Benjamin", "20->25"],
        ["+++", "5", "Ed", "50"],
        ["---", "3", "Cy", "30"],
    ]  # unchanged rows left out; changed and added in the new order, then the removed
    assert "name changed in 1 row" in summary.lines() and "price changed in 1 row" in summary.lines()
    assert summary.lines()[0] == "compared by id: 1 row added, 1 row removed, 1 row changed, 2 rows unchanged"
    assert summary.as_dict()["rows"] == {"added": 1, "removed": 1, "changed": 1, "unchanged": 2}


def test_one_point_oh_equals_one_only_where_both_sides_are_numbers() -> None:
    old = {"k": ["a", "b", "c"], "amount": ["1.0", "2.50", "3"], "code": ["1.0", "007", "x"], "n": ["1", "2", "3"]}
    new = {"k": ["a", "b", "c"], "amount": ["1", "2.5", "3.0"], "code": ["1", "7", "x"], "n": ["1", "2", "3.01"]}
    summary, rows = run(side(old), side(new), ["k"])
    assert summary.numeric_columns == ["amount", "n"]  # "code" holds x: text on both sides by the copy's rule
    assert summary.columns_changed == {"amount": 0, "code": 2, "n": 1}
    assert rows[1:] == [
        ["->", "a", "1", "1.0->1", "1"],
        ["->", "b", "2.5", "007->7", "2"],
        ["->", "c", "3.0", "x", "3->3.01"],
    ]


def test_a_number_on_one_side_only_compares_as_text() -> None:
    summary, _rows = run(side({"k": ["a"], "v": ["1.0"]}), side({"k": ["a"], "v": ["1"]}), ["k"])
    assert summary.changed == 0  # both numbers
    summary, rows = run(side({"k": ["a", "b"], "v": ["1.0", "n/a"]}), side({"k": ["a", "b"], "v": ["1", "n/a"]}), ["k"])
    assert summary.numeric_columns == [] and rows[1:] == [["->", "a", "1.0->1"]]


def test_whole_numbers_compare_exactly_and_an_empty_cell_only_equals_an_empty_one() -> None:
    big = "123456789012345678"
    old = {"k": ["a", "b", "c"], "v": [big, "", "5"]}
    new = {"k": ["a", "b", "c"], "v": [str(int(big) + 1), "0", ""]}
    summary, rows = run(side(old), side(new), ["k"])
    assert (
        summary.changed == 3 and rows[1][2] == f"{big}->{int(big) + 1}" and rows[2][2] == "'->0"
    )  # as Excel would run it, protected


@pytest.mark.parametrize("where", ["old", "new"])
def test_a_key_missing_on_a_side_is_refused_naming_the_column_and_the_side(where: str) -> None:
    without = {"name": ["Ann"], "price": ["1"]}
    old, new = (without, NEW) if where == "old" else (OLD, without)
    with pytest.raises(InvalidInput) as refused:
        compare(side(old), side(new), ["id"])
    assert f"the key column 'id' is not in the {where} result (it has: name, price)" in str(refused.value)


@pytest.mark.parametrize("where", ["old", "new"])
def test_repeated_keys_are_refused_naming_the_first_ten_never_paired(where: str) -> None:
    ids = [f"K{i}" for i in range(12) for _ in range(2)] + ["single"]
    repeated = {"id": ids, "v": [str(i) for i in range(len(ids))]}
    unique = {"id": ["K0", "single"], "v": ["0", "1"]}
    old, new = (repeated, unique) if where == "old" else (unique, repeated)
    with pytest.raises(InvalidInput) as refused:
        compare(side(old, blocks=4), side(new), ["id"])
    words = str(refused.value)
    assert f"keys repeat in the {where} result" in words and "(the first ten)" in words
    assert all(f"'K{i}' (2 rows)" in words for i in range(10)) and "K10" not in words and "single" not in words


def test_repeats_of_a_two_column_key_are_named_by_both_values() -> None:
    old = {"a": ["x", "x", "x"], "b": ["1", "2", "1"], "v": ["p", "q", "r"]}
    with pytest.raises(InvalidInput, match=r"a \+ b 'x' \+ '1' \(2 rows\)"):
        compare(side(old), side({"a": ["x"], "b": ["1"], "v": ["p"]}), ["a", "b"])
    summary, _ = run(side({"a": ["x", "x"], "b": ["1", "2"]}), side({"a": ["x", "y"], "b": ["1", "2"]}), ["a", "b"])
    assert (summary.added, summary.removed, summary.unchanged) == (1, 1, 1)


def test_empty_results_compare() -> None:
    empty = {"id": [], "name": [], "price": []}
    summary, rows = run(side(empty), side(empty), ["id"])
    assert (summary.added, summary.removed, summary.changed, summary.unchanged) == (0, 0, 0, 0)
    assert rows == [["@@", "id", "name", "price"]]
    summary, rows = run(side(empty), side(NEW), ["id"])
    assert summary.added == 4 and [r[0] for r in rows[1:]] == ["+++"] * 4
    summary, rows = run(side(OLD), side(empty), ["id"])
    assert summary.removed == 4 and [r[1] for r in rows[1:]] == ["1", "2", "3", "4"]


def test_unicode_keys_and_values() -> None:
    keys = ["Zürich", "東京", "🙂", "Ärger", "zurich"]
    old = {"Stadt": keys, "Wert": ["1", "2", "3", "4", "5"]}
    new = {"Stadt": keys[::-1], "Wert": ["50", "40", "3", "20", "ünf"]}
    summary, rows = run(side(old), side(new), ["Stadt"])
    assert summary.changed == 4 and summary.unchanged == 1
    assert ["->", "東京", "2->20"] in rows and ["->", "Zürich", "1->ünf"] in rows


def test_columns_on_one_side_are_reported_as_added_and_removed() -> None:
    old = {"id": ["1", "2"], "Price": ["1", "2"], "gone": ["a", "b"]}
    new = {"id": ["1", "3"], "price": ["1", "9"], "Price": ["1", "3"]}
    summary, rows = run(side(old), side(new), ["id"])
    assert summary.added_columns == ["price"] and summary.removed_columns == ["gone"]
    assert summary.changed == 0 and summary.unchanged == 1  # rows compare on the columns both have
    assert "columns added: price" in summary.lines() and "columns removed: gone" in summary.lines()
    assert rows == [
        ["!", "", "+++", "", "---"],
        ["@@", "id", "price", "Price", "gone"],
        ["+++", "3", "9", "3", ""],
        ["---", "2", "", "2", "b"],
    ]


def test_the_highlighter_keeps_values_readable_and_spreadsheets_safe() -> None:
    old = {"id": ["1", "2"], "note": ["a->b", "ok"]}
    new = {"id": ["1", "2", "3"], "note": ["a->c", "=HYPERLINK(1)", "-2"]}
    _summary, rows = run(side(old), side(new), ["id"])
    assert rows[1] == ["->", "1", "a->b-->a->c"]  # the arrow lengthened: still one way to read it
    assert rows[2] == ["->", "2", "ok->=HYPERLINK(1)"] and rows[3] == ["+++", "3", "-2"]
    assert arrow("x-->y", "z") == "x-->y--->z"
    _summary, rows = run(side({"id": ["1"]}), side({"id": ["1", "=cmd()"]}), ["id"])
    assert rows[1] == ["+++", "'=cmd()"]  # a formula is not run by a spreadsheet opening it


def test_cells_with_commas_quotes_and_line_ends_are_written_as_pythons_csv_writes_them() -> None:
    tricky = ["a,b", 'say "hi"', "two\nlines", "cr\r\nlf", " spaced ", "", '"', ","]
    old = {"id": [str(i) for i in range(8)], "v": tricky}
    new = {"id": [str(i) for i in range(1, 9)], "v": [t + "!" for t in tricky[1:]] + ['x,"y"']}
    summary, rows = run(side(old), side(new), ["id"])
    expected = [
        ["@@", "id", "v"],
        *(["->", str(i), f"{tricky[i]}->{tricky[i]}!"] for i in range(1, 5)),
        ["->", "5", "'->!"],  # from empty: starts with - as a formula does, so protected
        *(["->", str(i), f"{tricky[i]}->{tricky[i]}!"] for i in range(6, 8)),
        ["+++", "8", 'x,"y"'],
        ["---", "0", "a,b"],
    ]
    assert rows == expected and summary.highlighted == 9
    out = io.StringIO(newline="")
    compare(side(old), side(new), ["id"], out=out)
    written = io.StringIO(newline="")
    csv.writer(written, lineterminator="\r\n").writerows(expected)
    assert out.getvalue() == "\ufeff" + written.getvalue()  # byte for byte, quoting included


def test_no_key_or_a_key_named_twice_is_refused() -> None:
    with pytest.raises(InvalidInput, match="name at least one key column"):
        compare(side(OLD), side(NEW), [])
    with pytest.raises(InvalidInput, match="named twice"):
        compare(side(OLD), side(NEW), ["id", "id"])


def test_suggested_keys_are_filled_and_unique_on_both_sides() -> None:
    old = {"id": ["1", "2", "3"], "email": ["a@x", "b@x", ""], "city": ["A", "A", "B"], "code": ["p", "q", "r"]}
    new = {"id": ["1", "2", "4"], "email": ["a@x", "b@x", "c@x"], "city": ["A", "B", "C"], "code": ["p", "p", "r"]}
    assert suggest_keys(side(old), side(new)) == ["id"]


@pytest.mark.slow
def test_a_comparison_larger_than_its_memory_completes_in_the_new_results_order(tmp_path: Path) -> None:
    rows, block = 700_000, 100_000  # about 80 MB a side as text, against a 64 MB limit
    starts = range(0, rows, block)

    def result(changed: bool):
        for start in reversed(starts) if changed else starts:  # the new result in another order
            at = range(start, start + block)
            yield pa.table(
                {
                    "id": pa.array([f"K{i:08d}" for i in at], TEXT),
                    "text": pa.array(
                        [("new" if changed and i % 20 == 0 else "old") + "-" * 60 + str(i) for i in at], TEXT
                    ),
                    "amount": pa.array([f"{i}.5" if changed else f"{i}.50" for i in at], TEXT),
                }
            )

    assert sum(t.nbytes for t in result(True)) > 64 * 2**20, "the sides fit in memory: the test proves nothing"
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    class Watched(io.StringIO):
        spooled = 0  # bytes of the sides spooled to the scratch folder when the highlighter starts

        def write(self, s: str) -> int:
            if not self.spooled:
                self.spooled = sum(p.stat().st_size for p in scratch.rglob("*.parquet")) or -1
            return super().write(s)

    out = Watched()
    summary = compare(result(False), result(True), ["id"], out=out, memory_mb=64, scratch=str(scratch))
    assert (summary.changed, summary.unchanged) == (rows // 20, rows - rows // 20)
    assert summary.columns_changed == {"text": rows // 20, "amount": 0}  # 12.5 = 12.50
    assert out.spooled > 0, "the sides were not held in the scratch folder"
    keys = [line.split(",")[1] for line in out.getvalue().splitlines()[1:]]
    assert keys == [f"K{i:08d}" for start in reversed(starts) for i in range(start, start + block) if i % 20 == 0]
    assert not os.listdir(scratch)  # the sides and DuckDB's files go with the comparison


def test_keys_compare_as_text_and_a_column_named_twice_is_refused() -> None:
    summary, _rows = run(side({"id": ["1.0", "2"], "v": ["a", "b"]}), side({"id": ["1", "2"], "v": ["a", "b"]}), ["id"])
    assert (summary.added, summary.removed, summary.unchanged) == (1, 1, 1)
    twice = pa.table([pa.array(["1"], TEXT), pa.array(["2"], TEXT)], names=["id", "id"])
    with pytest.raises(InvalidInput, match="the new result has two columns named 'id'"):
        compare(side(OLD), [twice], ["id"])


def test_the_refusal_without_keys_suggests_or_says_that_none_is_unique() -> None:
    assert str(refuse_without_keys(["id", "email"])).endswith("unique in both results: id, email")
    assert "no single column has unique values in both results" in str(refuse_without_keys([]))


def test_numbers_written_differently_are_equal_in_a_numeric_column() -> None:
    old = {"k": ["a", "b", "c", "d"], "whole": ["+5", "-0", "7", "8"], "real": ["1e3", ".5", "0.10", "2"]}
    new = {"k": ["a", "b", "c", "d"], "whole": ["5", "0", "7", "9"], "real": ["1000", "0.5", "0.1", "2.000001"]}
    summary, rows = run(side(old), side(new), ["k"])
    assert summary.numeric_columns == ["whole", "real"]
    assert summary.columns_changed == {"whole": 1, "real": 1} and rows[1:] == [["->", "d", "8->9", "2->2.000001"]]


def test_a_column_named_like_a_formula_is_protected_in_the_highlighters_header_as_its_values_are() -> None:
    old = {"id": ["1"], "=HYPERLINK(1)": ["@x"]}
    new = {"id": ["1"], "=HYPERLINK(1)": ["@y"]}
    _, rows = run(side(old), side(new), ["id"])
    assert rows == [["@@", "id", "'=HYPERLINK(1)"], ["->", "1", "'@x->@y"]]
