"""Plumbing shared by the measurements: stores, a counting moto server, real worker processes.

The worker is always the real thing: ``python worker.py --store … --handlers
bench.passthrough`` in its own process, which forks an attempt child per task
through its fork server. Timings of a task come from the worker's own log
lines ("claimed <id>" … "completed <id>", millisecond timestamps), i.e. claim
→ output written → record completed → marker deleted; the worker's start-up
(imports, CAS probe, fork server) is outside them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

from s3task.layout import Layout
from s3task.store import open_store
from s3task.store.s3 import _DATA_CONFIG, _RECORD_CONFIG, S3Store
from s3task.tasks import Actor, TaskService

from .procwatch import Watcher

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ALICE = Actor("alice")
S3_ENV = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
}
for _k, _v in S3_ENV.items():
    os.environ.setdefault(_k, _v)
os.environ.pop("AWS_PROFILE", None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the moto server -------------------------------------------------------------


class MotoServer:
    """``bench/motoserver.py`` in a subprocess; see there."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [PY, str(ROOT / "bench" / "motoserver.py"), str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != b"ready":
            raise RuntimeError("the moto server did not start")
        self._session = requests.Session()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def bucket(self) -> str:
        name = f"bench-{uuid.uuid4().hex[:10]}"
        client(self.url).create_bucket(Bucket=name)
        return name

    def reset_counts(self) -> None:
        self._session.post(self.url + "/_bench/reset", timeout=10).raise_for_status()

    def counts(self) -> list[tuple[str, str, int]]:
        resp = self._session.get(self.url + "/_bench/counts", timeout=10)
        resp.raise_for_status()
        return [tuple(x) for x in resp.json()]

    def trail(self) -> list[tuple[str, str]]:
        """Every request on a key since the last reset, in order: (kind, key)."""
        resp = self._session.get(self.url + "/_bench/trail", timeout=10)
        resp.raise_for_status()
        return [(kind, key) for kind, key in resp.json()]

    def set_latency(self, ms: float, upload_mb_s: float = 0.0) -> None:
        url = self.url + f"/_bench/latency?ms={ms}&upload_mb_s={upload_mb_s}"
        self._session.post(url, timeout=10).raise_for_status()

    def populate(self, bucket: str, items: list[tuple[str, str]]) -> None:
        for i in range(0, len(items), 5000):
            chunk = json.dumps(items[i : i + 5000])
            self._session.post(self.url + f"/_bench/populate?bucket={bucket}", data=chunk, timeout=120)


_CLIENTS: dict[tuple[str, int], Any] = {}


def client(endpoint: str, config: Any = None) -> Any:
    import boto3

    key = (endpoint, id(config))
    if key not in _CLIENTS:
        _CLIENTS[key] = boto3.session.Session().client("s3", endpoint_url=endpoint, config=config)
    return _CLIENTS[key]


def by_kind(counts: list[tuple[str, str, int]], subject: str | None = None) -> Counter[str]:
    """Counts summed per kind, for one subject (``task:<id>``, ``active``…) or all."""
    out: Counter[str] = Counter()
    for kind, subj, n in counts:
        if subject is None or subj == subject:
            out[kind] += n
    return out


# --- a store the benchmark and the worker share --------------------------------


@dataclass
class Site:
    """One store: its URL for the worker, an ObjectStore and a TaskService for the benchmark."""

    kind: str  # "local" | "s3"
    url: str
    store: Any
    layout: Layout
    env: dict[str, str]
    moto: MotoServer | None = None

    @property
    def service(self) -> TaskService:
        return TaskService(self.store, self.layout)


def local_site(directory: Path) -> Site:
    if directory.exists():
        shutil.rmtree(directory)
    store, layout = open_store(str(directory))
    return Site("local", str(directory), store, layout, _worker_env())


def s3_site(moto: MotoServer, bucket: str | None = None) -> Site:
    bucket = bucket or moto.bucket()
    store = S3Store(bucket, client=client(moto.url, _RECORD_CONFIG), data_client=client(moto.url, _DATA_CONFIG))
    env = _worker_env({"AWS_ENDPOINT_URL_S3": moto.url, **S3_ENV})
    return Site("s3", f"s3://{bucket}/batch-tasks", store, Layout("batch-tasks"), env, moto)


def _worker_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3TASK_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra or {})
    return env


def create_task(site: Site, path: Path, task_type: str, name: str = "bench") -> str:
    """create + upload_input (streamed from ``path``) — not submitted yet."""
    service = site.service
    created = service.create(ALICE, name, task_type)
    with open(path, "rb") as f:
        service.upload_input(ALICE, created.record.task_id, f)
    return created.record.task_id


def warm(path: Path) -> None:
    """Read a file once so that it starts in the page cache, as every contender's input does.

    This VM pages out page cache it considers idle (DAMON ``pageout``), so a
    file written or read a few seconds ago may be back on disk: without this,
    whichever contender happened to read cold paid for the disk, not its work.
    """
    with open(path, "rb", buffering=0) as f:
        while f.read(8 << 20):
            pass


