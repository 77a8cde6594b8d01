"""Links meant to last (s3task/web/lasting.py, docs/API.md "Links that last"): a result as CSV through the API
on the caller's token, for Excel's Power Query "From Web" (an ``Authorization`` header), a notebook or a
script. ``/api/tasks/{id}/result.csv`` is one task's; ``/api/recipes/{recipe}/latest.csv`` follows a recipe to
its newest completed run. Power Query's Web connector reads what an HTTP GET with that header returns: a 200
whose body is the CSV, text/csv, the header row first — checked here as it would read it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import requests
from apps.http_server import serve
from support import csv_bytes
from worked import work

from s3task.config import Settings
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token

ANN, BOB, OPS = Actor("ann"), Actor("bob"), Actor("ops", operator=True)
MARCH = [["id", "amount", "note"], ["1", "10", "=1+1"], ["2", "20", "Zoë"]]
APRIL = [["id", "amount", "note"], ["1", "11", "@home"], ["3", "30", "Ünal"]]


def auth(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {who}-token"}


def made(service: TaskService, name: str, rows: list[list[str]], recipe=None, *, run: bool = True) -> str:
    task_id = service.create(ANN, name, "copy", None, recipe=recipe).record.task_id
    service.upload_input(ANN, task_id, csv_bytes(rows))
    service.submit(ANN, task_id)
    return work(service, task_id).task_id if run else task_id


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[str, TaskService, dict[str, str]]]:
    root = tmp_path / "store"
    service = TaskService(LocalStore(root), Layout())
    march = made(service, "March", MARCH)
    recipe = service.recipes.save(ANN, "Sales monthly", march)
    april = made(service, "April", APRIL, recipe)
    may = made(service, "May", APRIL, recipe, run=False)  # newer, still queued: not a result yet
    tokens = TokenTable({hash_token(f"{a.name}-token"): a for a in (ANN, BOB, OPS)})
    with serve(create_app(Settings(store=str(root)), service=service, tokens=tokens)) as base:
        yield base, service, {"march": march, "april": april, "may": may}


def get(base: str, path: str, who: str | None = "ann") -> requests.Response:
    return requests.get(base + path, headers=auth(who) if who else {}, timeout=30)


def read_as_power_query_does(response: requests.Response) -> list[list[str]]:
    """A 200 whose body is CSV in UTF-8 (a byte-order mark allowed), the header row first."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    table = pd.read_csv(io.BytesIO(response.content), dtype=str, keep_default_na=False, encoding="utf-8-sig")
    return [list(table.columns), *table.values.tolist()]


def test_a_recipes_latest_result_follows_the_recipe_to_its_newest_completed_run(api) -> None:
    base, _service, ids = api
    latest = get(base, "/api/recipes/sales-monthly/latest.csv")
    assert latest.headers["x-s3task-task"] == ids["april"]  # May is queued; March, its first run, is older
    assert read_as_power_query_does(latest) == APRIL  # the values as written: no ' before "@home"
    assert "no-store" in latest.headers["cache-control"]
    by_name = get(base, "/api/recipes/Sales%20monthly/latest.csv")
    assert by_name.headers["x-s3task-task"] == ids["april"] and by_name.content == latest.content


def test_one_tasks_result_and_a_notebook_reading_the_same_link(api) -> None:
    base, _service, ids = api
    assert read_as_power_query_does(get(base, f"/api/tasks/{ids['march']}/result.csv")) == MARCH  # "=1+1" as is
    url = f"{base}/api/tasks/{ids['march']}/result.csv"
    frame = pd.read_csv(url, storage_options=auth("ann"), dtype=str, keep_default_na=False, encoding="utf-8-sig")
    assert frame.values.tolist() == MARCH[1:]
    assert read_as_power_query_does(get(base, f"/api/tasks/{ids['april']}/result.csv", "ops")) == APRIL


@pytest.mark.parametrize(
    ("path", "who", "status", "words"),
    [
        ("/api/tasks/{march}/result.csv", None, 401, "send an API token"),
        ("/api/tasks/{march}/result.csv", "bob", 403, ""),  # ann's result is not bob's to download
        ("/api/tasks/{may}/result.csv", "ann", 409, ""),  # not completed
        ("/api/recipes/sales-monthly/latest.csv", "bob", 400, "there is no recipe named 'sales-monthly'"),
        ("/api/recipes/nothing-yet/latest.csv", "ann", 400, "there is no recipe named 'nothing-yet'"),
    ],
)
def test_what_may_not_be_read_is_refused_in_words(api, path: str, who: str | None, status: int, words: str) -> None:
    base, _service, ids = api
    answer = get(base, path.format(**ids), who)
    assert answer.status_code == status, answer.text
    assert words in answer.json()["message"]


def test_the_task_a_recipe_was_saved_from_is_its_first_run(api) -> None:
    # Found by the outside review: a recipe saved from March and not run since had "no completed task".
    base, service, ids = api
    service.recipes.save(ANN, "Weekly", ids["march"])  # saved, never run from: March is its one run
    latest = get(base, "/api/recipes/weekly/latest.csv")
    assert latest.headers["x-s3task-task"] == ids["march"] and read_as_power_query_does(latest) == MARCH


def test_a_recipe_with_no_completed_run_says_so(api) -> None:
    base, service, ids = api
    service.recipes.save(ANN, "Weekly", ids["may"])  # saved from a task still queued, never run from
    answer = get(base, "/api/recipes/weekly/latest.csv")
    assert answer.status_code == 400
    assert "no completed task of recipe 'Weekly' among the newest 3 tasks" in answer.json()["message"]


def test_a_correction_of_the_latest_run_is_not_the_recipes_latest_result(api) -> None:
    """A correction keeps its original's recipe but holds only the rows sent back (found by the outside
    review: a Power Query refresh after a correction shrank to those rows)."""
    base, service, ids = api
    april = service.get(ANN, ids["april"])
    made = service._transitions.create(
        ANN, "April (correction 1)", "copy", None, corrects=april.task_id, recipe=april.recipe
    )
    service.upload_input(ANN, made.task_id, csv_bytes(APRIL[:2]))
    service.submit(ANN, made.task_id)
    assert work(service, made.task_id).status == "completed"
    latest = get(base, "/api/recipes/sales-monthly/latest.csv")
    assert latest.headers["x-s3task-task"] == ids["april"] and read_as_power_query_does(latest) == APRIL
    # A recipe saved from the correction has the whole original as its first run, not the rows sent back.
    service.recipes.save(ANN, "From correction", made.task_id)
    first = get(base, "/api/recipes/from-correction/latest.csv")
    assert first.headers["x-s3task-task"] == ids["april"] and read_as_power_query_does(first) == APRIL
