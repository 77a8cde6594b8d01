"""Start-up time (issue 15 item 3): process wall time, best of N.

- ``python -c pass``: the interpreter alone, the floor under everything else;
- ``worker.py --once`` on an empty local store: start, prove the store, poll once, exit;
- ``python -m s3task list`` and ``show <id>`` on a local store with a few tasks;
- a long-running ``worker.py`` (default poll interval) started beside one queued task: from
  ``Popen`` to the task's record saying running (read every 5 ms from the store), which
  includes the interpreter, the imports, the store probe and the first poll.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from s3task.records import read_record
from s3task.states import Status

from . import harness as h

CLI_TASKS = 3


def measure(out: Path, tiny: Path, rounds: int) -> dict[str, Any]:
    res: dict[str, Any] = {"rounds": rounds}
    env = h._worker_env()
    res["python_s"] = _best(rounds, [h.PY, "-c", "pass"], env)
    empty = out / "store-startup-empty"
    empty.mkdir(parents=True, exist_ok=True)
    res["worker_once_empty_s"] = _best(rounds, [h.PY, "worker.py", "--once", "--store", str(empty)], env)

    site = h.local_site(out / "store-startup-cli")
    task_ids = [h.create_task(site, tiny, "copy", name=f"startup {i}") for i in range(CLI_TASKS)]
    cli = [h.PY, "-m", "s3task", "--store", site.url, "--as", h.ALICE.name]
    res["cli_list_s"] = _best(rounds, [*cli, "list"], env)
    res["cli_show_s"] = _best(rounds, [*cli, "show", task_ids[0]], env)
    res["first_claim_s"] = min(_first_claim(out, tiny, i) for i in range(rounds))
    return res


def _best(rounds: int, cmd: list[str], env: dict[str, str]) -> float:
    times: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=h.ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return round(min(times), 3)


def _first_claim(out: Path, tiny: Path, i: int) -> float:
    """Seconds from starting a worker to its claim of the one task queued before it started."""
    site = h.local_site(out / "store-startup-claim")
    task_id = h.create_task(site, tiny, "copy", name=f"first claim {i}")
    h.submit(site, task_id)
    log = open(out / "worker-startup-claim.log", "wb")  # noqa: SIM115 - closed below
    started = time.perf_counter()
    proc = subprocess.Popen([h.PY, "worker.py", "--store", site.url], env=site.env, cwd=h.ROOT, stdout=log, stderr=log)
    try:
        deadline = started + 60
        while True:
            record, _etag = read_record(site.store, site.layout, task_id)
            if record.status is not Status.QUEUED:
                claimed = time.perf_counter() - started
                break
            if proc.poll() is not None or time.perf_counter() > deadline:
                raise RuntimeError(f"the worker did not claim {task_id}: see {log.name}")
            time.sleep(0.005)
        # Let the task end before stopping the worker, so each round leaves nothing running.
        while read_record(site.store, site.layout, task_id)[0].status is Status.RUNNING:
            if proc.poll() is not None or time.perf_counter() > deadline:
                raise RuntimeError(f"the worker did not finish {task_id}: see {log.name}")
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        log.close()
    return round(claimed, 3)
