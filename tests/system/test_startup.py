"""Start-up (issue 15 item 3): the CLI and a worker's own process start without pandas, pyarrow or numpy.

Only attempts need them, and attempts run in processes forked from the worker's fork server, which
loads them itself (s3task.worker.preload). A long-running worker starts that server without waiting
for it, so it polls and claims at once; ``--once`` starts it only for a first attempt. Timings are
the benchmark's (bench/startup.py); these tests check what makes them possible.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
from conftest import wait_for
from procs import Procs, child_env, run

from s3task.records import read_record
from s3task.store import open_store
from s3task.tasks import Actor, TaskService

ROOT = Path(__file__).resolve().parents[2]
ALICE = Actor("alice")
HEAVY = ("pandas", "pyarrow", "numpy")

#: Runs one entry point's ``main`` in a fresh interpreter, then prints what it imported of HEAVY and
#: the processes it left running (its children, read from /proc).
DRIVER = """
import json, os, sys
from pathlib import Path
module, argv = sys.argv[1], sys.argv[2:]
main = __import__(module, fromlist=["main"]).main
code = main(argv)
pid = str(os.getpid())
children = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and p.name != pid
            and (p / "stat").exists() and (p / "stat").read_text().rsplit(")", 1)[-1].split()[1] == pid]
print(json.dumps({"code": code, "heavy": sorted(m for m in %r if m in sys.modules), "children": children}))
""" % (HEAVY,)  # noqa: UP031

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads child processes from /proc")


def run_main(module: str, *argv: str, cwd: Path) -> dict:
    proc = run(
        [sys.executable, "-c", DRIVER, module, *argv], cwd=cwd, env=child_env(path=(ROOT,), S3TASK_USER=ALICE.name)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def queue_task(store_dir: Path, body: bytes) -> tuple[TaskService, str]:
    store, layout = open_store(str(store_dir))
    service = TaskService(store, layout)
    task_id = service.create(ALICE, "startup", "copy").record.task_id
    service.upload_input(ALICE, task_id, body)
    service.submit(ALICE, task_id)
    return service, task_id


def test_importing_the_cli_and_the_worker_imports_no_pandas_pyarrow_or_numpy(tmp_path: Path) -> None:
    code = f"import sys, s3task.cli, s3task.worker.cli; print([m for m in {HEAVY!r} if m in sys.modules])"
    proc = run([sys.executable, "-c", code], cwd=tmp_path, env=child_env(path=(ROOT,)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@needs_proc
def test_worker_once_on_an_empty_store_loads_none_of_them_and_leaves_no_process(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    result = run_main("s3task.worker.cli", "--once", "--store", str(store), cwd=tmp_path)
    # No attempt, so no fork server (and no resource tracker) was started, and nothing outlives the run.
    assert result == {"code": 0, "heavy": [], "children": []}


def test_cli_list_and_show_load_none_of_them(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _service, task_id = queue_task(store, b"id,name\n1,Ada\n")
    listed = run_main("s3task.cli", "--store", str(store), "list", cwd=tmp_path)
    shown = run_main("s3task.cli", "--store", str(store), "show", task_id, cwd=tmp_path)
    assert listed["code"] == shown["code"] == 0
    assert listed["heavy"] == shown["heavy"] == []


def test_a_worker_claims_and_completes_a_task_queued_before_it_started(tmp_path: Path) -> None:
    """The fork server, started in the background as the worker starts, serves the first attempt."""
    store = tmp_path / "store"
    service, task_id = queue_task(store, b"id,name\n1,Ada\n2,Grace\n")
    with Procs(tmp_path, child_env(path=(ROOT,))) as procs:
        proc = procs.worker(str(store), worker_id="starter", cwd=tmp_path)
        # The first poll comes as the worker starts (the interval is only between polls); the
        # deadline is machine time: an interpreter, the store probe, the fork server's imports.
        wait_for(
            lambda: proc.poll() is not None or read_record(service.store, service.layout, task_id)[0].is_terminal,
            timeout=120,
            what="the task to end",
        )
        code = proc.stop(60)
    log = proc.log
    text = log.read_text(errors="replace")
    assert code == 0, text
    assert "Traceback" not in text
    record = read_record(service.store, service.layout, task_id)[0]
    assert (record.status, record.attempt_id) == ("completed", 1), text
    output = service.store.get(record.output_object_path).body.decode("utf-8-sig")
    assert list(csv.reader(io.StringIO(output))) == [["id", "name"], ["1", "Ada"], ["2", "Grace"]]
