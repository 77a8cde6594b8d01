"""Hostile and bad input: ids, records, handlers and CSV files that try to hurt — each contained.

- Task ids (traversal, ``%2e%2e``, absolute, NUL, wrong length or alphabet)
  are refused before any store call, in the TaskService, the HTTP API, the
  CLI and the app's ``/task?id=`` deep link.
- Records that cannot be read (corrupt JSON, huge, wrong types, a newer
  schema) are skipped and reported, never rewritten, and the worker goes on
  with the other tasks.
- A stalled handler, one that eats memory, a worker whose clock is ten
  minutes off: killed, failed or ignored, and the task behind still runs.
- CSV files: one 200 MB line, 100,000 columns, a gzip bomb named .csv, mixed
  encodings (all generated here), each ends failed-with-a-reason or completed,
  within bounded time and with the attempt's peak memory measured from /proc.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import figures
import pytest
import requests
import worker_handlers  # noqa: F401  (registers test_hang in this process too)
from apps.http_server import serve
from conftest import wait_for
from crashhook import CrashStore
from faults import save_figures
from procs import Proc, Procs, child_env, worker_args
from support import csv_rows

from s3task import cli
from s3task.config import Settings
from s3task.errors import InvalidTaskId, S3TaskError
from s3task.layout import Layout
from s3task.record import SCHEMA_VERSION
from s3task.records import read_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token

ROOT = Path(__file__).resolve().parents[2]
ALICE = Actor("alice")
BAD_IDS = [
    "../../etc/passwd",
    "..",
    "%2e%2e",
    "%2e%2e%2fstatus.json",
    "/etc/passwd",
    "/",
    "7ZZZZZZZZZZZZZZZZZZZZZZZZZ\x00",
    "7ZZZZZZZZZZZZZ\x00ZZZZZZZZZZZ",
    "7ZZZZZZZZZZZZZZZZZZZZZZZZ",  # 25 characters
    "7ZZZZZZZZZZZZZZZZZZZZZZZZZZ",  # 27
    "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",  # first character past 7: not an inverted ULID
    "7ZZZZZZZZZZZZZZZZZZZZZZZZU",  # U is not Crockford base32
    "7zzzzzzzzzzzzzzzzzzzzzzzzz",  # lower case
    "7ZZZZZZZZZZZZZZZZZZZZZZZZ/",
    "",
    " 7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
]
_figures: dict[str, object] = {}


@contextlib.contextmanager
def recorded(store: LocalStore) -> Iterator[tuple[CrashStore, list[str]]]:
    calls: list[str] = []
    yield CrashStore(store, lambda point, key: calls.append(f"{point} {key}")), calls


# --- task ids --------------------------------------------------------------------------------------


def test_bad_ids_are_refused_by_the_task_service_before_any_store_call(tmp_path: Path) -> None:
    with recorded(LocalStore(tmp_path / "s")) as (store, calls):
        service = TaskService(store, Layout())
        for bad in BAD_IDS:
            for action in (
                service.get,
                service.submit,
                service.cancel,
                service.retry,
                service.output_url,
                lambda a, t: service.upload_input(a, t, b"a\n1\n"),
                lambda a, t: service.read_output(a, t),
            ):
                with pytest.raises(InvalidTaskId):
                    action(ALICE, bad)
            with pytest.raises(S3TaskError, match="cursor is not valid"):
                service.list(ALICE, cursor=bad or "x")
        assert calls == [], calls


def test_bad_ids_are_refused_by_the_http_api(tmp_path: Path) -> None:
    with recorded(LocalStore(tmp_path / "s")) as (store, calls):
        service = TaskService(store, Layout())
        tokens = TokenTable({hash_token("alice-token"): ALICE})
        app = create_app(Settings(store=str(tmp_path / "s")), service=service, tokens=tokens)
        auth = {"Authorization": "Bearer alice-token"}
        with serve(app) as base:
            for bad in BAD_IDS:
                quoted = requests.utils.quote(bad, safe="%")  # %2e%2e stays as the client wrote it
                for method, suffix in (("GET", ""), ("POST", "/cancel"), ("POST", "/retry"), ("POST", "/submit"),
                                       ("GET", "/output")):  # fmt: skip
                    resp = requests.request(method, f"{base}/api/tasks/{quoted}{suffix}", headers=auth, timeout=10)
                    if resp.status_code == 200:  # "/" took the URL to the task list: no task was named
                        assert bad.strip("/") == "" and "tasks" in resp.json()
                        continue
                    assert resp.status_code in (400, 404, 405), (bad, suffix, resp.status_code, resp.text)
                    if resp.headers.get("content-type") == "application/json":  # else: the client's URL
                        # normalisation sent ../ outside /api, where nothing answers
                        assert resp.json()["code"] in ("invalid_task_id", "not_found", "method_not_allowed")
            resp = requests.get(f"{base}/api/tasks?cursor=..%2F..", headers=auth, timeout=10)
            assert resp.status_code == 400
        assert [c for c in calls if not c.endswith(" batch-tasks/")] == [], calls  # only the list "/" led to


def test_bad_ids_are_refused_by_the_cli(tmp_path: Path, monkeypatch, capsys) -> None:
    root = tmp_path / "s"
    with recorded(LocalStore(root)) as (store, calls):
        monkeypatch.setattr(cli, "open_store", lambda url, **_: (store, Layout()))
        for bad in BAD_IDS:
            for command in ("show", "cancel", "retry", "download"):
                if "\x00" in bad:
                    bad = bad.replace("\x00", "\\x00")  # argv cannot carry a NUL; the escaped form is refused too
                assert cli.main(["--store", str(root), command, bad]) == 1
                err = capsys.readouterr().err
                assert err.startswith("error: ") and "not a valid task id" in err, err
        assert calls == [], calls
    assert sorted(p.name for p in root.iterdir()) == [".s3task-meta"]


def counted(call: Any, calls: list[str]) -> Any:
    """``call`` (a store method), noting the key of each call in ``calls``."""

    def noted(key: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(key)
        return call(key, *args, **kwargs)

    return noted


def test_bad_ids_in_the_apps_deep_link(tmp_path: Path, monkeypatch) -> None:
    from streamlit import config as st_config
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("S3TASK_STORE", str(tmp_path / "s"))
    monkeypatch.setenv("S3TASK_EMBEDDED_WORKER", "0")
    saved = st_config.get_option("server.address")
    st_config.set_option("server.address", "127.0.0.1")
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=20)
        at.run()
        from ui.services import task_service

        app_service = task_service(str(tmp_path / "s"), 3, 900)
        calls: list[str] = []
        store = app_service.store  # the one object every part of the service calls: each call is counted
        for name in ("get", "get_start", "head", "open_read", "put", "delete", "list_keys"):
            monkeypatch.setattr(store, name, counted(getattr(store, name), calls))
        for bad in [b for b in BAD_IDS if b]:
            at.query_params["id"] = bad
            at.switch_page("pages/task.py").run()
            assert not at.exception, bad
            assert "not valid" in at.error[0].value, (bad, [e.value for e in at.error])
        assert [k for k in calls if "status.json" in k or "/input" in k or "/output" in k] == []
    finally:
        st_config.set_option("server.address", saved)


# --- records that cannot be read ---------------------------------------------------------------------


def bad_records(task_id: str) -> dict[str, bytes]:
    good = {
        "schema_version": SCHEMA_VERSION,
        "task_id": task_id,
        "task_name": "x",
        "created_by": "alice",
        "task_type": "copy",
        "status": "queued",
    }
    return {
        "corrupt JSON": b'{"schema_version": 1, "task_id": "' + task_id.encode() + b'", "status": "que',
        "huge": json.dumps({**good, "task_name": "x" * 300_000}).encode(),
        "wrong types": json.dumps({**good, "attempt_id": "three", "payload": [1, 2]}).encode(),
        "not an object": b"[1, 2, 3]",
        "newer schema": json.dumps({**good, "schema_version": SCHEMA_VERSION + 1, "status": "paused"}).encode(),
        "unknown status": json.dumps({**good, "status": "exploded"}).encode(),
        "binary": bytes(range(256)) * 4,
    }


def test_unreadable_records_are_reported_by_every_surface_and_never_rewritten(tmp_path: Path, monkeypatch, capsys):
    """The API, the CLI and the app each say the record cannot be read; none of them writes it."""
    from streamlit import config as st_config
    from streamlit.testing.v1 import AppTest

    root = tmp_path / "s"
    store, layout = LocalStore(root), Layout()
    service = TaskService(store, layout)
    small = tmp_path / "small.csv"
    small.write_bytes(csv_rows(2))
    bodies: dict[str, bytes] = {}
    for kind, body in bad_records("0" * 26).items():
        task_id = submit_file(service, kind, small)
        bodies[task_id] = body.replace(b"0" * 26, task_id.encode())
        store.put(layout.status_key(task_id), bodies[task_id], PutMode.OVERWRITE)
    tokens = TokenTable({hash_token("alice-token"): ALICE})
    auth = {"Authorization": "Bearer alice-token"}
    with serve(create_app(Settings(store=str(root)), service=TaskService(store, layout), tokens=tokens)) as base:
        for task_id in bodies:
            for method, suffix in (("GET", ""), ("POST", "/cancel"), ("POST", "/retry")):
                resp = requests.request(method, f"{base}/api/tasks/{task_id}{suffix}", headers=auth, timeout=10)
                assert resp.status_code in (409, 500) and resp.json()["code"] in (
                    "corrupt_record",
                    "unsupported_schema",
                ), resp.text
                assert "Traceback" not in resp.text
        listing = requests.get(f"{base}/api/tasks", headers=auth, timeout=10).json()
        assert len(listing["problems"]) == len(bodies) and listing["tasks"] == []
    assert cli.main(["--store", str(root), "list"]) == 0
    assert capsys.readouterr().err.count("warning: ") == len(bodies)
    for task_id in bodies:
        assert cli.main(["--store", str(root), "cancel", task_id]) == 1
        assert capsys.readouterr().err.startswith("error: ")
    monkeypatch.setenv("S3TASK_STORE", str(root))
    monkeypatch.setenv("S3TASK_EMBEDDED_WORKER", "0")
    saved = st_config.get_option("server.address")
    st_config.set_option("server.address", "127.0.0.1")
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=20).run()
        assert not at.exception
        for task_id in bodies:
            at.query_params["id"] = task_id
            at.switch_page("pages/task.py").run()
            assert not at.exception
            assert "Could not read the task" in at.error[0].value, [e.value for e in at.error]
            assert not at.button or not {b.label for b in at.button} & {"Cancel task…", "Retry now"}
    finally:
        st_config.set_option("server.address", saved)
    for task_id, body in bodies.items():
        assert store.get(layout.status_key(task_id)).body == body, "an unreadable record was rewritten"


# --- one worker process against everything hostile at once ---------------------------------------------


class PeakMemory:
    """Samples the peak RSS (VmHWM) of every process below ``pid``: the attempt children."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peaks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            for pid in self._descendants():
                kb = _status_kb(pid, "VmHWM")
                if kb:
                    self.peaks[pid] = max(self.peaks.get(pid, 0), kb)

    def _descendants(self) -> list[int]:
        parents: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                ppid = _status_kb(int(entry), "PPid")
                if ppid is not None:
                    parents[int(entry)] = ppid
        found, frontier = [], [self.pid]
        while frontier:
            kids = [p for p, pp in parents.items() if pp in frontier]
            found += kids
            frontier = kids
        return found

    @property
    def max_mb(self) -> float:
        return max(self.peaks.values(), default=0) / 1024


