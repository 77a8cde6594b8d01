"""The processes attempts run in: a fork server loaded once per worker process, and the parent's
handle on each attempt's child (its pipe of progress messages, its liveness, its memory).

forkserver: children fork from a small server that has pandas and pyarrow already imported and
warmed up (s3task.worker.preload), so an attempt starts in milliseconds without forking this
(threaded) process.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading

from ..progress import Done, Failed, Message, Moved, Progress
from . import child

log = logging.getLogger("s3task.worker")

_MP = multiprocessing.get_context("forkserver")
_MP.set_forkserver_preload(["s3task.worker.preload"])

#: Set once the fork server has loaded (or failed to start): see :func:`start_fork_server`.
_server_ready = threading.Event()
_server_lock = threading.Lock()
_server_thread: threading.Thread | None = None


def _noop() -> None:
    pass


def start_fork_server() -> None:
    """Start the fork server in the background, once per process, and return at once.

    The server imports pandas and pyarrow and runs the warm-up (:mod:`s3task.worker.preload`) before
    it forks anything, about a second here: a thread starts one empty process through it and then
    sets :func:`fork_server_ready`. Meanwhile the worker polls and claims; an attempt waits for the
    server with its lease renewed (:meth:`s3task.worker.attempt.Attempt._wait_for_fork_server`).
    """
    global _server_thread
    with _server_lock:
        if _server_thread is None:
            _server_thread = threading.Thread(target=_warm_up, name="s3task-fork-server", daemon=True)
            _server_thread.start()


def _warm_up() -> None:
    try:
        proc = _MP.Process(target=_noop, name="s3task-warm-up")
        proc.start()
        proc.join(120)
    except (OSError, EOFError) as e:  # the fork server went away (the host is shutting down): attempts say so
        log.warning("could not warm up the task processes' fork server: %r", e)
    finally:
        _server_ready.set()


def fork_server_ready(timeout: float | None = None) -> bool:
    """Whether the fork server has loaded, waiting up to ``timeout`` seconds (starting it if need be)."""
    start_fork_server()
    return _server_ready.wait(timeout)


def wait_for_fork_server(timeout: float) -> None:
    """Wait (up to ``timeout`` seconds) for a fork server being started to finish, so none outlives its worker."""
    if _server_thread is not None:
        _server_thread.join(timeout)


class TaskProcess:
    """One attempt's child process (:func:`s3task.worker.child.main`), seen from the worker."""

    def __init__(self, job: child.Job) -> None:
        self.conn, child_conn = _MP.Pipe(duplex=False)
        self.proc = _MP.Process(target=child.main, args=(job, child_conn), name=f"s3task-{job.task_id}", daemon=True)
        self.proc.start()
        child_conn.close()

    def receive(self, wait: float) -> tuple[Progress | None, Done | Failed | None]:
        """Drain the progress messages that came within ``wait`` seconds of each other: the latest
        counts (None: none came), and the final message if one came."""
        progress: Progress | None = None
        try:
            while self.conn.poll(wait):
                msg: Message = self.conn.recv()
                if isinstance(msg, Moved | Done):
                    progress = msg.progress
                if not isinstance(msg, Moved):
                    return progress, msg
        except (EOFError, OSError):
            pass
        return progress, None

    def alive(self) -> bool:
        return bool(self.proc.is_alive())

    def crash_message(self) -> str:
        self.proc.join(1)
        return f"the task's process stopped unexpectedly (exit code {self.proc.exitcode})"

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)

    def rss_mb(self) -> float:
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except (OSError, ValueError):
            pass
        return 0.0

    def close(self) -> None:
        self.conn.close()
