"""The drop command an inbox shows for the local store, run by a real shell as someone pastes it, with the
store in a folder whose name has a space (found by an outside review: the command broke there)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from inboxkit import ANN, CSV, LAYOUT, recipe, tasks_named

from s3task.store.local import LocalStore
from s3task.tasks import TaskService


def test_the_local_drop_command_pasted_into_a_shell_drops_the_file_where_a_sweep_takes_it(tmp_path: Path) -> None:
    store = LocalStore(str(tmp_path / "shared drive" / "tasks"))
    service = TaskService(store, LAYOUT)
    recipe(service)
    [shown] = service.inboxes.list(ANN)
    export = tmp_path / "june export.csv"
    export.write_bytes(CSV)
    command = shown.command.replace("FILE", "'" + str(export) + "'")
    subprocess.run(["bash", "-c", command], check=True, timeout=30)
    sweeper = TaskService(store, LAYOUT).inboxes.sweeper("w1", interval=60.0)
    taken = sweeper.sweep().taken + sweeper.sweep().taken  # the local store: unchanged over two sweeps
    assert [c.state for c in taken] == ["taken"] and tasks_named(service, "june export.csv")