def _status_kb(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def write_200mb_line(path: Path) -> None:
    with path.open("wb") as f:
        f.write(b"id,blob\n1,")
        chunk = b"x" * (1 << 20)
        for _ in range(200):
            f.write(chunk)
        f.write(b"\n")


def write_wide(path: Path, columns: int = 100_000) -> None:
    with path.open("wb") as f:
        f.write(",".join(f"c{i}" for i in range(columns)).encode() + b"\n")
        for row in range(3):
            f.write(",".join(str(row) for _ in range(columns)).encode() + b"\n")


def write_gzip_bomb(path: Path) -> None:
    with gzip.open(path, "wb", compresslevel=9) as f:
        zeros = b"\x00" * (1 << 20)
        for _ in range(512):  # 512 MB of zeros, about 0.5 MB on disk
            f.write(zeros)


def write_mixed_encodings(path: Path) -> None:
    text = "name,city\n" + "".join(f"Zoë {i},Zürich\n" for i in range(2000))
    path.write_bytes(text.encode() + "José,São Paulo\n".encode("latin-1") + "a,b\n".encode("utf-16"))


HOSTILE_CSV = {
    # name: (writer, what the record must say: completed, or failed with this in last_error)
    "a single 200 MB line": (write_200mb_line, "a single row is longer than 64 MB"),
    "100,000 columns": (write_wide, "at most 16,384 are supported"),
    "a gzip bomb named .csv": (write_gzip_bomb, "not UTF-8"),
    "mixed encodings": (write_mixed_encodings, "line 2,002: not UTF-8"),
}


def submit_file(service: TaskService, name: str, path: Path, task_type: str = "copy", params=None) -> str | str:
    task_id = service.create(ALICE, name, task_type, params).record.task_id
    with path.open("rb") as f:
        service.upload_input(ALICE, task_id, f)
    service.submit(ALICE, task_id)
    return task_id


def test_hostile_tasks_are_contained_and_the_rest_still_runs(tmp_path: Path, startup: float) -> None:
    root = tmp_path / "store"
    store, layout = LocalStore(root), Layout()
    service = TaskService(store, layout, max_attempts=2)
    small = tmp_path / "small.csv"
    small.write_bytes(csv_rows(3))
    unreadable: dict[str, bytes] = {}
    for kind, body in bad_records("0" * 26).items():  # bad before any worker sees them
        task_id = submit_file(service, f"record: {kind}", small)
        body = body.replace(b"0" * 26, task_id.encode())
        store.put(layout.status_key(task_id), body, PutMode.OVERWRITE)
        unreadable[task_id] = body

    # The worker starts first and runs one small task, so its fork server has loaded before a hostile task is
    # claimed: with --stall-timeout 3, a server still loading on a busy machine fails an attempt as "not ready",
    # to be retried (a clean-clone CI run saw it), and the bad-input tasks below must be failed at their first.
    warm_up = submit_file(service, "warm-up", small)
    env = child_env(S3TASK_MAX_CHILD_MEMORY_MB="400", S3TASK_RETRY_BACKOFF_SECONDS="0.1")
    stall_timeout = 3
    args = ["--poll-interval", "0.2", "--concurrency", "2", "--stall-timeout", str(stall_timeout)]
    args += ["--max-attempts", "2", "--handlers", "worker_handlers", "--handlers", "faults"]
    proc = Proc(worker_args(str(root), *args, worker_id="hostile"), env=env, log=tmp_path / "worker.log")
    log = proc.log
    csv_tasks: dict[str, tuple[str, str | None]] = {}
    try:
        warm = lambda: read_record(store, layout, warm_up)[0].is_terminal  # noqa: E731
        proc.wait_until(warm, 30 + startup + 2 * stall_timeout, "the warm-up task to end")
        assert read_record(store, layout, warm_up)[0].status == "completed", proc.tail()
        started = time.monotonic()

        refused_at_submit: dict[str, str] = {}
        for name, (write, outcome) in HOSTILE_CSV.items():
            path = tmp_path / "upload.csv"
            write(path)
            try:
                csv_tasks[submit_file(service, name, path)] = (name, outcome)
            except S3TaskError as e:  # refused at submit: the person is told at once
                refused_at_submit[name] = str(e)
            path.unlink()
        generated_s = time.monotonic() - started

        hog = submit_file(service, "eats memory", small, "test_hog")
        hang = submit_file(service, "hangs", small, "test_hang")
        good = [submit_file(service, f"good {i}", small) for i in range(3)]

        with PeakMemory(proc.pid) as memory:
            watched = [*csv_tasks, hog, hang, *good]

            def settled() -> bool:
                return all(read_record(store, layout, t)[0].is_terminal for t in watched)

            wait_for(settled, timeout=150, interval=0.2, what="every hostile task finished")
        assert proc.poll() is None, "the worker itself must survive all of it"
    finally:
        proc.terminate()
        proc.wait(30)
        for task_id in csv_tasks:  # the 200 MB input need not outlive the test in pytest's kept tmp dirs
            with contextlib.suppress(S3TaskError):
                store.delete(layout.input_key(task_id))
    elapsed = time.monotonic() - started
    text = log.read_text(errors="replace")

    for task_id in good:
        assert read_record(store, layout, task_id)[0].status == "completed"
    hogged = read_record(store, layout, hog)[0]
    assert (hogged.status, hogged.final, hogged.failed_attempts) == ("failed", True, 2), hogged
    assert "used more than 400 MB of memory" in hogged.last_error
    hung = read_record(store, layout, hang)[0]
    assert (hung.status, hung.final) == ("failed", True) and "stalled" in hung.last_error
    outcomes = {}
    for task_id, (name, outcome) in csv_tasks.items():
        record = read_record(store, layout, task_id)[0]
        if outcome is None:
            assert record.status == "completed", (name, record.last_error)
        else:
            assert (record.status, record.final) == ("failed", True), (name, record.status, record.last_error)
            assert outcome in record.last_error, (name, record.last_error)
            assert record.attempt_id == 1, f"{name}: bad input is not retried"
        outcomes[name] = record.status + (f": {record.last_error}" if record.last_error else "")
    for name, message in refused_at_submit.items():
        outcomes[name] = f"refused at submit: {message}"
    # Unreadable records: reported by the worker and by listings, never rewritten.
    for task_id, body in unreadable.items():
        assert store.get(layout.status_key(task_id)).body == body
        assert task_id in text, f"the worker did not report {task_id}"
    page = TaskService(store, layout).list(ALICE, limit=200)
    assert {p.split(":")[0] for p in page.problems} == set(unreadable)
    assert "Traceback" not in text, text[-3000:]
    peaks = sorted((kb // 1024 for kb in memory.peaks.values()), reverse=True)
    assert peaks[0] < 700, f"an attempt peaked at {peaks[0]} MB"
    # Apart from the hog's two attempts (killed at the cap), every attempt stayed below it.
    assert all(p < 400 for p in peaks[2:]), peaks
    assert elapsed < 170
    _figures.update(
        {
            "csv_outcomes": outcomes,
            "attempt_peaks_mb": peaks[:8],
            "unreadable_records_skipped": len(unreadable),
            "hostile_run_seconds": round(elapsed),
            "input_generation_seconds": round(generated_s),
            "memory_hog": hogged.last_error,
            "stalled_handler": hung.last_error,
        }
    )


def test_a_killed_worker_leaves_no_attempt_process_behind(tmp_path: Path) -> None:
    """SIGKILL a worker whose handler hangs: its attempt's process must not live on, orphaned, for ever."""
    root = tmp_path / "store"
    store, layout = LocalStore(root), Layout()
    service = TaskService(store, layout)
    small = tmp_path / "small.csv"
    small.write_bytes(csv_rows(2))
    task_id = submit_file(service, "hangs", small, "test_hang")
    args = ["--poll-interval", "0.2", "--handlers", "worker_handlers"]
    proc = Proc(worker_args(str(root), *args, worker_id="doomed"), env=child_env(), log=tmp_path / "doomed.log")
    try:
        wait_for(lambda: read_record(store, layout, task_id)[0].status == "running", timeout=60)
        server = wait_for(lambda: [p for p in _children(proc.pid) if _cmdline_has(p, "forkserver")], timeout=30)
        attempt = wait_for(lambda: _children(server[0]), timeout=30, what="the attempt's process")
    finally:
        proc.kill()
    try:
        wait_for(lambda: not any(_alive(p) for p in attempt), timeout=15, what="the orphaned attempt to go")
    finally:
        for pid in attempt:  # leave nothing running, whatever the verdict
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and _status_kb(int(e), "PPid") == pid]


def _cmdline_has(pid: int, text: str) -> bool:
    try:
        return text in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def _alive(pid: int) -> bool:
    state = None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                state = line.split()[1]
    except OSError:
        return False
    return state not in (None, "Z")


def test_a_worker_whose_clock_is_ten_minutes_off_neither_steals_nor_hoards(moto_http_bucket, tmp_path: Path) -> None:
    """Leases are judged by the store's clock (the S3 Date header), so a wrong machine clock changes nothing."""
    import boto3

    from s3task.store.s3 import S3Store

    endpoint, bucket = moto_http_bucket
    store = S3Store(bucket, client=boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1"))
    layout = Layout("batch-tasks")
    service = TaskService(store, layout)
    gate = tmp_path / "gate"
    held = service.create(ALICE, "held", "test_gated", {"gate": str(gate)}).record.task_id
    service.upload_input(ALICE, held, csv_rows(3))
    service.submit(ALICE, held)
    harness = Procs(tmp_path, child_env(endpoint=endpoint, S3TASK_LEASE_GRACE_SECONDS="2"))

    def worker(name: str, skew: int) -> Proc:
        args = ["--poll-interval", "0.2", "--lease-seconds", "4", "--handlers", "worker_handlers"]
        env = {"S3TASK_CLOCK_SKEW_SECONDS": str(skew)}
        return harness.worker(f"s3://{bucket}/batch-tasks", *args, worker_id=name, env=env)

    procs = [worker("honest", 0)]
    try:
        wait_for(lambda: read_record(store, layout, held)[0].status == "running", timeout=60, what="claimed")
        procs += [worker("fast-clock", 600), worker("slow-clock", -600)]
        renewals: set[str | None] = set()

        def renewed_often() -> bool:
            record = read_record(store, layout, held)[0]
            assert (record.status, record.attempt_id, record.worker_id) == ("running", 1, "honest"), record.history
            renewals.add(record.lease_expires_at)
            return len(renewals) >= 5  # about five seconds of the skewed workers polling it

        wait_for(renewed_often, timeout=60, interval=0.2, what="the honest worker renewing under the others' eyes")
        fresh = service.create(ALICE, "for a skewed worker", "copy").record.task_id
        service.upload_input(ALICE, fresh, csv_rows(2))
        service.submit(ALICE, fresh)  # the honest worker is busy (one task at a time): a skewed one takes it
        record = wait_for(lambda: (r := read_record(store, layout, fresh)[0]).status == "completed" and r, timeout=60)
        claim = next(h for h in record.history if h["event"] == "claim")
        assert claim["note"] in ("worker fast-clock", "worker slow-clock")
        gate.touch()
        done = wait_for(lambda: (r := read_record(store, layout, held)[0]).status == "completed" and r, timeout=60)
        assert done.attempt_id == 1 and done.failed_attempts == 0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
    _figures["skewed_clocks"] = "±600 s: no lease stolen or kept; a skewed worker completes its own task"


@figures.at_end
def _publish() -> None:
    if _figures:  # the hostile run ran
        save_figures("hostile", _figures)
