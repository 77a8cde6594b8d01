"""Recipes (issue 22 item 3): a task's type, settings, input format and column choices saved under a
name, in the store with conditional writes; offered for an upload with the same header; a person's
own or shared by an operator."""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pytest
from support import csv_bytes

from s3task.errors import AccessDenied, InvalidInput, UnknownTaskType
from s3task.layout import Layout
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.tasks.recipes import Recipe, applied, same_header

ALICE, BOB, OPS = Actor("alice"), Actor("bob"), Actor("ops", operator=True)
MONTHLY = [["Kunde", "Mail", "Betrag"], ["Anna", "anna@example.com", "1,5"], ["Ben", "ben@example.org", "2,0"]]


def semicolons(rows: list[list[str]]) -> bytes:
    return csv_bytes(rows).replace(b",", b";")


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


def first_month(service: TaskService, actor: Actor = ALICE) -> str:
    rows = [[r[0], r[1], r[2].replace(",", ".")] for r in MONTHLY]
    read_as = {"delimiter": ";", "encoding": "utf-8"}  # as the New task page would have detected it
    return service.submit_file(actor, "March", "email_enrichment", None, semicolons(rows), read_as).task_id


def test_a_recipe_keeps_the_type_format_and_columns_and_is_offered_for_the_same_header(service: TaskService) -> None:
    task_id = first_month(service)
    saved = service.recipes.save(ALICE, "CRM monthly export", task_id)
    assert (saved.task_type, saved.params["email_column"]) == ("email_enrichment", "Mail")
    assert saved.input_format == {"delimiter": ";", "encoding": "utf-8"}
    assert saved.header == ["Kunde", "Mail", "Betrag"]
    assert [r.name for r in service.recipes.list(ALICE)] == ["CRM monthly export"]
    # Next month's file: the same columns in another order and case.
    offered = service.recipes.matching(ALICE, ["betrag", "KUNDE", "mail"])
    assert offered is not None and offered.name == "CRM monthly export"
    assert service.recipes.matching(ALICE, ["Kunde", "Mail"]) is None  # a column fewer: another file
    assert service.recipes.matching(BOB, ["Kunde", "Mail", "Betrag"]) is None  # alice's own, not bob's
    params, read_as = applied(service.recipes.get(ALICE, "crm monthly export"), None, None)
    april = service.submit_file(ALICE, "April", offered.task_type, params, semicolons(MONTHLY), read_as)
    assert (april.payload["email_column"], april.input_format.delimiter) == ("Mail", ";")


def test_a_name_taken_is_refused_unless_replaced(service: TaskService) -> None:
    task_id = first_month(service)
    service.recipes.save(ALICE, "Monthly", task_id)
    with pytest.raises(InvalidInput, match="there is already a recipe named 'monthly'"):
        service.recipes.save(ALICE, "monthly", task_id)  # names that differ in case are one recipe
    again = service.recipes.save(ALICE, "Monthly", task_id, replace=True)
    assert [r.saved_at for r in service.recipes.list(ALICE)] == [again.saved_at]


def test_a_replace_that_lost_a_race_is_told_and_keeps_the_winner(service: TaskService) -> None:
    task_id = first_month(service)
    service.recipes.save(ALICE, "Monthly", task_id)
    store = service.store
    real_get = store.get

    def get_then_someone_else_writes(key: str, *args, **kwargs):
        got = real_get(key, *args, **kwargs)
        if "/recipes/" in key:  # between our read and our write, another save lands
            winner = Recipe("Monthly", "alice", "copy", header=["x"])
            store.put(key, winner.to_json(), PutMode.OVERWRITE)
        return got

    store.get = get_then_someone_else_writes  # type: ignore[method-assign]
    try:
        with pytest.raises(InvalidInput, match="was changed by someone else just now; try again"):
            service.recipes.save(ALICE, "Monthly", task_id, replace=True)
    finally:
        store.get = real_get  # type: ignore[method-assign]
    assert service.recipes.get(ALICE, "Monthly").task_type == "copy"  # the winner's, not overwritten


def test_shared_recipes_are_an_operators_and_everyone_is_offered_them(service: TaskService) -> None:
    task_id = first_month(service, OPS)
    with pytest.raises(AccessDenied, match="only an operator can share"):
        service._recipes.save(ALICE, Recipe("Team", "alice", "copy", shared=True))
    service.recipes.save(OPS, "Team export", task_id, shared=True)
    assert [r.describe() for r in service.recipes.list(BOB)] == ["“Team export” (shared: email_enrichment)"]
    offered = service.recipes.matching(BOB, MONTHLY[0])
    assert offered is not None and offered.shared
    # Bob's own recipe for the same header is offered before the shared one.
    service._recipes.save(BOB, Recipe("Mine", "bob", "copy", header=list(MONTHLY[0])))
    mine = service.recipes.matching(BOB, MONTHLY[0])
    assert mine is not None and mine.name == "Mine"
    with pytest.raises(AccessDenied, match="only an operator can remove a shared recipe"):
        service.recipes.remove(BOB, "Team export", shared=True)
    service.recipes.remove(OPS, "Team export", shared=True)
    service.recipes.remove(BOB, "Mine")
    assert service.recipes.list(BOB) == []
    with pytest.raises(InvalidInput, match="there is no recipe named 'Mine' to remove"):
        service.recipes.remove(BOB, "Mine")


