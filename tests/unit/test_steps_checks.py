"""Check values (issue 32): each of Frictionless Table Schema's constraints and each format, on the error words.

A failing row stays in the file with the check's words in its error column; an empty cell passes every
check but "required". The formats are tried on what people type: spaces, lower case, accents, CJK and
emoji, an IBAN with a good and a bad checksum, a phone number of another country.
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
    steps = parse(raw)
    check_values(steps)
    assert check_columns(steps, blocks[0].column_names)[1] == {}
    runner = Runner(steps)
    return pa.concat_tables(runner.run(iter(blocks))).to_pylist(), runner.counts


def errors(check: dict[str, Any], cells: list[str]) -> dict[str, str]:
    """Each cell's error words after one check of the column "V"."""
    rows, counts = run([{"step": "check", "column": "V", **check}], text_table({"V": cells}))
    assert [r["V"] for r in rows] == cells  # a check never changes a cell
    assert counts == {1: Count(len(cells), len(cells), 0)}
    return {r["V"]: r["error"] for r in rows}


def failing(check: dict[str, Any], cells: list[str]) -> list[str]:
    return [cell for cell, words in errors(check, cells).items() if words]


def test_required_fails_empty_cells_and_cells_of_spaces_only() -> None:
    assert errors({"required": True}, ["x", "", "  ", "\u00a0", "🙂"]) == {
        "x": "",
        "": "V: is required",
        "  ": "V: is required",
        "\u00a0": "V: is required",
        "🙂": "",
    }


