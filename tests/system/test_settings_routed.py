"""The settings that used to be read from the environment by whoever used them, now through ``Settings``.

``S3TASK_SIGNING_KEY``, ``S3TASK_API_TOKENS_FILE``, ``S3TASK_USER``, ``S3TASK_CLI_OPERATOR`` and
``S3TASK_CLOCK_SKEW_SECONDS``: a bad value is the same one line as any other setting's, at every
entry point's door (exit 2, no store call); a good one reaches the part that uses it, handed down
by whoever built that part from ``Settings``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from apps.http_server import serve

from s3task import cli
from s3task.config import Settings
from s3task.errors import S3TaskError, SettingsError
from s3task.store import open_store
from s3task.store.local import META_DIR, LocalStore
from s3task.tasks import Actor, TaskService
from s3task.web import api
from s3task.web.tokens import TokenTable, hash_token
from s3task.web.transfer import KEY_FILE, UrlSigner

ROOT = Path(__file__).resolve().parents[2]
KEY = "signing-key-of-forty-characters-xxxxxxxx"
ADA = Actor("ada")
CSV = b"id,name\n1,ada\n"

#: A bad value of each newly routed setting, as an environment variable can hold it.
BAD = {
    "S3TASK_SIGNING_KEY": "too-short",
    "S3TASK_API_TOKENS_FILE": "tokens\n.json",
    "S3TASK_USER": "ann\tbob",
    "S3TASK_CLI_OPERATOR": "maybe",
    "S3TASK_CLOCK_SKEW_SECONDS": "ten",
}
SECRET = {"S3TASK_SIGNING_KEY"}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No S3TASK_* variable of the process running the tests leaks into these."""
    for name in [k for k in os.environ if k.startswith("S3TASK_")]:
        monkeypatch.delenv(name)
    return monkeypatch


def clean_environ(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("S3TASK_")}, **extra}


def assert_refused_line(line: str, variable: str, value: str) -> None:
    """The one line every setting has: named; its value shown unless it is a secret; what is allowed."""
    if variable in SECRET:
        assert line.startswith(f"{variable} (its value is not shown"), line
        assert value not in line, line
    else:
        assert line.startswith(f"{variable}={value!r} is not allowed: use "), line
    assert "is not allowed: use " in line and "\n" not in line


# --- bad values: one line naming the variable -------------------------------------------------------------------


@pytest.mark.parametrize(("variable", "value"), BAD.items())
def test_a_bad_value_is_one_line_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.load(environ={variable: value})
    assert_refused_line(str(caught.value), variable, value)


def test_settings_errors_are_under_the_one_root_and_still_value_errors() -> None:
    from s3task import config

    assert config.SettingsError is SettingsError  # the old import path names the same class
    with pytest.raises(S3TaskError):
        Settings(clock_skew_seconds=86401)
    with pytest.raises(ValueError):
        Settings(signing_key="short")


CLI = [sys.executable, "-m", "s3task", "--store", "{store}", "list"]
WORKER = [sys.executable, str(ROOT / "worker.py"), "--store", "{store}", "--once"]
ENTRIES = [(entry, *case) for entry in ("cli", "worker") for case in BAD.items()]


