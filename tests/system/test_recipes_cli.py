"""Recipes and needed columns through the CLI, as an operator types them (issue 22 items 2 and 3):
``recipe save`` from a submitted task, ``recipe list``, ``submit --recipe`` next month, ``--column``,
and a file without the needed column refused before anything is queued."""

from __future__ import annotations

import json
from pathlib import Path

from procs import cli, run, worker_args
from support import csv_bytes

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.local import LocalStore

MARCH = [["Kunde", "Mail", "Betrag"], ["Anna", "anna@example.com", "1,5"], ["Ben", "ben@example.org", "2,0"]]
APRIL = [["Betrag", "kunde", "MAIL"], ["3,5", "Cleo", "cleo@example.net"]]


def write(path: Path, rows: list[list[str]]) -> Path:
    path.write_bytes(csv_bytes(rows, quote_all=True).replace(b'","', b'";"'))
    return path


def s3task(store: Path, *args: str, user: str = "ann"):
    return cli("--store", str(store), "--as", user, *args)


def record(store: Path, task_id: str):
    return read_record(LocalStore(store), Layout(), task_id)[0]


def test_a_recipe_saved_from_march_makes_april_the_same_way(tmp_path: Path) -> None:
    store = tmp_path / "store"
    march = s3task(store, "submit", str(write(tmp_path / "march.csv", MARCH)), "--name", "March",
                   "--type", "email_enrichment")  # fmt: skip
    assert march.returncode == 0, march.stderr
    saved = s3task(store, "recipe", "save", "CRM monthly", "--from", march.stdout.strip())
    assert saved.returncode == 0, saved.stderr
    assert "saved recipe “CRM monthly” version 1 (ann's: Check and enrich email addresses), read as:" in saved.stdout
    listed = s3task(store, "recipe", "list")
    assert "columns: Kunde, Mail, Betrag" in listed.stdout and "semicolon" in listed.stdout.lower()
    assert listed.stdout.startswith("“CRM monthly” version 1 (ann's: Check and enrich email addresses) · ")
    assert json.loads(s3task(store, "recipe", "list", "--json").stdout)[0]["params"] == {"email_column": "Mail"}
    april = s3task(store, "submit", str(write(tmp_path / "april.csv", APRIL)), "--name", "April",
                   "--recipe", "crm monthly")  # fmt: skip
    assert april.returncode == 0, april.stderr
    assert "submitted 'April': Check and enrich email addresses" in april.stderr
    task = record(store, april.stdout.strip())
    assert (task.task_type, task.input_format.delimiter) == ("email_enrichment", ";")
    assert task.payload["email_column"] == "MAIL"  # the recipe's "Mail", matched ignoring case
    shown = json.loads(s3task(store, "show", task.task_id, "--json").stdout)
    assert (shown["recipe_id"], shown["recipe_version"]) == ("own/ann/crm-monthly", 1)  # the task names its recipe
    run(worker_args(str(store), "--once"), timeout=None, check=True)
    assert record(store, task.task_id).status == "completed"
    other = s3task(store, "submit", str(tmp_path / "april.csv"), "--name", "x", "--recipe", "CRM monthly",
                   "--type", "copy")  # fmt: skip
    assert other.returncode == 1
    assert (
        "recipe 'CRM monthly' is for --type email_enrichment (Check and enrich email addresses), not --type copy"
        in other.stderr
    )
    gone = s3task(store, "recipe", "remove", "CRM monthly")
    assert gone.returncode == 0 and "no recipes yet" in s3task(store, "recipe", "list").stdout


def test_a_column_named_with_column_and_a_file_without_one_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    rows = [["id", "Contact", "Backup"], ["1", "ann@example.com", "ann@example.org"]]
    chosen = s3task(store, "submit", str(write(tmp_path / "two.csv", rows)), "--name", "Two",
                    "--type", "email_enrichment", "--column", "email=backup")  # fmt: skip
    assert chosen.returncode == 0, chosen.stderr
    assert record(store, chosen.stdout.strip()).payload["email_column"] == "Backup"
    unknown = s3task(store, "submit", str(tmp_path / "two.csv"), "--name", "x", "--type", "email_enrichment",
                     "--column", "phone=Contact")  # fmt: skip
    assert unknown.returncode == 1
    assert (
        "--type email_enrichment (Check and enrich email addresses) needs no column 'phone' (the columns it needs: "
        "email)" in unknown.stderr
    )
    bare = s3task(store, "submit", str(write(tmp_path / "none.csv", [["id", "name"], ["1", "Ann"]])), "--name", "x",
                  "--type", "email_enrichment")  # fmt: skip
    assert bare.returncode == 1
    assert "no email column found; columns are: 'id', 'name'; set the 'email column' parameter" in bare.stderr
    assert [t.task_name for t in _tasks(store)] == ["Two"]  # nothing else was made, nothing queued


def _tasks(store: Path):
    from s3task.tasks import Actor, TaskService

    return TaskService(LocalStore(store), Layout()).list(Actor("ann")).tasks
