"""The one harness for the processes a test starts: ``worker.py``, ``streamlit run``, the API server, the CLI.

- :func:`child_env`: the environment every child runs in (this checkout and tests/ on ``PYTHONPATH``,
  none of the caller's ``S3TASK_*`` / ``STREAMLIT_*`` settings, moto's credentials for an S3 endpoint);
- :class:`Procs`: the long-running processes of one test (the ``procs`` fixture in conftest.py), each
  logging to a file of its own; a wait that fails shows that output; all stopped at the end;
- :class:`Proc`: one of them: wait until it is ready (a condition with a deadline), stop it (SIGTERM,
  then SIGKILL after a deadline);
- :func:`run`, :func:`cli`: a command that ends by itself, with the same environment;
- :func:`timed_worker_once`: a worker's measured start-up here, which every deadline of a test that
  waits on a worker process adds (the ``startup`` fixture in conftest.py).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import requests
from conftest import free_port, wait_for
from support import queue_tiny_task

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
PYTHON = sys.executable
WORKER = str(ROOT / "worker.py")
#: moto's credentials; never real ones.
MOTO_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
#: How long a stopped process has to leave after SIGTERM (a worker releases its tasks, a server
#: closes its connections) before it is killed.
STOP_SECONDS = 30.0
#: How long an HTTP server (Streamlit, uvicorn) has to answer its first request: an interpreter and
#: Streamlit's or Starlette's imports, which take from two to thirty seconds on a busy 2-core machine.
SERVE_SECONDS = 60.0
#: How long a one-shot command (the CLI, ``worker.py --once``) may run before the test fails.
RUN_SECONDS = 120.0


def child_env(*, endpoint: str | None = None, path: Sequence[Path] = (TESTS, ROOT), **settings: str) -> dict[str, str]:
    """The environment of a child process: this one's without its ``S3TASK_*`` and ``STREAMLIT_*``
    settings (a test names the ones it runs with in ``settings``), with ``path`` first on
    ``PYTHONPATH`` (this checkout, not whichever one the virtualenv's editable install points at;
    tests/ for the test plug-ins) and output unbuffered, so a log read mid-test is up to date. With
    ``endpoint``, moto's credentials and that S3 endpoint."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("S3TASK_", "STREAMLIT_"))}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, path), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["PYTHONUNBUFFERED"] = "1"
    if endpoint is not None:
        env.update(MOTO_AWS, AWS_ENDPOINT_URL_S3=endpoint)
    env.update(settings)
    return env


def worker_args(store: str, *args: str, worker_id: str | None = None) -> list[str]:
    """``python worker.py --store STORE [--worker-id ID] ARGS``."""
    return [PYTHON, WORKER, "--store", store, *(["--worker-id", worker_id] if worker_id else []), *args]


def answers(url: str) -> bool:
    """The server at ``url`` is up: it answered, with anything but a server error."""
    try:
        return requests.get(url, timeout=2).status_code < 500
    except requests.RequestException:
        return False


class Exited(AssertionError):
    """The process ended while a test was waiting on it."""