FORMATS = [
    (
        "email",
        ["ann@example.com", "  bob@example.org ", "ANN@EXAMPLE.COM", "josé@exämple.de", ""],
        ["not an email", "a@b", "ann@@example.com", "@example.com", "ann@example.com 🙂"],
        "V: not an email address",
    ),
    (
        "url",
        ["https://example.com/a?b=1#c", "http://例え.jp", "HTTPS://EXAMPLE.COM:8080/x", "http://localhost", ""],
        ["ftp://example.com", "example.com", "https://", "http://exa mple.com", "www.example.com"],
        "V: not a web address (http:// or https://)",
    ),
    (
        "phone",
        ["+44 20 7946 0958", "+1 (415) 555-2671", "+33123456789", ""],
        ["020 7946 0958", "+0123", "+441234567890123456", "phone me", "+44 20 7946 0958 ext"],
        "V: not a phone number in international form (+ and up to 15 digits)",
    ),
    (
        "phone:GB",
        ["020 7946 0958", "+44 20 7946 0958", "07911 123456", "(020) 7946-0958", ""],
        ["12345", "abc", "+1 415 555 2671", "+33 1 23 45 67 89", "020 7946 095"],
        "V: not a GB phone number",
    ),
    (
        "postcode:GB",
        ["SW1A 1AA", "sw1a1aa", "EC1A 1BB", "M1 1AE", "GIR 0AA", ""],
        ["ABC 123", "Q1 1AA", "SW1A 1A", "12345"],
        "V: not a GB postcode",
    ),
    ("postcode:US", ["12345", "12345-6789", ""], ["1234", "123456", "ABCDE", "12345-678"], "V: not a US postcode"),
    ("postcode:DE", ["10115", " 80331 ", ""], ["1011", "101155", "D-10115", "１０１１５"], "V: not a DE postcode"),
    ("postcode:NL", ["1234 AB", "1234ab", "9999ZZ", ""], ["0123 AB", "1234 A", "12345 AB", "AB 1234"],
     "V: not a NL postcode"),
    (
        "iban",
        ["GB82 WEST 1234 5698 7654 32", "GB82WEST12345698765432", "de89 3704 0044 0532 0130 00", ""],
        ["GB83 WEST 1234 5698 7654 32", "DE89370400440532013001", "xx", "GB82-WEST-1234-5698-7654-32"],
        "V: not a valid IBAN",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("fmt", "good", "bad", "words"), FORMATS, ids=[f[0] for f in FORMATS])
def test_each_format_passes_what_fits_and_names_what_does_not(
    fmt: str, good: list[str], bad: list[str], words: str
) -> None:
    found = errors({"format": fmt}, good + bad)
    assert {cell: found[cell] for cell in good} == dict.fromkeys(good, "")
    assert {cell: found[cell] for cell in bad} == dict.fromkeys(bad, words)


def test_a_pattern_must_match_the_whole_cell() -> None:
    check = {"pattern": "[A-Z]{2}-[0-9]{2}"}
    assert failing(check, ["AB-12", "ab-12", "AB-123", "xAB-12", "", " AB-12 "]) == ["ab-12", "AB-123", "xAB-12"]
    assert errors(check, ["ab-12"]) == {"ab-12": "V: does not match the pattern [A-Z]{2}-[0-9]{2}"}
    # An alternation is the whole cell's too, not a part of it; Unicode classes work.
    assert failing({"pattern": "a|b"}, ["a", "b", "ab", "abc"]) == ["ab", "abc"]
    assert failing({"pattern": r"\p{Han}+"}, ["東京", "東京x", "🙂"]) == ["東京x", "🙂"]


def test_one_of_the_values_listed_as_written() -> None:
    assert errors({"enum": ["rot", "grün", "青"]}, ["rot", " grün ", "Grün", "青", "", "🙂"]) == {
        "rot": "",
        " grün ": "",
        "Grün": "V: not one of rot, grün, 青",
        "青": "",
        "": "",
        "🙂": "V: not one of rot, grün, 青",
    }
    many = [str(n) for n in range(12)]
    assert errors({"enum": many}, ["12"]) == {"12": "V: not one of 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, …"}


def test_lengths_count_characters_not_bytes() -> None:
    assert errors({"minLength": 3, "maxLength": 4}, ["日本語", "日本", "日本語です", "", "🙂🙂🙂", "éé"]) == {
        "日本語": "",
        "日本": "V: shorter than 3 characters",
        "日本語です": "V: longer than 4 characters",
        "": "",
        "🙂🙂🙂": "",
        "éé": "V: shorter than 3 characters",
    }


def test_numbers_between_a_minimum_and_a_maximum() -> None:
    check = {"type": "number", "minimum": 0, "maximum": 100}
    assert errors(check, ["5", "0", "100", "10.5", "-1", "100.01", "1e3", "1,5", "abc", ""]) == {
        "5": "",
        "0": "",
        "100": "",
        "10.5": "",
        "-1": "V: less than 0",
        "100.01": "V: more than 100",
        "1e3": "V: more than 100",
        "1,5": "V: not a number",  # Plain numbers first
        "abc": "V: not a number",
        "": "",
    }
    assert failing({"type": "number"}, ["1", "x"]) == ["x"]  # the type alone is a check
    assert failing({"type": "number", "maximum": 0}, ["0", "0.5", "-2"]) == ["0.5"]  # a bound of 0 is a bound


def test_dates_between_a_minimum_and_a_maximum() -> None:
    check = {"type": "date", "minimum": "2024-01-01", "maximum": "2024-12-31"}
    assert errors(check, ["2024-01-01", "2024-02-29", "2023-12-31", "2025-01-01", "2023-02-29", "31/01/2024", ""]) == {
        "2024-01-01": "",
        "2024-02-29": "",
        "2023-12-31": "V: less than 2024-01-01",
        "2025-01-01": "V: more than 2024-12-31",
        "2023-02-29": "V: not a date (YYYY-MM-DD)",
        "31/01/2024": "V: not a date (YYYY-MM-DD)",
        "": "",
    }


def test_not_before_another_column_in_the_same_row() -> None:
    block = text_table(
        {
            "Start": ["2024-01-05", "2024-01-05", "", "x", "2024-03-01"],
            "End": ["2024-01-04", "2024-01-05", "2024-01-01", "2024-01-01", "2024-02-30"],
        }
    )
    rows, _ = run([{"step": "check", "column": "End", "type": "date", "not_before_column": "Start"}], block)
    assert [r["error"] for r in rows] == ["End: before Start", "", "", "", "End: not a date (YYYY-MM-DD)"]
    numbers = text_table({"Low": ["2", "10", "3"], "High": ["10", "9", "3"]})
    rows, _ = run([{"step": "check", "column": "High", "type": "number", "not_before_column": "Low"}], numbers)
    assert [r["error"] for r in rows] == ["", "High: before Low", ""]  # 9 < 10 as numbers, not as text


def test_a_row_gets_the_words_of_every_check_it_fails_and_stays_in_the_file() -> None:
    raw = [
        {"step": "check", "column": "Mail", "required": True, "format": "email"},
        {"step": "check", "column": "Mail", "maxLength": 7},
        {"step": "check", "column": "Zip", "format": "postcode:DE"},
    ]
    block = text_table({"Mail": ["", "toolong@x", "ab@c.de"], "Zip": ["1", "10115", ""]})
    rows, counts = run(raw, block)
    assert [r["error"] for r in rows] == [
        "Mail: is required; Zip: not a DE postcode",
        "Mail: not an email address; Mail: longer than 7 characters",
        "",
    ]
    assert counts == {1: Count(3, 3, 0), 2: Count(3, 3, 0), 3: Count(3, 3, 0)}


@pytest.mark.parametrize(
    ("check", "words"),
    [
        ({}, "it checks nothing: say what the cells must be"),
        ({"format": "zip"}, "there is no format 'zip' (the formats: email, url, phone, iban, phone:GB"),
        ({"format": "phone:XX"}, "'XX' is not a country code phonenumbers knows"),
        ({"minimum": 5}, 'minimum needs the values to be numbers or dates ("type")'),
        ({"type": "number", "maximum": "ten"}, "maximum 'ten' is not a number"),
        ({"type": "date", "minimum": "2024-02-30"}, "minimum '2024-02-30' is not a date written YYYY-MM-DD"),
        ({"type": "date", "minimum": "01/01/2024"}, "minimum '01/01/2024' is not a date written YYYY-MM-DD"),
        ({"minLength": -1}, "minLength is a whole number of characters, 0 or more"),
        ({"maxLength": 2.5}, "maxLength is a whole number of characters, 0 or more"),
        ({"not_before_column": "Start"}, "comparing with another column needs the values to be numbers or dates"),
        ({"pattern": "(unclosed"}, "the pattern '(unclosed' is not a regular expression this can use"),
    ],
)
def test_a_check_that_cannot_run_is_refused_with_the_step_named(check: dict[str, Any], words: str) -> None:
    with pytest.raises(StepError) as raised:
        check_values(parse([{"step": "trim"}, {"step": "check", "column": "V", **check}]))
    assert str(raised.value).startswith("Step 2 (Check values): ")
    assert words in str(raised.value)


def test_a_check_of_a_column_that_is_not_there_names_the_step() -> None:
    steps = parse(
        [
            {"step": "rename_columns", "names": {"Mail": "E-mail"}},
            {"step": "check", "column": "Mail", "format": "email"},
            {"step": "check", "column": "End", "type": "date", "not_before_column": "Start"},
        ]
    )
    assert check_columns(steps, ["Mail", "End"])[1] == {
        2: "Step 2 (Check values): the column 'Mail' is not in the table "
        "(Step 1 (Rename columns) removed or renamed it)",
        3: "Step 3 (Check values): the column 'Start' is not in the table",
    }
