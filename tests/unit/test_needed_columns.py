"""The columns a task type needs (issue 22 item 2): found by header, alias or values; a file without
one refused at submit with the column named, nothing left queued; the column found settled in the
task's parameters, and the worker's output built from that column."""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pytest
from support import csv_bytes

from s3task.errors import InvalidInput
from s3task.handlers import columns
from s3task.handlers.email import EMAIL
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.testing import run_task_type

ALICE = Actor("alice")
ADDRESSES = ["ann@example.com", "bob@example.org", "cy@example.net", "dee@example.com"]


def sample(rows: list[list[str]]) -> dict[str, list[str]]:
    return {name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])}


@pytest.mark.parametrize(
    ("header", "found", "how"),
    [
        (["id", "E-Mail Address", "name"], "E-Mail Address", "header"),  # an alias, punctuation and case ignored
        (["id", "Courriel"], "Courriel", "header"),
        (["id", "work_email_2"], "work_email_2", "header"),  # a header that contains the word
        (["id", "Contact", "name"], "Contact", "values"),  # no header says so: the values do
    ],
)
def test_the_email_column_is_found_by_header_then_by_its_values(header: list[str], found: str, how: str) -> None:
    values = {h: ([*ADDRESSES] if h == found else ["x", "y", "z", "w"]) for h in header}
    match = columns.match(EMAIL, header, values)
    assert (match.column, match.how) == (found, how)
    assert found in match.describe()


def test_a_line_of_another_delimiter_is_not_taken_for_an_address() -> None:
    # A semicolon file read with commas: one column whose values hold an address among other cells.
    lines = {"Kunde;Mail;Betrag": [f"Anna;{a};1.5" for a in ADDRESSES]}
    assert columns.match(EMAIL, ["Kunde;Mail;Betrag"], lines).column is None


def test_values_decide_only_when_most_look_right_and_there_are_enough() -> None:
    mostly = {"Contact": [*ADDRESSES[:3], "call me", "no", "later"]}  # 3 of 6: not enough of them
    assert columns.match(EMAIL, ["Contact"], mostly).column is None
    few = {"Contact": ADDRESSES[:2]}  # two values decide nothing
    assert columns.match(EMAIL, ["Contact"], few).column is None
    blanks = {"Contact": [*ADDRESSES, "", " ", ""]}  # empty cells are not counted against it
    assert columns.match(EMAIL, ["Contact"], blanks).column == "Contact"


def test_a_chosen_column_wins_and_a_missing_one_is_named() -> None:
    rows = {"Mail": ADDRESSES, "Backup": ADDRESSES}
    assert columns.match(EMAIL, ["Mail", "Backup"], rows, chosen=" backup ").column == "Backup"
    with pytest.raises(InvalidInput, match="there is no column named 'Addr'; columns are: 'Mail', 'Backup'"):
        columns.match(EMAIL, ["Mail", "Backup"], rows, chosen="Addr")


def store_and_service(tmp_path: Path) -> tuple[LocalStore, TaskService]:
    store = LocalStore(tmp_path / "store")
    return store, TaskService(store, Layout())


def test_a_file_without_the_needed_column_is_refused_at_submit_and_leaves_no_task(tmp_path: Path) -> None:
    store, service = store_and_service(tmp_path)
    body = csv_bytes([["id", "name"], ["1", "Ann"], ["2", "Bob"], ["3", "Cy"]])
    with pytest.raises(InvalidInput) as raised:
        service.submit_file(ALICE, "no emails", "email_enrichment", None, body)
    assert str(raised.value) == (
        "the uploaded file cannot be processed: no email column found; columns are: 'id', 'name'; "
        "set the 'email column' parameter"
    )
    assert service.list(ALICE).tasks == []
    assert store.list_keys(Layout().active_root) == []


def test_a_file_that_names_a_missing_column_is_refused_at_submit(tmp_path: Path) -> None:
    _store, service = store_and_service(tmp_path)
    body = csv_bytes([["id", "Mail"], ["1", "ann@example.com"]])
    with pytest.raises(InvalidInput, match="there is no column named 'Email'; columns are: 'id', 'Mail'"):
        service.submit_file(ALICE, "named", "email_enrichment", {"email_column": "Email"}, body)
    assert service.list(ALICE).tasks == []


def test_the_column_found_by_its_values_is_settled_and_processed(tmp_path: Path) -> None:
    _store, service = store_and_service(tmp_path)
    # "Backup" holds addresses too, but fewer of its values are: the column most like addresses wins.
    rows = [["id", "Backup", "Contact"], *[[str(i), "-" if i else a, a.upper()] for i, a in enumerate(ADDRESSES)]]
    record = service.submit_file(ALICE, "by values", "email_enrichment", None, csv_bytes(rows))
    assert record.payload["email_column"] == "Contact"  # what the check found is what the worker is told
    out = run_task_type("email_enrichment", csv_bytes(rows), record.payload).rows
    assert out["email_normalized"].tolist() == ADDRESSES


def test_a_workbook_under_a_title_has_its_email_column_found(tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Customer export, March 2026"])
    sheet.append([])
    sheet.append(["Code", "E-mail", "Name"])
    for i, address in enumerate(ADDRESSES):
        sheet.append([i, address, f"n{i}"])
    data = io.BytesIO()
    book.save(data)
    _store, service = store_and_service(tmp_path)
    record = service.submit_file(ALICE, "book", "email_enrichment", None, data.getvalue(), {"kind": "detect"})
    assert (record.payload["email_column"], record.input_format.header_row) == ("E-mail", 3)


def test_a_header_with_the_word_whose_values_are_no_addresses_is_not_the_email() -> None:
    # Found by the outside review: email_opt_in (yes/no) was taken over the column of addresses.
    values = {"id": ["1", "2", "3"], "email_opt_in": ["yes", "no", "yes"], "contact": ADDRESSES[:3]}
    match = columns.match(EMAIL, ["id", "email_opt_in", "contact"], values)
    assert (match.column, match.how) == ("contact", "values")
    few = {"email_sent_at": ["2026-03-01"], "contact": []}  # too few values to tell: the header decides
    assert columns.match(EMAIL, ["email_sent_at", "contact"], few).column == "email_sent_at"
    named = {"Email": ["n/a", "none", "-"]}  # a header that is the need's name is taken whatever it holds
    assert columns.match(EMAIL, ["Email"], named).column == "Email"
