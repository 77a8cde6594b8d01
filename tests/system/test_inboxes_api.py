"""The recipes' inboxes through the HTTP API (issue 33): ``GET /api/inboxes`` shows what ``s3task inbox list``
shows (the command that drops a file, the files waiting, the last files taken and their tasks), and
``POST /api/inboxes/pause|resume`` follow the CLI's rule (the recipe's owner, for a recipe of their own, or an
operator). Bad input — a recipe that is not there, a name with control characters, another user's recipe, a
shared one — is refused in words, and no inbox changes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from apps.http_server import serve
from inboxkit import ANN, LAYOUT, OPERATOR, drop, inbox_keys, recipe

from s3task.config import Settings
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.tasks.inbox_sweep import InboxSweeper
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token

BOB = Actor("bob")
TOKENS = {"ann-token": ANN, "bob-token": BOB, "root-token": OPERATOR}


@dataclass
class Served:
    base: str
    root: Path
    store: LocalStore
    service: TaskService
    rid: str  # ann's recipe "CRM weekly": its inbox's id
    shared: str  # the operator's shared recipe "Price list": its inbox's id
    sweeper: InboxSweeper

    def call(self, method: str, path: str, token: str | None = "ann-token", **kw: Any) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return requests.request(method, self.base + path, headers=headers, timeout=30, **kw)

    def inboxes(self, token: str = "ann-token") -> dict[str, Any]:
        r = self.call("GET", "/api/inboxes", token)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def inbox(self, recipe_id: str, token: str = "ann-token") -> dict[str, Any]:
        return next(i for i in self.inboxes(token)["inboxes"] if i["recipe_id"] == recipe_id)

    def paused_keys(self) -> list[str]:
        return self.store.list_keys(LAYOUT.inbox_paused_root)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Served]:
    root = tmp_path / "store"
    store = LocalStore(root)
    service = TaskService(store, LAYOUT)
    _, rid = recipe(service)
    _, shared = recipe(service, OPERATOR, "Price list", shared=True)
    tokens = TokenTable({hash_token(t): a for t, a in TOKENS.items()})
    app_settings = Settings.load({"store": str(root)}, {})
    with serve(create_app(app_settings, tokens=tokens)) as base:
        yield Served(base, root, store, service, rid, shared, service.inboxes.sweeper("w1", interval=300))


def test_the_list_shows_each_inbox_as_the_cli_does(api: Served) -> None:
    drop(api.store, api.rid, "2026-05.csv")
    api.sweeper.sweep()
    api.sweeper.sweep()  # the local store takes a file whose size and time held from one sweep to the next
    drop(api.store, api.rid, "week\x07.csv")  # a name with a control character waits, shown exactly
    drop(api.store, "shared/gone", "orphan.csv")  # a recipe that was removed: no recipe takes it

    listed = api.inboxes()
    assert [i["recipe_id"] for i in listed["inboxes"]] == ["own/ann/crm-weekly", "shared/price-list"]
    mine = listed["inboxes"][0]
    where = f"{api.root}/batch-tasks/inbox/own/ann/crm-weekly/"
    assert mine["command"] == f"mkdir -p {where} && cp FILE {where}", "the command `s3task inbox list` prints"
    assert (mine["recipe"], mine["owner"], mine["shared"], mine["task_type"], mine["paused"]) == (
        "CRM weekly", "ann", False, "copy", False,
    )  # fmt: skip
    assert mine["prefix"] == "batch-tasks/inbox/own/ann/crm-weekly/"
    assert mine["waiting"] == ["week\x07.csv"]
    [taken] = mine["taken"]
    assert (taken["name"], taken["state"]) == ("2026-05.csv", "taken")
    assert taken["task_id"] in taken["words"] and "queued" in taken["words"]
    task = api.call("GET", f"/api/tasks/{taken['task_id']}").json()["task"]
    assert (task["task_name"], task["created_by"], task["status"]) == ("2026-05.csv", "ann", "queued")
    assert listed["untaken"] == [], "only an operator is shown the files no recipe takes"

    assert [i["recipe_id"] for i in api.inboxes("bob-token")["inboxes"]] == ["shared/price-list"]
    as_operator = api.inboxes("root-token")
    assert as_operator["untaken"] == ["batch-tasks/inbox/shared/gone/orphan.csv"]
    assert api.call("GET", "/api/inboxes", token=None).status_code == 401


def test_the_owner_pauses_and_an_operator_resumes(api: Served) -> None:
    paused = api.call("POST", "/api/inboxes/pause", json={"recipe": "crm weekly"})
    assert paused.status_code == 200, paused.text
    assert paused.json()["inbox"]["recipe_id"] == api.rid and paused.json()["inbox"]["paused"] is True
    again = api.call("POST", "/api/inboxes/pause", json={"recipe": api.rid})
    assert again.status_code == 200 and again.json()["inbox"]["paused"] is True, "pausing twice is one pause"
    assert api.paused_keys() == [LAYOUT.inbox_paused_key(api.rid)]
    drop(api.store, api.rid, "held.csv")
    api.sweeper.sweep()
    api.sweeper.sweep()
    assert api.inbox(api.rid)["waiting"] == ["held.csv"], "a paused inbox's file waits"

    refused = api.call("POST", "/api/inboxes/resume", "bob-token", json={"recipe": api.rid})
    assert refused.status_code == 403
    assert refused.json() == {
        "code": "access_denied",
        "message": "only an operator or its owner can pause or resume the inbox of “CRM weekly” (ann's: copy)",
    }
    assert api.inbox(api.rid)["paused"] is True, "refused, it stays paused"

    resumed = api.call("POST", "/api/inboxes/resume", "root-token", json={"recipe": api.rid})
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["inbox"]["paused"] is False and api.paused_keys() == []
    again = api.call("POST", "/api/inboxes/resume", "root-token", json={"recipe": api.rid})
    assert again.status_code == 200 and again.json()["inbox"]["paused"] is False, "resuming twice changes nothing"
    api.sweeper.sweep()
    api.sweeper.sweep()  # the local store's two sweeps
    assert inbox_keys(api.store, api.rid) == [], "resumed, the file that waited is taken"
    assert api.inbox(api.rid)["taken"][0]["name"] == "held.csv"

    shared = api.call("POST", "/api/inboxes/pause", "root-token", json={"recipe": "Price list"})
    assert shared.status_code == 200 and shared.json()["inbox"]["paused"] is True, "an operator pauses a shared one"


@pytest.mark.parametrize(
    ("token", "body", "status", "message"),
    [
        ("ann-token", {"recipe": "weekly"}, 400, "there is no recipe named 'weekly'; `s3task recipe list` shows them"),
        ("ann-token", {"recipe": "own/ann/weekly"}, 400, "no recipe has the inbox 'own/ann/weekly'"),
        ("ann-token", {"recipe": "CRM\x07weekly"}, 400, "may hold only visible text and spaces, not U+0007 BELL"),
        ("ann-token", {"recipe": "own/ann/crm-weekly\x1b"}, 400, "no recipe has the inbox 'own/ann/crm-weekly\\x1b'"),
        ("bob-token", {"recipe": "CRM weekly"}, 400, "there is no recipe named 'CRM weekly'"),
        ("bob-token", {"recipe": "own/ann/crm-weekly"}, 403, "only an operator or its owner can pause or resume"),
        ("ann-token", {"recipe": "Price list"}, 403, "only an operator or its owner can pause or resume"),
        ("ann-token", {}, 400, 'name the "recipe"'),
        ("ann-token", {"recipe": 7}, 400, 'name the "recipe"'),
        ("ann-token", {"recipe": "CRM weekly", "paused": True}, 400, "unknown field(s) paused; expected recipe"),
        (None, {"recipe": "CRM weekly"}, 401, "send an API token"),
    ],
)
def test_bad_input_is_refused_in_words_and_no_inbox_changes(
    api: Served, token: str | None, body: dict[str, Any], status: int, message: str
) -> None:
    for action in ("pause", "resume"):
        if action == "resume":  # something to resume: paused through the door, as its owners would
            api.service.inboxes.pause(ANN, api.rid)
            api.service.inboxes.pause(OPERATOR, api.shared)
        before = api.paused_keys()
        r = api.call("POST", f"/api/inboxes/{action}", token, json=body)
        assert r.status_code == status, r.text
        assert message in r.json()["message"]
        assert api.paused_keys() == before, f"a refused {action} changed nothing"
