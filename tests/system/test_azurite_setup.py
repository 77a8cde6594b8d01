"""``s3task init`` and ``doctor`` on Azurite 3.37.0 through the CLI: the container and the CORS rule.

Azure's CORS rules are the storage account's (its Blob service properties), shared by every container:
one Azurite serves the whole run, so each test here sets the rules it starts from.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import requests
from azure.storage.blob import CorsRule
from procs import child_env, cli

pytestmark = pytest.mark.slow

APP = "http://127.0.0.1:8501"
OTHER = "https://elsewhere.example.org"


@pytest.fixture
def env(azurite: Any) -> dict[str, str]:
    return child_env(**azurite.env)


def _preflight(azurite: Any, container: str, origin: str, headers: str = "content-type,x-ms-blob-type") -> Any:
    """What a browser at ``origin`` asks before a PUT with ``headers`` to a blob of ``container``."""
    url = f"{azurite.endpoint}/{container}/batch-tasks/x/input.csv"
    ask = {"Origin": origin, "Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": headers}
    return requests.options(url, headers=ask, timeout=10)


def test_init_creates_the_container_and_lets_the_apps_origin_in(azurite: Any, env: dict[str, str]) -> None:
    azurite.client().set_service_properties(cors=[])
    container = f"made-{uuid.uuid4().hex[:8]}"
    url = f"az://{container}/batch-tasks"
    first = cli("--store", url, "init", "--origin", APP, env=env)
    assert first.returncode == 0, first.stderr
    assert f"created: container {container}" in first.stdout
    assert "added: CORS rule of the storage account's Blob service (every container of the account): " in first.stdout
    assert azurite.client().get_container_client(container).exists()
    answer = _preflight(azurite, container, APP)
    assert answer.status_code == 200 and answer.headers["Access-Control-Allow-Origin"] == APP
    assert _preflight(azurite, container, OTHER).status_code == 403  # only the app's origin
    again = cli("--store", url, "init", "--origin", APP, env=env)  # safe to run again
    assert again.returncode == 0, again.stderr
    assert f"unchanged: container {container} exists" in again.stdout
    assert "unchanged: CORS rule of the storage account's Blob service" in again.stdout
    (rule,) = azurite.client().get_service_properties()["cors"]
    assert rule.allowed_origins == APP and rule.exposed_headers == "ETag"


def test_init_adds_an_origin_to_its_rule_and_keeps_every_other_origin_and_rule(
    azurite: Any, env: dict[str, str]
) -> None:
    """The rule serves every container of the account: a second deployment's init (another origin) must not
    turn off the first one's direct uploads (found by the outside review: it replaced the origins)."""
    theirs = CorsRule(["https://theirs.example.org"], ["GET"], allowed_headers=["*"], max_age_in_seconds=60)
    azurite.client().set_service_properties(cors=[theirs])
    container = azurite.new_bucket()
    url = f"az://{container}/batch-tasks"
    assert cli("--store", url, "init", "--origin", APP, env=env).returncode == 0
    second = cli("--store", url, "init", "--origin", OTHER, env=env)
    assert second.returncode == 0, second.stderr
    said = "updated: CORS rule of the storage account's Blob service (every container of the account): "
    assert said in second.stdout
    assert f"PUT, GET, HEAD from {OTHER} (kept: {APP}), exposes ETag" in second.stdout
    rules = azurite.client().get_service_properties()["cors"]
    assert sorted(r.allowed_origins for r in rules) == sorted([f"{APP},{OTHER}", "https://theirs.example.org"])
    assert _preflight(azurite, container, OTHER).status_code == 200
    assert _preflight(azurite, container, APP).status_code == 200  # the first app still uploads
    for origin in (APP, OTHER):  # and doctor says so for each, whichever init ran last
        doctor = cli("--store", url, "doctor", "--origin", origin, env=env)
        assert doctor.returncode == 0, doctor.stderr
    again = cli("--store", url, "init", "--origin", APP, env=env)
    assert "unchanged: CORS rule of the storage account's Blob service" in again.stdout
    refused = cli("--store", url, "init", "--retain-days", "30", env=env)
    assert refused.returncode != 0 and "--retain-days sets an S3 lifecycle rule" in refused.stderr


def test_doctor_says_what_keeps_the_apps_origin_out(azurite: Any, env: dict[str, str]) -> None:
    container = azurite.new_bucket()
    url = f"az://{container}/batch-tasks"
    azurite.client().set_service_properties(cors=[])
    bare = cli("--store", url, "doctor", "--origin", APP, env=env)
    assert bare.returncode == 1
    assert "ok: conditional writes are enforced" in bare.stdout  # the rest of the checks ran
    assert "problem: the storage account's Blob service has no CORS rule" in bare.stderr
    assert "fix: python -m s3task init --origin <the app's origin>" in bare.stderr
    assert cli("--store", url, "init", "--origin", APP, env=env).returncode == 0
    elsewhere = cli("--store", url, "doctor", "--origin", OTHER, env=env)
    assert elsewhere.returncode == 1
    assert f"problem: no CORS rule allows the origin {OTHER}" in elsewhere.stderr
    # A rule for the origin that lets a browser download but not send Azure's blob type: an upload would fail.
    typeless = CorsRule([APP], ["PUT", "GET", "HEAD"], allowed_headers=["Content-Type"], exposed_headers=["ETag"])
    azurite.client().set_service_properties(cors=[typeless])
    assert _preflight(azurite, container, APP).status_code == 403  # Azurite refuses that preflight too
    half = cli("--store", url, "doctor", "--origin", APP, env=env)
    assert half.returncode == 1
    assert f"problem: the CORS rule for {APP} does not allow the x-ms-blob-type header" in half.stderr
    assert cli("--store", url, "init", "--origin", APP, env=env).returncode == 0
    fixed = cli("--store", url, "doctor", "--origin", APP, env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert f"ok: the storage account's CORS rule lets browsers at {APP} upload (PUT)" in fixed.stdout
