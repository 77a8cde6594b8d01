"""A task made from a recipe through the HTTP API (issue 22 item 3): the recipe's type, parameters and
input format, with what the request gives on top; a recipe that is not there, or of another type, is
a 400 that says so, and no task is made."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from apps.http_server import serve
from support import csv_bytes

from s3task.config import Settings
from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.tasks.recipes import Recipe
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token

ANN = Actor("ann")
AUTH = {"Authorization": "Bearer ann-token"}
MONTHLY = csv_bytes([["Kunde", "Mail"], ["Anna", "anna@example.com"], ["Ben", "ben@example.org"]]).replace(b",", b";")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[str, TaskService]]:
    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    service._recipes.save(
        ANN,
        Recipe(
            "CRM monthly", "ann", "email_enrichment", {"email_column": "Mail"}, {"delimiter": ";"}, ["Kunde", "Mail"]
        ),
    )
    tokens = TokenTable({hash_token("ann-token"): ANN})
    with serve(create_app(Settings.load({"store": str(store)}, {}), tokens=tokens)) as base:
        yield base, service


def post(base: str, path: str, **body: object) -> requests.Response:
    return requests.post(base + path, json=body or None, headers=AUTH, timeout=30)


def test_a_task_from_a_recipe_takes_its_type_parameters_and_format(api: tuple[str, TaskService]) -> None:
    base, _service = api
    created = post(base, "/api/tasks", name="April", recipe="crm monthly")
    assert created.status_code == 201, created.text
    task = created.json()["task"]
    assert task["task_type"] == "email_enrichment"
    assert (task["recipe_id"], task["recipe_version"]) == ("own/ann/crm-monthly", 1)  # the task names its recipe
    upload = created.json()["upload"]
    assert requests.put(upload["url"], data=MONTHLY, headers=upload["headers"], timeout=30).status_code == 200
    queued = post(base, f"/api/tasks/{task['task_id']}/submit").json()["task"]
    assert queued["input_format"] == {"delimiter": ";", "encoding": "utf-8"}
    assert queued["payload"]["email_column"] == "Mail"


def test_what_the_request_gives_goes_on_top_of_the_recipe(api: tuple[str, TaskService]) -> None:
    base, _service = api
    created = post(base, "/api/tasks", name="Tabs", recipe="CRM monthly", input_format={"encoding": "windows-1252"})
    assert created.status_code == 201, created.text
    assert created.json()["task"]["input_format"] == {"delimiter": ";", "encoding": "windows-1252"}


def test_a_missing_recipe_or_another_type_is_refused_and_no_task_is_made(api: tuple[str, TaskService]) -> None:
    base, service = api
    missing = post(base, "/api/tasks", name="x", recipe="weekly")
    assert missing.status_code == 400 and "there is no recipe named 'weekly'" in missing.json()["message"]
    other = post(base, "/api/tasks", name="x", recipe="CRM monthly", type="copy")
    assert other.status_code == 400
    assert other.json()["message"] == "recipe 'CRM monthly' makes email_enrichment tasks, not copy"
    neither = post(base, "/api/tasks", name="x")
    assert neither.status_code == 400 and '"type"' in neither.json()["message"]
    assert service.list(ANN).tasks == []