class Proc:
    """One child process, its stdout and stderr in ``log``."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        log: Path,
        cwd: Path = ROOT,
        name: str = "",
        stdin: int | None = subprocess.DEVNULL,
    ) -> None:
        self.args = list(args)
        self.log = log
        self.name = name or Path(args[1]).name
        self.url = ""  # a server's base URL (see Procs.serve)
        self.worker_id = ""  # a worker's id (see Procs.worker)
        with log.open("wb") as out:
            self.popen = subprocess.Popen(
                self.args, cwd=cwd, env=dict(env), stdin=stdin, stdout=out, stderr=subprocess.STDOUT, text=True
            )

    def say(self, line: str) -> None:
        """A line on its stdin (started with ``stdin=subprocess.PIPE``)."""
        assert self.popen.stdin is not None
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float) -> int:
        """Its exit code, once it exits by itself within ``timeout`` seconds (else the test fails, showing its log)."""
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{self.name} still running after {timeout:.0f}s\n{self.tail()}") from None

    def send_signal(self, sig: int) -> None:
        self.popen.send_signal(sig)

    def terminate(self) -> None:
        self.popen.terminate()

    def kill(self) -> None:
        """SIGKILL, and reap it."""
        self.popen.kill()
        self.popen.wait(STOP_SECONDS)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self, chars: int = 4000) -> str:
        return f"--- {self.name} ({' '.join(self.args[1:4])} …), {self.log} (end) ---\n{self.output()[-chars:]}"

    def alive(self) -> None:
        """Fail the test, with its output, if it has exited."""
        if self.poll() is not None:
            raise Exited(f"{self.name} exited ({self.returncode})\n{self.tail()}")

    def wait_until(self, condition: Callable[[], object], timeout: float, what: str, interval: float = 0.05) -> Any:
        """``wait_for(condition)``, failing at once if the process exits first; a failure shows its output."""

        def check() -> object:
            value = condition()
            if not value:
                self.alive()
            return value

        try:
            return wait_for(check, timeout=timeout, interval=interval, what=what)
        except Exited:
            raise
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.tail()}") from None

    def wait_for_output(self, text: str, timeout: float) -> None:
        self.wait_until(lambda: text in self.output(), timeout, f"{self.name} to say {text!r}", interval=0.1)

    def worker_ready(self, timeout: float) -> None:
        """A ``worker.py`` (not ``--once``, started by :meth:`Procs.worker`) has proven its store and is
        polling it: it says so once, after its conditional-write probe."""
        worker_id = self.worker_id or f"{socket.gethostname()}-{self.pid}"
        self.wait_for_output(f"worker {worker_id} polling ", timeout)

    def serving(self, health: str, timeout: float = SERVE_SECONDS) -> None:
        self.wait_until(lambda: answers(health), timeout, f"{self.name} to answer {health}", interval=0.1)

    def __enter__(self) -> Proc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, timeout: float = STOP_SECONDS) -> int:
        """SIGTERM; SIGKILL if it has not left within ``timeout`` seconds. Returns its exit code."""
        if self.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        assert self.popen.returncode is not None
        return self.popen.returncode


class Procs:
    """The processes one test starts, each logging to ``{tmp}/{name}.log``; :meth:`close` stops them all."""

    def __init__(self, tmp: Path, env: Mapping[str, str] | None = None) -> None:
        self.tmp = tmp
        self.env = dict(env) if env is not None else child_env()
        self.all: list[Proc] = []

    def start(self, args: Sequence[str], *, name: str, env: Mapping[str, str] | None = None, **kw: Any) -> Proc:
        """``args`` with this harness's environment, ``env`` on top of it."""
        log = self.tmp / f"{name}.log"
        if log.exists():  # a second process of the same name keeps the first's output
            log = self.tmp / f"{name}-{len(self.all)}.log"
        proc = Proc(args, env={**self.env, **(env or {})}, log=log, name=name, **kw)
        self.all.append(proc)
        return proc

    def worker(
        self,
        store: str,
        *args: str,
        worker_id: str | None = None,
        name: str = "",
        env: Mapping[str, str] | None = None,
        **kw: Any,
    ) -> Proc:
        """``python worker.py --store STORE [--worker-id ID] ARGS``, logging to ``{name or ID}.log``
        (without an id, the worker names itself ``{host}-{pid}``)."""
        command = worker_args(store, *args, worker_id=worker_id)
        proc = self.start(command, name=name or worker_id or "worker", env=env, **kw)
        proc.worker_id = worker_id or ""
        return proc

    def serve(
        self, args: Sequence[str], *, url: str, health: str, name: str, timeout: float = SERVE_SECONDS, **kw: Any
    ) -> Proc:
        """A server at ``url``, once ``url + health`` answers (or the test fails, showing its output)."""
        proc = self.start(args, name=name, **kw)
        proc.url = url
        proc.serving(url + health, timeout)
        return proc

    def streamlit(self, script: str | Path = "app.py", *, name: str = "streamlit", port: int = 0, **kw: Any) -> Proc:
        """``streamlit run SCRIPT`` on 127.0.0.1 (on ``port``, or a free one), headless, once it is healthy."""
        port = port or free_port()
        args = [PYTHON, "-m", "streamlit", "run", str(script), "--server.port", str(port)]
        args += ["--server.address", "127.0.0.1", "--server.headless", "true"]
        args += ["--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
        return self.serve(args, url=f"http://127.0.0.1:{port}", health="/_stcore/health", name=name, **kw)

    def api(self, *, name: str = "api", health: str = "/api/openapi.json", **kw: Any) -> Proc:
        """The API server, ``python -m s3task.web serve``, on 127.0.0.1 and a free port, once it answers."""
        port = free_port()
        args = [PYTHON, "-m", "s3task.web", "serve", "--host", "127.0.0.1", "--port", str(port)]
        return self.serve(args, url=f"http://127.0.0.1:{port}", health=health, name=name, **kw)

    def close(self) -> None:
        """Stop every process still running: SIGTERM to all at once, then wait (SIGKILL after a deadline)."""
        for proc in self.all:
            if proc.poll() is None:
                proc.popen.send_signal(signal.SIGTERM)
        for proc in self.all:
            proc.stop()

    def __enter__(self) -> Procs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path = ROOT,
    timeout: float | None = RUN_SECONDS,
    input: str | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """A command that ends by itself, with ``env`` (default :func:`child_env`); its output as text.
    ``timeout=None`` for a measurement, which the suite's per-test timeout bounds."""
    done = subprocess.run(
        list(args), env=dict(child_env() if env is None else env), cwd=cwd, input=input,
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    if check:
        assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def cli(*args: str, module: str = "s3task", **kw: Any) -> subprocess.CompletedProcess[str]:
    """``python -m s3task ARGS`` (or another ``module``), as :func:`run`."""
    return run([PYTHON, "-m", module, *args], **kw)


def timed_worker_once(store_dir: Path, args: Sequence[str] = (), env: Mapping[str, str] | None = None) -> float:
    """Seconds one ``worker.py --once`` takes here to start, probe the store, load its fork server (pandas
    and pyarrow), run one tiny task and exit: machine time, which no setting gives. A measurement, not a
    wait for a condition: the process ends by itself (a hang is caught by the suite's per-test timeout)."""
    queue_tiny_task(store_dir)
    started = time.monotonic()
    run(worker_args(str(store_dir), *args, "--once"), env=env, timeout=None, check=True)
    return time.monotonic() - started


class S3Workers:
    """Real ``worker.py`` processes on one moto S3 bucket over HTTP (the ``s3_workers`` fixture), and
    this process's own service on it, straight to moto."""

    #: every worker's lease, and its poll interval: a dead worker's task is recovered within seconds
    lease = 4.0
    poll = 0.2

    def __init__(self, endpoint: str, bucket: str, procs: Procs, start: float) -> None:
        from s3task.layout import Layout
        from s3task.store.s3 import S3Store
        from s3task.tasks import TaskService

        self.store = S3Store(bucket, client=_client(endpoint))
        self.layout = Layout("batch-tasks")
        self.service = TaskService(self.store, self.layout)
        self.url = f"s3://{bucket}/batch-tasks"
        self.procs = procs
        self.tmp = procs.tmp
        self.env = procs.env
        #: a worker process's measured start-up on this machine (the ``startup`` fixture), added to every wait
        self.start = start

    def worker(self, *extra: str, env: Mapping[str, str] | None = None, name: str = "w") -> Proc:
        """A worker (id ``{name}-{n}``) with the test task types, this lease and poll interval."""
        args = ["--poll-interval", str(self.poll), "--lease-seconds", str(self.lease), "--handlers", "worker_handlers"]
        return self.procs.worker(self.url, *args, *extra, worker_id=f"{name}-{len(self.procs.all)}", env=env)

    def submit(self, name: str, body: bytes, task_type: str = "copy", params: dict | None = None) -> str:
        from s3task.tasks import Actor

        alice = Actor("alice")
        created = self.service.create(alice, name, task_type, params)
        self.service.upload_input(alice, created.record.task_id, body)
        self.service.submit(alice, created.record.task_id)
        return created.record.task_id

    def record(self, task_id: str) -> Any:
        from s3task.records import read_record

        return read_record(self.store, self.layout, task_id)[0]

    def done(self, task_id: str, status: str = "completed") -> Any:
        """The task's record once it is in ``status``, else None (a condition to wait on)."""
        record = self.record(task_id)
        return record if record.status == status else None

    def outputs(self, task_id: str) -> list[str]:
        return [k for k in self.store.list_keys(self.layout.task_prefix(task_id)) if "output-attempt-" in k]


def _client(endpoint: str) -> Any:
    from conftest import boto_client

    return boto_client(endpoint)