def warm_input(site: Site, task_id: str) -> None:
    """The task's input object read once just before the worker reads it (for moto: over HTTP, which
    also brings its spooled file of a large object into the page cache)."""
    key = site.layout.input_key(task_id)
    if site.kind == "local":
        warm(Path(site.url) / key)
        return
    with site.store.open_read(key) as f:
        while f.read(8 << 20):
            pass


def submit(site: Site, task_id: str) -> float:
    """Submit; returns the wall time (epoch seconds) the call returned."""
    site.service.submit(ALICE, task_id)
    return time.time()


def drop_task(site: Site, task_id: str) -> None:
    """Remove a finished task's objects (keeps big benchmark runs from filling the disk)."""
    prefix = site.layout.task_prefix(task_id)
    for key in site.store.list_keys(prefix):
        site.store.delete(key)
    with contextlib.suppress(Exception):
        site.store.delete(site.layout.user_key(ALICE.name, task_id))


# --- a real worker process -------------------------------------------------------

_EVENT = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+ (claimed|completed|failed) (\w{26})")


@dataclass
class TaskRun:
    task_id: str
    claimed: float  # epoch seconds, from the worker's log
    completed: float | None = None
    child_hwm_mb: float | None = None
    child_cpu_s: float | None = None

    @property
    def seconds(self) -> float | None:
        return None if self.completed is None else self.completed - self.claimed


@dataclass
class WorkerRun:
    tasks: dict[str, TaskRun]
    worker_hwm_mb: float
    fork_server_hwm_mb: float
    wall_seconds: float
    log: str
    returncode: int | None
    children: list[dict] = field(default_factory=list)


class WorkerProcess:
    """``python worker.py`` with our flags, its log in a file, its memory watched from /proc."""

    def __init__(
        self,
        site: Site,
        log_path: Path,
        *,
        once: bool,
        poll_interval: float | None = None,
        worker_id: str = "bench",
        extra: tuple[str, ...] = (),
        wrap: tuple[str, ...] = (),
    ) -> None:
        self.site = site
        self.log_path = log_path
        cmd = [PY, str(ROOT / "worker.py"), "--store", site.url, "--handlers", "bench.passthrough"]
        cmd += ["--worker-id", worker_id]
        if once:
            cmd.append("--once")
        if poll_interval is not None:
            cmd += ["--poll-interval", str(poll_interval)]
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in finish()
        self.started = time.time()
        self.proc = subprocess.Popen([*wrap, *cmd, *extra], env=site.env, cwd=ROOT, stdout=self._log, stderr=self._log)
        self.watch = Watcher(self.proc.pid).__enter__() if not wrap else None

    def wait_ready(self, timeout: float = 60) -> None:
        """Until the worker logs that it polls (start-up done: probe, fork server)."""
        deadline = time.monotonic() + timeout
        while "polling" not in self.log_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("worker did not start:\n" + self.log_text())
            time.sleep(0.05)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def events(self) -> dict[str, TaskRun]:
        runs: dict[str, TaskRun] = {}
        for line in self.log_text().splitlines():
            m = _EVENT.match(line)
            if not m:
                continue
            at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            what, task_id = m.group(2), m.group(3)
            if what == "claimed":
                runs[task_id] = TaskRun(task_id, at)
            elif task_id in runs and what == "completed":
                runs[task_id].completed = at
        return runs

    def wait_completed(self, task_id: str, timeout: float = 600) -> TaskRun:
        deadline = time.monotonic() + timeout
        while True:
            run = self.events().get(task_id)
            if run is not None and run.completed is not None:
                return run
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"task {task_id} did not complete:\n" + self.log_text()[-3000:])
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def finish(self, timeout: float = 3600) -> WorkerRun:
        try:
            self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            if self.watch is not None:
                self.watch.stop()
            self._log.close()
        wall = time.time() - self.started
        runs = self.events()
        children: list[dict] = []
        worker_mb = server_mb = 0.0
        if self.watch is not None:
            offset = time.time() - time.monotonic()
            claims = sorted(runs.values(), key=lambda r: r.claimed)
            for child in self.watch.attempt_children():
                start, end = child.first_seen + offset, child.last_seen + offset
                children.append({"pid": child.pid, "hwm_mb": round(child.hwm_mb, 1), "seconds": round(end - start, 2)})
                # An attempt process starts just after its task's "claimed" line: the latest claim before it.
                owner = [r for r in claims if r.claimed - 0.05 <= start]
                if owner and owner[-1].completed is not None and start <= owner[-1].completed + 0.05:
                    owner[-1].child_hwm_mb = max(owner[-1].child_hwm_mb or 0.0, child.hwm_mb)
                    owner[-1].child_cpu_s = (owner[-1].child_cpu_s or 0.0) + child.cpu_s
            w, s = self.watch.worker(), self.watch.fork_server()
            worker_mb = w.hwm_mb if w else 0.0
            server_mb = s.hwm_mb if s else 0.0
        return WorkerRun(runs, worker_mb, server_mb, wall, self.log_text(), self.proc.returncode, children)


def run_once(site: Site, log_path: Path, **kwargs: Any) -> WorkerRun:
    """``worker.py --once`` until everything claimable is done."""
    return WorkerProcess(site, log_path, once=True, **kwargs).finish()
