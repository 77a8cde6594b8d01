"""The per-user limits through the HTTP API (issue 26, item 3): past S3TASK_MAX_CREATES_PER_MINUTE a
user's create is 429 ``too_many_requests`` with Retry-After, and nobody else's is; parameters past
S3TASK_MAX_PARAMETERS_KB are refused naming the setting."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from apps.http_server import serve
from faults import save_figures

from s3task.config import Settings
from s3task.tasks import Actor
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token

LIMIT = 20
ANN, BOB = {"Authorization": "Bearer ann-token"}, {"Authorization": "Bearer bob-token"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[str]:
    settings = Settings.load(
        {"store": str(tmp_path / "store"), "max_creates_per_minute": LIMIT, "max_parameters_kb": 4}, {}
    )
    tokens = TokenTable({hash_token("ann-token"): Actor("ann"), hash_token("bob-token"): Actor("bob")})
    with serve(create_app(settings, tokens=tokens)) as base:
        yield base


def create(api: str, auth: dict[str, str], name: str, **body: object) -> requests.Response:
    return requests.post(api + "/api/tasks", json={"name": name, "type": "copy", **body}, headers=auth, timeout=30)


def test_a_user_creating_too_fast_gets_429_and_others_do_not(api: str) -> None:
    started = time.monotonic()
    answers = [create(api, ANN, f"flood {i}") for i in range(LIMIT + 10)]
    took = time.monotonic() - started
    statuses = [r.status_code for r in answers]
    assert statuses == [201] * LIMIT + [429] * 10, statuses
    refused = answers[-1]
    assert refused.json()["code"] == "too_many_requests"
    assert f"created {LIMIT} tasks in the last minute" in refused.json()["message"]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert create(api, BOB, "bob's report").status_code == 201
    listed = requests.get(api + "/api/tasks?limit=200", headers=BOB, timeout=30).json()["tasks"]
    assert len(listed) == LIMIT + 1
    save_figures(
        "misuse_create_rate",
        {"tried": LIMIT + 10, "limit": LIMIT, "created": statuses.count(201), "refused": statuses.count(429),
         "seconds": round(took, 2)},
    )  # fmt: skip


def test_parameters_past_the_setting_are_refused_naming_it(api: str) -> None:
    from s3task import handlers
    from s3task.handlers import Param, TaskType

    class Labelled(TaskType):
        name = "labelled-test"
        title = "Labelled"
        description = "Only for tests."
        params = (Param("label", "str", default=""),)

    handlers.register(Labelled)
    try:
        big = requests.post(
            api + "/api/tasks",
            json={"name": "big", "type": "labelled-test", "parameters": {"label": "x" * 5000}},
            headers=ANN,
            timeout=30,
        )
        assert big.status_code == 400 and big.json()["code"] == "invalid_input", big.text
        assert "at most 4 KiB" in big.json()["message"] and "S3TASK_MAX_PARAMETERS_KB" in big.json()["message"]
        fits = requests.post(
            api + "/api/tasks",
            json={"name": "fits", "type": "labelled-test", "parameters": {"label": "x" * 3000}},
            headers=ANN,
            timeout=30,
        )
        assert fits.status_code == 201, fits.text
    finally:
        handlers._REGISTRY.pop(Labelled.name, None)
