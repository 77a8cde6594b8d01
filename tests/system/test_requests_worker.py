"""What a worker process asks of S3 for one 1 MB task a separate CLI process made, counted at the store.

Real processes on moto over HTTP, every request of the worker through a counting proxy
(tests/s3proxy.py): ``worker.py --once`` (cron) and a standing ``worker.py``, each at its default
poll interval. Not counted: the conditional-write probe every worker runs once at start-up (on
``_probe/``, BENCHMARKS.md section 3 lists it apart) and a standing worker's HEADs of the active-bell
(the cost of being idle, also apart there), and so is the inbox sweep (docs/INBOXES.md).
"""

from __future__ import annotations

import time
from pathlib import Path

from procs import PYTHON, WORKER, Procs, child_env, cli, run
from s3proxy import counting_proxy
from support import csv_rows

#: At most this many requests for the task, whichever way the worker runs.
MOST = 15


def _megabyte_csv(path: Path) -> None:
    rows = csv_rows(20_000)
    header, _, body = rows.partition(b"\n")
    while len(body) < 1 << 20:
        body += body
    path.write_bytes(header + b"\n" + body[: 1 << 20].rsplit(b"\n", 1)[0] + b"\n")


def _submitted(endpoint: str, store: str, tmp_path: Path) -> str:
    path = tmp_path / "in.csv"
    _megabyte_csv(path)
    done = cli("submit", str(path), "--name", "counted", env=child_env(endpoint=endpoint, S3TASK_STORE=store))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def _task_requests(seen: list[str]) -> list[str]:
    idle = ("/_probe/", "inbox")  # the probe, and the inbox sweep's lease and listing (docs/INBOXES.md)
    bell = ("HEAD ", "/active-bell")
    return [r for r in seen if not any(i in r for i in idle) and not (r.startswith(bell[0]) and r.endswith(bell[1]))]


def test_worker_once_on_a_cli_task(moto_http_bucket, tmp_path: Path) -> None:
    endpoint, bucket = moto_http_bucket
    store = f"s3://{bucket}/batch-tasks"
    task_id = _submitted(endpoint, store, tmp_path)
    with counting_proxy(endpoint) as (url, log):
        start = time.monotonic()
        done = run([PYTHON, WORKER, "--store", store, "--once"], env=child_env(endpoint=url))
        assert done.returncode == 0, done.stderr
        seen = _task_requests([f"{m} {p}" for _t, m, p in log.since(start)])
    status = [r for r in seen if r.endswith(f"{task_id}/status.json")]
    # The poll's read, the claim, the complete on the claim's ETag, the read after the marker's delete.
    assert [r.split()[0] for r in status] == ["GET", "PUT", "PUT", "GET"], seen
    assert len(seen) <= MOST, "\n".join(seen)


def test_a_standing_worker_on_a_cli_task(moto_http_bucket, tmp_path: Path, procs: Procs, startup: float) -> None:
    endpoint, bucket = moto_http_bucket
    store = f"s3://{bucket}/batch-tasks"
    with counting_proxy(endpoint) as (url, log):
        procs.env = child_env(endpoint=url)
        start = time.monotonic()
        worker = procs.worker(store, worker_id="w1")
        worker.worker_ready(startup + 30)
        task_id = _submitted(endpoint, store, tmp_path)
        worker.wait_for_output(f"completed {task_id}", startup + 30)
        # The listing after the attempt ends (it wakes the loop) finds nothing in progress: from then on,
        # only the bell's HEAD each poll.
        worker.wait_until(lambda: log.since(start)[-1][2].endswith("/active-bell"), 10, "the worker idle again")
        seen = _task_requests([f"{m} {p}" for _t, m, p in log.since(start)])
    status = [r for r in seen if r.endswith(f"{task_id}/status.json")]
    assert [r.split()[0] for r in status][-3:] == ["PUT", "PUT", "GET"], seen  # claim, complete, after the delete
    assert len(seen) <= MOST, "\n".join(seen)
