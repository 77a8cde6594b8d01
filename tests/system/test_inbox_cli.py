"""``s3task inbox list|pause|resume`` as an operator and a recipe's owner type them, on the local store:
where to drop a file and the command that does it, waiting files, the files taken with their tasks,
a pause that keeps files waiting, and what no recipe takes."""

from __future__ import annotations

import json
from pathlib import Path

from inboxkit import LAYOUT, drop, recipe
from procs import child_env, cli

from s3task.store.local import LocalStore
from s3task.tasks import TaskService


def s3task(store: Path, *args: str, user: str = "ann", **settings: str):
    return cli("--store", str(store), "--as", user, *args, env=child_env(**settings))


def test_inbox_list_pause_and_resume(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = LocalStore(root)
    service = TaskService(store, LAYOUT)
    _, rid = recipe(service)
    drop(store, rid, "waiting.csv")
    drop(store, "shared/gone", "orphan.csv")
    sweeper = service.inboxes.sweeper("w1", interval=300)
    sweeper.sweep()
    drop(store, rid, "second.csv")
    sweeper.sweep()  # waiting.csv is taken (the same for a sweep); second.csv waits its second sweep

    listed = s3task(root, "inbox", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == "own/ann/crm-weekly: recipe “CRM weekly” (ann's: copy)"
    where = f"{root}/batch-tasks/inbox/own/ann/crm-weekly/"
    assert lines[1] == f"  drop: mkdir -p {where} && cp FILE {where}"
    assert "  waiting: second.csv" in lines
    assert any(line.startswith("  taken ") and "waiting.csv: task " in line and "queued" in line for line in lines)
    assert "  batch-tasks/inbox/shared/gone/orphan.csv" in lines, "an operator sees what no recipe takes"
    as_json = json.loads(s3task(root, "inbox", "list", "--json").stdout)
    assert as_json["inboxes"][0]["waiting"] == ["second.csv"] and as_json["inboxes"][0]["taken"][0]["state"] == "taken"
    assert as_json["untaken"] == ["batch-tasks/inbox/shared/gone/orphan.csv"]

    paused = s3task(root, "inbox", "pause", "CRM weekly")
    assert paused.returncode == 0, paused.stderr
    assert (
        paused.stdout.strip()
        == "inbox own/ann/crm-weekly of recipe “CRM weekly” (ann's: copy): paused: its files wait there"
    )
    assert s3task(root, "inbox", "list").stdout.startswith("own/ann/crm-weekly (paused):")
    refused = s3task(root, "inbox", "resume", rid, user="bob", S3TASK_CLI_OPERATOR="0")
    assert refused.returncode == 1 and "only an operator or its owner" in refused.stderr
    sweeper.sweep()
    assert store.list_keys(LAYOUT.inbox_prefix(rid)) == [LAYOUT.inbox_prefix(rid) + "second.csv"]
    resumed = s3task(root, "inbox", "resume", rid, user="root")
    assert resumed.returncode == 0 and "taking files again" in resumed.stdout
    sweeper.sweep()
    assert store.list_keys(LAYOUT.inbox_prefix(rid)) == [], "resumed, the file seen before the pause is taken"
