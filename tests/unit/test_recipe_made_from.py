"""A task names the recipe it was made from, and which version of it (docs/APP.md, "Recipes"): a recipe's
version goes up by one each time it is replaced; a task made from it through the service keeps its id and
version in ``status.json``; a correction of such a task keeps them too; records written before (schema 1)
read as made from no recipe. The page, the CLI, the API and inboxes are tested where each door is."""

from __future__ import annotations

import io
import json
from pathlib import Path

import openpyxl
import pytest
from support import csv_bytes
from worked import work

from s3task.errors import CorruptRecord, InvalidInput, S3TaskError
from s3task.layout import Layout
from s3task.record import SCHEMA_VERSION, RecipeRef, record_from_json
from s3task.records import read_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.tasks.recipes import Recipe
from ui.detail import made_from

ANN, BOB = Actor("ann"), Actor("bob")
ROWS = [["name", "mail"], ["Ada", "ada@example.com"], ["Bob", "bob at example.com"]]
MONTHLY = Recipe("CRM monthly", "ann", "email_enrichment", {"email_column": "mail"}, header=["name", "mail"])


@pytest.fixture
def service(tmp_path: Path) -> TaskService:
    return TaskService(LocalStore(tmp_path / "store"), Layout())


def stored(service: TaskService, task_id: str):
    """The record as ``status.json`` holds it (no cache)."""
    return read_record(service.store, service.layout, task_id)[0]


def test_a_recipe_starts_at_version_1_and_each_replace_adds_one(service: TaskService) -> None:
    assert service._recipes.save(ANN, MONTHLY).version == 1
    assert service._recipes.save(ANN, MONTHLY, replace=True).version == 2
    assert service._recipes.save(ANN, MONTHLY, replace=True).version == 3
    assert service.recipes.get(ANN, "crm monthly").version == 3  # as stored
    service.recipes.remove(ANN, "CRM monthly")
    assert service.recipes.list(ANN) == []
    with pytest.raises(InvalidInput, match="there is no recipe named 'crm monthly'"):
        service.recipes.get(ANN, "crm monthly")
    # Saved again under that name, it goes on from the version it had reached: a task made from version 3
    # before never meets another version 3.
    assert service._recipes.save(ANN, MONTHLY).version == 4
    assert service.recipes.get(ANN, "CRM monthly").version == 4
    service.recipes.remove(ANN, "CRM monthly")
    assert service._recipes.save(ANN, MONTHLY, replace=True).version == 5  # a replace over it too
    # A version a user cannot mean is no recipe (the stored object is refused, as other wrong fields are).
    for version in (0, 10**9 + 1):
        with pytest.raises(Exception, match="its version is not a number from 1 to 1,000,000,000"):
            Recipe.from_json(json.dumps({"name": "x", "owner": "a", "task_type": "copy", "version": version}).encode())


def test_each_way_of_making_a_task_keeps_the_recipe_and_its_version(service: TaskService) -> None:
    service._recipes.save(ANN, MONTHLY)
    recipe = service._recipes.save(ANN, MONTHLY, replace=True)  # version 2
    want = RecipeRef("own/ann/crm-monthly", 2)
    made = service.create(ANN, "April", recipe.task_type, recipe.params, recipe=recipe).record
    sent = service.submit_file(ANN, "May", recipe.task_type, recipe.params, csv_bytes(ROWS), recipe=recipe)
    plain = service.submit_file(ANN, "Other", "copy", None, csv_bytes(ROWS))
    for task_id in (made.task_id, sent.task_id):
        record = stored(service, task_id)
        assert (record.recipe, record.recipe_id, record.recipe_version) == (want, want.id, 2)
        assert record.schema_version == SCHEMA_VERSION == 2
    assert stored(service, plain.task_id).recipe is None
    # Saving the recipe again does not change what the tasks made from it say; the page tells both.
    newer = service._recipes.save(ANN, MONTHLY, replace=True)
    record = stored(service, sent.task_id)
    assert made_from(record, service.recipes.made_from(record)) == (
        "Made from the recipe “CRM monthly” (version 2; it is at version 3 now)."
    )
    assert newer.version == 3
    service.recipes.remove(ANN, "CRM monthly")
    assert service.recipes.made_from(record) is None
    assert made_from(record, None) == "Made from a recipe that has been removed since (version 2)."


