"""The HTTP API as a client calls it, as ada with her bearer token: a call, a task's view, and a file sent
the way a client sends one (create, PUT to the upload URL, submit)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

#: Ada's token; a test's API server is given its hash (``hash_token(TOKEN)``) as ada's.
TOKEN = "ada-token"


def api_call(base: str, method: str, path: str, **kw: Any) -> requests.Response:
    return requests.request(method, base + path, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60, **kw)


def api_get(base: str, task_id: str) -> dict[str, Any]:
    task: dict[str, Any] = api_call(base, "GET", f"/api/tasks/{task_id}").json()["task"]
    return task


@dataclass
class Submitted:
    task_id: str
    upload: dict[str, Any]  # where its input may be PUT again while it waits for one
    response: requests.Response  # the submit's

    def put(self, body: bytes) -> None:
        r = requests.put(self.upload["url"], data=body, headers=self.upload["headers"], timeout=60)
        assert r.status_code == 200, r.text


def api_submit(base: str, body: bytes, read_as: dict[str, Any] | None = None) -> Submitted:
    """Create a task (with ``read_as`` as its input_format), PUT ``body`` to its upload URL, submit it."""
    new: dict[str, Any] = {"name": "book", "type": "copy", **({"input_format": read_as} if read_as else {})}
    created = api_call(base, "POST", "/api/tasks", json=new)
    assert created.status_code == 201, created.text
    task = Submitted(created.json()["task"]["task_id"], created.json()["upload"], created)
    task.put(body)
    task.response = api_call(base, "POST", f"/api/tasks/{task.task_id}/submit")
    return task