def test_a_workbook_recipe_keeps_its_sheet_and_header_row(service: TaskService) -> None:
    book = openpyxl.Workbook()
    book.active.title = "Notes"
    sheet = book.create_sheet("Orders")
    sheet.append(["Orders, March 2026"])
    sheet.append([])
    sheet.append(["Order", "Email"])
    sheet.append([1, "ann@example.com"])
    data = io.BytesIO()
    book.save(data)
    fmt = {"kind": "xlsx", "sheet": "Orders"}
    task_id = service.submit_file(ALICE, "book", "email_enrichment", None, data.getvalue(), fmt).task_id
    saved = service.recipes.save(ALICE, "Orders book", task_id)
    assert saved.input_format == {"kind": "xlsx", "sheet": "Orders", "header_row": 3}
    assert saved.header == ["Order", "Email"] and same_header(saved.header, ["email", "ORDER"])


def test_recipes_that_could_not_make_a_task_are_refused(service: TaskService) -> None:
    with pytest.raises(UnknownTaskType, match="no task type named 'nope'"):
        service._recipes.save(ALICE, Recipe("Bad", "alice", "nope"))
    with pytest.raises(InvalidInput, match="has no parameter 'colour'"):
        service._recipes.save(ALICE, Recipe("Bad", "alice", "copy", params={"colour": "red"}))
    with pytest.raises(InvalidInput, match="give the recipe a name"):  # as a task is told
        service._recipes.save(ALICE, Recipe("   ", "alice", "copy"))
    assert service.recipes.list(ALICE) == []


def test_a_half_done_delete_is_no_recipe_and_its_name_is_free(service: TaskService) -> None:
    # A store without conditional deletes (LocalStack) leaves an empty object where a recipe was.
    key = service.layout.recipe_key("alice", "monthly")
    service.store.put(key, b"", PutMode.CREATE)
    assert service.recipes.list(ALICE) == []
    with pytest.raises(InvalidInput, match="there is no recipe named 'Monthly'"):
        service.recipes.get(ALICE, "Monthly")
    service.recipes.save(ALICE, "Monthly", first_month(service))
    assert service.recipes.get(ALICE, "Monthly").params["email_column"] == "Mail"


def test_names_too_long_for_a_key_and_objects_that_are_no_recipe_are_plain_refusals(service: TaskService) -> None:
    # Found by the outside review: 30 CJK letters (under the 80) made a key too long, a bare ValueError;
    # a stored object that was not a recipe's JSON was a traceback.
    with pytest.raises(InvalidInput, match="is too long for a recipe; choose a shorter one"):
        service._recipes.save(ALICE, Recipe("中" * 30, "alice", "copy"))
    from s3task.layout import MAX_RECORD_BYTES

    stored = {"a": b"not json{", "b": b"[1,2]", "c": b'{"params": [1]}', "d": b" " * (MAX_RECORD_BYTES + 1)}
    for name, body in stored.items():
        service.store.put(service.layout.recipe_key("alice", name), body, PutMode.CREATE)
        with pytest.raises(InvalidInput, match=rf"recipes/own/alice/{name}\.json is (not a recipe|larger than)"):
            service.recipes.get(ALICE, name)
    assert service.recipes.list(ALICE) == []  # none of them listed as a recipe


#: Characters a task name refuses (s3task.safetext), each with the words the refusal names it by.
NOT_IN_A_NAME = {
    "RLO": ("invoice\u202egpj.exe", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    "ESC[31m": ("red \x1b[31malert", "U+001B ESCAPE"),
    "CR LF": ("ok\r\nfake  row", "U+000D CARRIAGE RETURN"),
    "TAB": ("one\ttwo", "U+0009 TAB"),
    "NUL": ("nul\x00here", "U+0000 NUL"),
    "C1 CSI": ("c1\x9b31m", "U+009B CONTROL SEQUENCE INTRODUCER"),
    "isolate": ("a\u2066b", "U+2066 LEFT-TO-RIGHT ISOLATE"),
    "zero width space": ("ad\u200bmin", "U+200B ZERO WIDTH SPACE"),
    "BOM": ("x\ufeffy", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
    "line separator": ("one\u2028two", "U+2028 LINE SEPARATOR"),
}


@pytest.mark.parametrize(("name", "named"), NOT_IN_A_NAME.values(), ids=NOT_IN_A_NAME.keys())
def test_a_recipe_name_refuses_what_a_task_name_refuses_in_the_same_words(
    service: TaskService, name: str, named: str
) -> None:
    # Found by the outside review (issue 36 item 7): a right-to-left override and ESC were saved in
    # recipe names, which task names refuse. One rule for every name a user gives.
    with pytest.raises(InvalidInput) as task_refused:
        service.create(ALICE, name, "copy")
    assert task_refused.value.message == f"the task name may hold only visible text and spaces, not {named}"
    task_id = first_month(service)
    with pytest.raises(InvalidInput) as from_a_task:
        service.recipes.save(ALICE, name, task_id)
    with pytest.raises(InvalidInput) as saved_directly:
        service._recipes.save(ALICE, Recipe(name, "alice", "copy"))
    for refused in (from_a_task, saved_directly):
        assert refused.value.message == task_refused.value.message.replace("task name", "recipe name")
    assert service.recipes.list(ALICE) == []


def test_a_plain_recipe_name_in_any_script_is_still_saved(service: TaskService) -> None:
    task_id = first_month(service)
    for name in ("CRM monthly export", "Müller & Søn – März", "月次レポート", "👩\u200d💻 dev report", "هیچ\u200cکس"):
        assert service.recipes.save(ALICE, name, task_id).name == name
    assert service.recipes.save(ALICE, "  spaced   out  ", task_id).name == "spaced out"
    assert len(service.recipes.list(ALICE)) == 6