def test_a_correction_of_a_task_made_from_a_recipe_names_the_same_recipe(service: TaskService) -> None:
    recipe = service._recipes.save(ANN, MONTHLY)
    march = service.submit_file(ANN, "March", recipe.task_type, recipe.params, csv_bytes(ROWS), recipe=recipe)
    done = work(service, march.task_id)
    assert done.status == "completed" and done.error_count == 1
    service.ensure_output(ANN, march.task_id, "errors-xlsx")
    with service.open_output(ANN, march.task_id, "errors-xlsx") as f:
        book = openpyxl.load_workbook(io.BytesIO(f.read()))
    rows = [list(r) for r in book.active.iter_rows(values_only=True)]
    fixed = openpyxl.Workbook()
    for row in rows:
        fixed.active.append([("bob@example.com" if v == "bob at example.com" else v) for v in row])
    data = io.BytesIO()
    fixed.save(data)
    correction = service.submit_correction(ANN, march.task_id, data.getvalue())
    assert stored(service, correction.task_id).recipe == RecipeRef("own/ann/crm-monthly", 1)


def test_records_of_schema_1_read_as_made_from_no_recipe_and_newer_ones_are_left_alone(service: TaskService) -> None:
    task_id = service.submit_file(ANN, "Old", "copy", None, csv_bytes(ROWS)).task_id
    raw = json.loads(service.store.get(service.layout.status_key(task_id)).body)
    old = {k: v for k, v in raw.items() if k not in ("recipe_id", "recipe_version")} | {"schema_version": 1}
    service.store.put(service.layout.status_key(task_id), json.dumps(old).encode(), PutMode.OVERWRITE)
    record = stored(service, task_id)
    assert (record.schema_version, record.recipe) == (1, None)
    assert service.get(BOB, task_id).task_name == "Old"  # listed and shown as before
    # Fields of the wrong kind are a corrupt record, as for every other field.
    wrong = json.dumps({**raw, "recipe_version": "two"}).encode()
    with pytest.raises(CorruptRecord, match="field recipe_version has the wrong type"):
        record_from_json(wrong, "status.json")


@pytest.mark.parametrize(
    ("stored", "then"),
    [
        (b'{"schema": 1, "removed": true}', 1),  # a marker without its version: no recipe, repaired
        (b'{"removed": false, "version": 7}', 1),
        (b"{}", 1),
        (b'{"schema": 1, "removed": true, "version": -5}', 1),
        (b'{"schema": 1, "removed": true, "version": 99999999999999999999999}', 1),
        (b'{"schema": 1, "removed": true, "version": 6, "name": null}', 7),  # what a remove leaves
    ],
)
def test_an_object_at_a_recipe_key_that_is_no_recipe_is_said_in_words_and_a_save_repairs_it(
    service: TaskService, stored: bytes, then: int
) -> None:
    # Found by the outside review: such objects made `submit --recipe`, `remove` and `save --replace` crash.
    key = service.layout.recipe_key("ann", "crm-monthly")
    service.store.put(key, stored, PutMode.OVERWRITE)
    assert service.recipes.list(ANN) == []
    with pytest.raises(S3TaskError) as said:
        service.recipes.get(ANN, "CRM monthly")
    assert "there is no recipe named 'CRM monthly'" in str(said.value) or "not a recipe" in str(said.value)
    assert service._recipes.save(ANN, MONTHLY).version == then
    assert service.recipes.get(ANN, "crm monthly").version == then


def test_a_reader_from_before_markers_refuses_one_in_words() -> None:
    """What a remove leaves names no recipe to code that does not know markers (an older worker's inbox
    sweep, an older app's task page): its from_json refuses it as "not a recipe", as every reader catches."""
    from s3task.tasks.recipes import removed_marker

    body = removed_marker(3)
    fields = {
        "name": str,
        "owner": str,
        "task_type": str,
        "params": dict,
        "input_format": dict,
        "header": list,
        "shared": bool,
        "saved_at": str,
        "version": int,
    }  # the older check, as it was
    raw = json.loads(body)
    assert any(k in raw and not isinstance(raw[k], t) for k, t in fields.items())


def test_two_saves_over_a_removed_recipe_one_wins_the_other_is_told(service: TaskService, monkeypatch) -> None:
    # Found by the outside review: the loser of the race over a marker got the store's raw "changed (ETag …)".
    service._recipes.save(ANN, MONTHLY)
    service.recipes.remove(ANN, "CRM monthly")
    kept = service._recipes
    real_before = kept._before

    def raced(key: str):
        found = real_before(key)
        if not getattr(raced, "done", False):
            raced.done = True  # type: ignore[attr-defined]
            kept.save(ANN, MONTHLY)  # the other save lands between this one's read and its write
        return found

    monkeypatch.setattr(kept, "_before", raced)
    with pytest.raises(InvalidInput, match="recipe 'CRM monthly' was changed by someone else just now; try again"):
        kept.save(ANN, MONTHLY)
    assert service.recipes.get(ANN, "CRM monthly").version == 2
