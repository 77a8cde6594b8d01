"""Task names reach operators' terminals and logs: control characters, bidirectional overrides and
zero-width characters are refused when a task is created (one message, through the API and the CLI
alike), and printed as escapes from records stored before that (issue 26, item 4)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from apps.http_server import serve
from procs import child_env, cli

from s3task.config import Settings
from s3task.layout import Layout
from s3task.records import update_record
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token
from s3task.worker.cli import VisibleFormatter

ROOT = Path(__file__).resolve().parents[2]
#: What a terminal acts on or shows as something else, each with the code point the refusal names.
HOSTILE = {
    "ESC[31m": ("red \x1b[31malert", "U+001B"),
    "CR LF": ("ok\r\nfake  row", "U+000D"),
    "NUL": ("nul\x00here", "U+0000"),
    "C1 CSI": ("c1\x9b31m", "U+009B"),
    "DEL": ("del\x7f", "U+007F"),
    "RLO": ("invoice\u202egpj.exe", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    "isolate": ("a\u2066b", "U+2066"),
    "zero width space": ("ad\u200bmin", "U+200B ZERO WIDTH SPACE"),
    "joiner at the end": ("admin\u200d", "U+200D ZERO WIDTH JOINER"),
    "joiner by a space": ("ad \u200dmin", "U+200D ZERO WIDTH JOINER"),
    "tag alone": ("ad\U000e0067min", "U+E0067 TAG LATIN SMALL LETTER G"),
    "BOM": ("x\ufeffy", "U+FEFF"),
    "line separator": ("one\u2028two", "U+2028"),
}
RAW = ("\x1b", "\r", "\x00", "\x9b", "\x7f", "\u202e", "\u2066", "\u200b", "\ufeff", "\u2028")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[str]:
    store = LocalStore(tmp_path / "store")
    settings = Settings.load({"store": str(tmp_path / "store")}, {})
    tokens = TokenTable({hash_token("alice-token"): Actor("alice")})
    with serve(create_app(settings, service=TaskService(store, Layout()), tokens=tokens)) as base:
        yield base


@pytest.mark.parametrize(("name", "named"), HOSTILE.values(), ids=HOSTILE.keys())
def test_the_api_refuses_a_name_with_a_control_or_invisible_character(api: str, name: str, named: str) -> None:
    r = requests.post(
        api + "/api/tasks",
        json={"name": name, "type": "copy"},
        headers={"Authorization": "Bearer alice-token"},
        timeout=30,
    )
    assert r.status_code == 400, r.text
    message = r.json()["error"]["message"] if "error" in r.json() else r.text
    assert "only visible text" in message and named in message
    listed = requests.get(api + "/api/tasks", headers={"Authorization": "Bearer alice-token"}, timeout=30)
    assert listed.json()["tasks"] == []


def test_a_plain_name_in_any_script_is_still_accepted(api: str) -> None:
    names = (
        "Monthly report",
        "Müller & Søn – März",
        "月次レポート",
        "تقرير شهري",
        "tab-free  two spaces",
        "👩\u200d💻 dev report",  # emoji joined by a zero-width joiner
        "🏳\ufe0f\u200d🌈 pride",
        "هیچ\u200cکس",  # Persian: a zero-width non-joiner inside a word
        "क्\u200dष",  # Devanagari: a joiner between letters
        "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f Scotland",  # a flag of tag characters
    )
    for name in names:
        r = requests.post(
            api + "/api/tasks",
            json={"name": name, "type": "copy"},
            headers={"Authorization": "Bearer alice-token"},
            timeout=30,
        )
        assert r.status_code == 201, r.text


def test_the_cli_refuses_such_a_name_with_the_same_message(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_bytes(b"a,b\n1,2\n")
    env = child_env(path=(ROOT,), S3TASK_USER="ada")
    done = cli(
        "--store", str(tmp_path / "store"), "submit", str(path), "--name", "red \x1b[31malert", env=env, cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert "only visible text" in done.stderr and "U+001B" in done.stderr
    assert "\x1b" not in done.stderr


@pytest.fixture
def stored_before(tmp_path: Path) -> tuple[str, str]:
    """A task whose stored name and owner hold what is now refused (written before the check)."""
    store, layout = LocalStore(tmp_path / "store"), Layout()
    task = TaskService(store, layout).create(Actor("ada"), "placeholder", "copy").record
    hostile = "".join(name for name, _ in HOSTILE.values())
    update_record(
        store, layout, task.task_id, lambda r, now: dataclasses.replace(r, task_name=hostile, created_by="ada\x1b[2J")
    )
    return str(tmp_path / "store"), task.task_id


@pytest.mark.parametrize("command", [("list",), ("show",), ("show", "--json")], ids=" ".join)
def test_list_and_show_print_a_stored_name_s_characters_as_escapes(tmp_path, stored_before, command) -> None:
    store, task_id = stored_before
    args = [*command[:1], *([task_id] if command[0] == "show" else []), *command[1:]]
    done = cli("--store", store, *args, env=child_env(path=(ROOT,), S3TASK_USER="ada"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for char in RAW:
        assert char not in done.stdout, f"{char!r} printed raw by {' '.join(command)}"
    assert "\\u001b" in done.stdout and ("\\u202e" in done.stdout or command == ("list",))
    if command == ("list",):
        assert len(done.stdout.splitlines()) == 2  # the header and one row: no fake rows


def test_show_json_still_parses_to_the_stored_name(tmp_path, stored_before) -> None:
    import json

    store, task_id = stored_before
    done = cli(
        "--store", store, "show", task_id, "--json", env=child_env(path=(ROOT,), S3TASK_USER="ada"), cwd=tmp_path
    )
    assert json.loads(done.stdout)["task_name"] == "".join(name for name, _ in HOSTILE.values())


def test_a_log_line_shows_control_characters_as_escapes() -> None:
    record = logging.LogRecord(
        "s3task", logging.INFO, __file__, 1, "task %s named %s", ("7ABC", "x\x1b[2J\r\nfake"), None
    )
    line = VisibleFormatter("%(levelname)s %(message)s").format(record)
    assert line == "INFO task 7ABC named x\\u001b[2J\\u000d\\u000afake"
