"""Real ``worker.py`` processes watching the recipes' inboxes: on moto's S3 over HTTP and on the local store,
four workers, files dropped while they run; each file becomes one task, run once. A sweeping worker
killed is taken over once its lease (six intervals) runs out; one stopped gives the lease up at once."""

from __future__ import annotations

from pathlib import Path

import worker_handlers  # noqa: F401  (registers the test task types here too)
from conftest import wait_for
from inboxkit import CSV, LAYOUT, drop, inbox_keys, recipe, tasks_named
from procs import Procs, S3Workers

from s3task.store.local import LocalStore
from s3task.tasks import TaskService

#: Seconds between a worker's sweeps here (the setting's smallest); the lease is six of them.
INTERVAL = 1


def _done(service: TaskService, names: list[str]) -> bool:
    found = [tasks_named(service, n) for n in names]
    return all(len(f) == 1 and f[0].status == "completed" for f in found)


def _taken_once(service: TaskService, store, rid: str, names: list[str]) -> None:
    for name in names:
        [task] = tasks_named(service, name)
        assert task.attempt_id == 1 and task.created_by == "ann", task.history
    assert inbox_keys(store, rid) == []


def test_four_workers_on_s3_take_each_dropped_file_once(s3_workers: S3Workers) -> None:
    s3 = s3_workers
    _, rid = recipe(s3.service)
    env = {**s3.env, "S3TASK_INBOX_INTERVAL": str(INTERVAL)}
    workers = [s3.worker(name=f"inbox{i}", env=env) for i in range(4)]
    for w in workers:
        w.worker_ready(s3.start + 30)
    names = [f"drop-{i}.csv" for i in range(8)]
    for name in names:
        drop(s3.store, rid, name)
    wait_for(lambda: _done(s3.service, names), timeout=s3.start + 60 + 4 * INTERVAL, what="8 dropped files done")
    _taken_once(s3.service, s3.store, rid, names)
    holders = [w for w in workers if "inbox own/ann/crm-weekly: drop-" in w.output()]
    assert len(holders) == 1, "one worker at a time sweeps"

    holders[0].kill()  # its lease runs out after six intervals; another worker sweeps from then on
    drop(s3.store, rid, "after-kill.csv")
    wait_for(lambda: _done(s3.service, ["after-kill.csv"]), timeout=s3.start + 60 + 8 * INTERVAL, what="taken over")
    _taken_once(s3.service, s3.store, rid, [*names, "after-kill.csv"])


def test_workers_on_the_local_store_take_a_file_once_it_is_whole(procs: Procs, tmp_path: Path, startup: float) -> None:
    root = tmp_path / "store"
    store = LocalStore(root)
    service = TaskService(store, LAYOUT)
    _, rid = recipe(service)
    env = {**procs.env, "S3TASK_INBOX_INTERVAL": str(INTERVAL)}
    workers = [procs.worker(str(root), "--poll-interval", "0.2", worker_id=f"local{i}", env=env) for i in range(2)]
    for w in workers:
        w.worker_ready(startup + 30)
    names = [f"local-{i}.csv" for i in range(4)]
    for name in names:
        drop(store, rid, name, CSV)
    wait_for(lambda: _done(service, names), timeout=startup + 60 + 4 * INTERVAL, what="4 dropped files done")
    _taken_once(service, store, rid, names)


def test_a_cron_worker_takes_what_was_dropped_and_runs_it_in_the_same_run(s3_workers: S3Workers) -> None:
    """``worker.py --once`` (cron) sweeps once before it looks for work: a file dropped since the last run is
    a task done when the run ends, and the run gives the sweep's lease up for the next."""
    s3 = s3_workers
    _, rid = recipe(s3.service)
    drop(s3.store, rid, "cron.csv")
    env = {**s3.env, "S3TASK_INBOX_INTERVAL": str(INTERVAL)}
    once = s3.worker("--once", env=env, name="cron")
    assert once.popen.wait(timeout=s3.start + 120) == 0, once.tail()
    assert _done(s3.service, ["cron.csv"]), once.tail()
    _taken_once(s3.service, s3.store, rid, ["cron.csv"])
    drop(s3.store, rid, "cron-2.csv")  # the lease was given up: the next run sweeps at once
    again = s3.worker("--once", env=env, name="cron")
    assert again.popen.wait(timeout=s3.start + 120) == 0, again.tail()
    assert _done(s3.service, ["cron-2.csv"]), again.tail()