@pytest.mark.parametrize(("entry", "variable", "value"), ENTRIES)
def test_the_cli_and_the_worker_stop_at_the_door(tmp_path: Path, entry: str, variable: str, value: str) -> None:
    """A real process: exit 2, the one line on stderr, and the store never touched (not even created)."""
    store = tmp_path / "store"
    proc = subprocess.run(
        [part.replace("{store}", str(store)) for part in {"cli": CLI, "worker": WORKER}[entry]],
        env=clean_environ(**{variable: value}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert_refused_line(lines[0].removeprefix("error: "), variable, value)
    assert not store.exists(), "the store was touched"


@pytest.mark.parametrize("entry", ["cli", "worker"])
def test_a_notification_channel_that_does_not_fit_stops_them_at_the_door(tmp_path: Path, entry: str) -> None:
    """A webhook without its secret is a settings error like any other: exit 2 before the store is touched."""
    store = tmp_path / "store"
    proc = subprocess.run(
        [part.replace("{store}", str(store)) for part in {"cli": CLI, "worker": WORKER}[entry]],
        env=clean_environ(S3TASK_WEBHOOK_URLS="http://127.0.0.1:9/hook"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "S3TASK_WEBHOOK_SECRET" in lines[0], proc.stderr
    assert not store.exists(), "the store was touched"


def serve_with(env: pytest.MonkeyPatch, store: Path, capsys: pytest.CaptureFixture[str], **variables: str) -> str:
    """``python -m s3task.web serve`` with a bad setting: exit 2 and the one line on stderr, returned."""
    from s3task.web import cli as web_cli

    env.setenv("S3TASK_STORE", str(store))
    for name, value in variables.items():
        env.setenv(name, value)
    assert web_cli.main(["serve", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert not store.exists(), "the store was touched"
    return err.removeprefix("error: ").rstrip("\n")


@pytest.mark.parametrize("variable", ["S3TASK_SIGNING_KEY", "S3TASK_API_TOKENS_FILE"])
def test_the_api_server_stops_at_the_door(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], variable: str
) -> None:
    line = serve_with(env, tmp_path / "store", capsys, **{variable: BAD[variable]})
    assert_refused_line(line, variable, BAD[variable])


@pytest.mark.parametrize("contents", [None, "{not json", json.dumps({"abc": {"user": "ada"}})])
def test_an_unusable_tokens_file_stops_the_api_server_before_the_store(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], contents: str | None
) -> None:
    """Missing, not JSON or TOML, or not hashes: named in one line, exit 2, as a bad value of any setting."""
    tokens = tmp_path / "tokens.json"
    if contents is not None:
        tokens.write_text(contents)
    line = serve_with(env, tmp_path / "store", capsys, S3TASK_API_TOKENS_FILE=str(tokens))
    assert line.startswith(f"S3TASK_API_TOKENS_FILE={str(tokens)!r} cannot be used: "), line


def test_the_uvicorn_factory_says_the_same_line(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("S3TASK_STORE", str(tmp_path / "store"))
    env.setenv("S3TASK_API_TOKENS_FILE", str(tmp_path / "missing.json"))
    with pytest.raises(SystemExit) as stopped:
        api.app()
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: S3TASK_API_TOKENS_FILE=") and err.count("\n") == 1, err
    assert not (tmp_path / "store").exists()


# --- good values: they reach the part that uses them -------------------------------------------------------------


def _token_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_the_signing_key_and_the_clock_reach_the_apis_transfer_urls(tmp_path: Path) -> None:
    settings = Settings(store=str(tmp_path / "store"), signing_key=KEY, clock_skew_seconds=3600, url_seconds=900)
    app = api.create_app(settings, tokens=TokenTable({hash_token("t"): ADA}))
    with serve(app) as base:
        created = requests.post(
            base + "/api/tasks", json={"name": "n", "type": "copy"}, headers={"Authorization": "Bearer t"}, timeout=10
        )
        assert created.status_code == 201, created.text
        upload = created.json()["upload"]
        grant = UrlSigner(KEY.encode()).verify(_token_of(upload["url"]), "PUT")  # signed with the configured key
        assert abs(grant.expires - (time.time() + 3600 + 900)) < 5  # by the clock the settings gave
        put = requests.put(upload["url"], data=CSV, headers=upload["headers"], timeout=10)
        assert put.status_code == 200, put.text  # the /transfer route checks with the same key
    assert not (Path(settings.store) / META_DIR / KEY_FILE).exists(), "a key file was made although one was set"


def test_the_signing_key_reaches_the_apps_service(tmp_path: Path) -> None:
    from ui import server

    service = server.service_for(Settings(store=str(tmp_path / "store"), signing_key=KEY))
    created = service.create(ADA, "n", "copy")
    assert created.upload_url is not None
    assert UrlSigner(KEY.encode()).verify(_token_of(created.upload_url), "PUT").key.endswith("/input.csv")


def test_without_a_signing_key_the_stores_own_key_is_used(tmp_path: Path) -> None:
    settings = Settings(store=str(tmp_path / "store"))
    app = api.create_app(settings, tokens=TokenTable({hash_token("t"): ADA}))
    with serve(app) as base:
        created = requests.post(
            base + "/api/tasks", json={"name": "n", "type": "copy"}, headers={"Authorization": "Bearer t"}, timeout=10
        )
        assert created.status_code == 201, created.text
    assert (Path(settings.store) / META_DIR / KEY_FILE).exists()


def test_the_tokens_file_reaches_the_api(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({hash_token("from-the-file"): {"user": "ada"}}))
    app = api.create_app(Settings(store=str(tmp_path / "store"), api_tokens_file=str(tokens)))
    with serve(app) as base:
        known = requests.get(base + "/api/tasks", headers={"Authorization": "Bearer from-the-file"}, timeout=10)
        unknown = requests.get(base + "/api/tasks", headers={"Authorization": "Bearer other"}, timeout=10)
    assert known.status_code == 200, known.text
    assert unknown.status_code == 401


def test_an_unreadable_tokens_file_is_a_settings_error_before_the_store_is_opened(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"^S3TASK_API_TOKENS_FILE='.*missing\.json' cannot be used: "):
        api.routes(Settings(store=str(tmp_path / "store"), api_tokens_file=str(tmp_path / "missing.json")))
    assert not (tmp_path / "store").exists()


def _queued_by_ada(root: Path) -> str:
    store, layout = open_store(str(root))
    return TaskService(store, layout).submit_file(ADA, "ada's", "copy", {}, CSV).task_id


def test_the_cli_acts_as_s3task_user_unless_told_otherwise(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root, path = tmp_path / "store", tmp_path / "in.csv"
    path.write_bytes(CSV)
    env.setenv("S3TASK_USER", "bob")
    assert cli.main(["--store", str(root), "submit", str(path), "--name", "bob's"]) == 0
    assert cli.main(["--store", str(root), "--as", "carol", "submit", str(path), "--name", "carol's"]) == 0
    store, layout = open_store(str(root))
    tasks = TaskService(store, layout).list(Actor("x", operator=True)).tasks
    assert sorted((t.task_name, t.created_by) for t in tasks) == [("bob's", "bob"), ("carol's", "carol")]


@pytest.mark.parametrize(("value", "operator"), [(None, True), ("1", True), ("0", False), ("false", False)])
def test_s3task_cli_operator_decides_whether_the_cli_may_act_on_others_tasks(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str | None, operator: bool
) -> None:
    root = tmp_path / "store"
    task_id = _queued_by_ada(root)
    env.setenv("S3TASK_USER", "bob")
    if value is not None:
        env.setenv("S3TASK_CLI_OPERATOR", value)
    code = cli.main(["--store", str(root), "cancel", task_id])
    out, err = capsys.readouterr()
    if operator:
        assert (code, out.strip()) == (0, "abandoned"), err  # a queued task, cancelled before any worker ran it
    else:
        assert code == 1 and "belongs to ada" in err, err


def test_the_clock_skew_reaches_the_clis_store(
    env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env.setenv("S3TASK_CLOCK_SKEW_SECONDS", "600")
    assert cli.main(["--store", str(tmp_path / "store"), "doctor"]) == 0
    out = capsys.readouterr().out
    found = re.search(r"ok: store clock is ([+-][0-9.]+)s from this machine's", out)
    assert found is not None and abs(float(found.group(1)) - 600) < 1, out


def test_the_clock_skew_reaches_the_workers_store(tmp_path: Path) -> None:
    from s3task.worker import Worker

    worker = Worker(Settings.load({"store": str(tmp_path / "store")}, {"S3TASK_CLOCK_SKEW_SECONDS": "-600"}))
    assert abs(worker.store.now().timestamp() - (time.time() - 600)) < 5


def test_the_clock_skew_is_not_read_at_import_or_below_config(tmp_path: Path) -> None:
    """Only Settings reads the variable: importing the clock, or opening a store without it, gives the real clock."""
    code = (
        "import time; from s3task.clock import MACHINE; from s3task.config import Settings;"
        "from s3task.store import open_store;"
        f"store, _ = open_store({str(tmp_path / 'store')!r});"
        "print(round(MACHINE.wall() - time.time()), round(store.now().timestamp() - time.time()),"
        " Settings.load().clock.skew)"
    )
    env = clean_environ(S3TASK_CLOCK_SKEW_SECONDS="600", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "0", "600.0"]


def test_a_store_opened_with_a_clock_keeps_it(tmp_path: Path) -> None:
    store, _ = open_store(str(tmp_path / "store"), clock=Settings(clock_skew_seconds=-30).clock)
    assert isinstance(store, LocalStore)
    assert abs(store.now().timestamp() - (time.time() - 30)) < 2
