"""``s3task compare TASK_A TASK_B --key COL`` (s3task/cli_compare.py), as a process, on a local store whose two
tasks a real ``worker.py --once`` completed: the summary in words and as JSON, daff's highlighter CSV with
``--out``, keys suggested (never guessed) without ``--key``, refusals in one line, and the task's access rules
for a user who is not an operator."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from procs import ROOT, child_env, cli, run, worker_args
from support import csv_bytes

from s3task.layout import Layout
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ANN = Actor("ann")
MARCH = [["id", "name", "price"], ["1", "Ann", "10.0"], ["2", "Ben", "20"], ["3", "Cy", "30"], ["4", "Zoë", "40"]]
NAMED = "v\x1b]0;PWNED\x07\x1b[31mRED"
APRIL = [
    ["id", "name", "price", "city"],
    ["1", "Ann", "10"],
    ["2", "Benjamin", "25"],
    ["4", "Zoë", "40"],
    ["5", "東京", "50"],
]


@pytest.fixture(scope="module")
def two_tasks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A local store with March's and April's lists, each completed by a real worker (``copy``)."""
    root = tmp_path_factory.mktemp("store")
    service = TaskService(LocalStore(root), Layout())
    april_rows = [row + ([""] if len(row) < 4 else []) for row in APRIL]
    march = service.submit_file(ANN, "March", "copy", None, csv_bytes(MARCH)).task_id
    april = service.submit_file(ANN, "April", "copy", None, csv_bytes(april_rows)).task_id
    for name, value in (("Named", "a"), ("Named again", "b")):  # a column name that would drive a terminal
        service.submit_file(ANN, name, "copy", None, csv_bytes([["id", NAMED], ["1", value]]))
    run(worker_args(str(root), "--once"), env=child_env(), timeout=120, check=True)
    assert {service.get(ANN, t).status for t in (march, april)} == {"completed"}
    return root, march, april


def compare(root: Path, *args: str, cwd: Path, **env: str):
    settings = {"S3TASK_USER": "ann", **env}
    return cli("--store", str(root), "compare", *args, cwd=cwd, env=child_env(path=(ROOT,), **settings), timeout=120)


def test_the_summary_in_words_and_the_highlighter(two_tasks, tmp_path: Path) -> None:
    root, march, april = two_tasks
    done = compare(root, march, april, "--key", "id", "--out", "changes.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"{march} -> {april}"
    assert "compared by id: 1 row added, 1 row removed, 1 row changed, 2 rows unchanged" in lines
    assert "name changed in 1 row" in lines and "price changed in 1 row" in lines  # 10.0 = 10: numbers
    assert "columns added: city" in lines and "compared as numbers (1.0 equals 1): price" in lines
    assert lines[-1] == "highlighter (3 rows): changes.csv"
    text = (tmp_path / "changes.csv").read_text(encoding="utf-8-sig")
    assert list(csv.reader(io.StringIO(text, newline=""))) == [
        ["!", "", "", "", "+++"],
        ["@@", "id", "name", "price", "city"],
        ["->", "2", "Ben->Benjamin", "20->25", ""],
        ["+++", "5", "東京", "50", ""],
        ["---", "3", "Cy", "30", ""],
    ]
    assert not list(tmp_path.glob("*.part"))


def test_the_summary_as_json(two_tasks, tmp_path: Path) -> None:
    root, march, april = two_tasks
    done = compare(root, march, april, "--key", "id,name", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["old_task"] == march and found["new_task"] == april and found["keys"] == ["id", "name"]
    assert found["rows"] == {"added": 2, "removed": 2, "changed": 0, "unchanged": 2}  # Ben became Benjamin
    assert found["columns_changed"] == {"price": 0} and found["added_columns"] == ["city"]


def test_without_a_key_the_keys_are_suggested_not_guessed(two_tasks, tmp_path: Path) -> None:
    root, march, april = two_tasks
    done = compare(root, march, april, cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        "error: name the key columns with --key; the columns whose values are unique in both results: id, name, price"
    )


def test_refusals_are_one_line(two_tasks, tmp_path: Path) -> None:
    root, march, april = two_tasks
    missing = compare(root, march, april, "--key", "city", cwd=tmp_path)
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip() == "error: the key column 'city' is not in the old result (it has: id, name, price)"
    nothing = compare(root, march, "0" * 26, "--key", "id", cwd=tmp_path)
    assert nothing.returncode == 1 and nothing.stderr.strip() == f"error: task {'0' * 26} does not exist"
    refused = compare(root, march, april, "--key", "city", "--out", "changes.csv", cwd=tmp_path)
    assert refused.returncode == 1 and not list(tmp_path.glob("changes.csv*")), "no half-written file is left"


def test_column_names_reach_the_terminal_without_their_control_characters(two_tasks, tmp_path: Path) -> None:
    root = two_tasks[0]
    service = TaskService(LocalStore(root), Layout())
    ids = {t.task_name: t.task_id for t in service.list(ANN, limit=10).tasks}
    done = compare(root, ids["Named"], ids["Named again"], "--key", "id", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "v\\u001b]0;PWNED\\u0007\\u001b[31mRED changed in 1 row" in done.stdout.splitlines()


def test_another_users_results_are_theirs(two_tasks, tmp_path: Path) -> None:
    root, march, april = two_tasks
    done = compare(root, march, april, "--key", "id", cwd=tmp_path, S3TASK_USER="bob", S3TASK_CLI_OPERATOR="0")
    assert done.returncode == 1 and done.stdout == ""
    assert "belongs to ann" in done.stderr and len(done.stderr.strip().splitlines()) == 1
