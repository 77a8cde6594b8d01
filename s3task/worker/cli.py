"""``python worker.py``: a standalone worker with signal handling."""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .. import metrics, notify
from ..config import Settings, SettingsError, parse
from ..errors import S3TaskError
from ..handlers import load_module
from ..safetext import visible
from .loop import Worker

log = logging.getLogger("s3task.worker")


def build_parser() -> argparse.ArgumentParser:
    # Named as it was run: "python worker.py" from a checkout, else argparse's default (s3task-worker).
    prog = "python worker.py" if os.path.basename(sys.argv[0]) == "worker.py" else None
    p = argparse.ArgumentParser(prog=prog, description="Process s3task tasks from an object store.")
    p.add_argument(
        "--store",
        help="s3://bucket/prefix, az://container/prefix, gs://bucket/prefix or a local directory (S3TASK_STORE)",
    )
    p.add_argument("--once", action="store_true", help="process until nothing is claimable, then exit")
    p.add_argument("--concurrency", type=int, help="tasks processed at once (S3TASK_CONCURRENCY, default 1)")
    p.add_argument("--poll-interval", type=float, help="seconds between polls (S3TASK_POLL_INTERVAL, default 3)")
    p.add_argument("--lease-seconds", type=float, help="lease length, renewed every third (S3TASK_LEASE_SECONDS)")
    p.add_argument("--max-attempts", type=int, help="failed attempts before a task fails for good (default 3)")
    p.add_argument("--stall-timeout", type=float, help="kill a task whose progress stops this long (seconds)")
    p.add_argument("--worker-id", help="name in records and logs (default host-pid)")
    p.add_argument("--handlers", action="append", help="module that registers more task types (repeatable)")
    p.add_argument("--log-format", choices=["text", "json"], help="log lines as text or JSON (S3TASK_LOG_FORMAT)")
    # Taken as text and checked with the settings, so "abc" is one line naming the flag, not a usage dump.
    p.add_argument("--metrics-port", help="serve Prometheus metrics on this port, at /metrics (S3TASK_METRICS_PORT)")
    p.add_argument("--metrics-host", help="address the metrics server binds (S3TASK_METRICS_HOST, default 127.0.0.1)")
    return p


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "event": getattr(record, "event", None),
            "task_id": getattr(record, "task_id", None),
            "message": record.getMessage(),
        }
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps({k: v for k, v in data.items() if v is not None})


class VisibleFormatter(logging.Formatter):
    """Text log lines with a message's control and invisible characters as escapes (safetext): a
    message can quote a task name or an error a user's input caused, and a log is read in a
    terminal. The traceback after it keeps its line breaks."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        shown = copy.copy(record)
        shown.message = visible(record.message)
        return super().formatMessage(shown)


def setup_logging(fmt: str, level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(VisibleFormatter("%(asctime)s %(levelname)s %(message)s"))
    root = logging.getLogger("s3task")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    overrides = {
        "store": args.store,
        "concurrency": args.concurrency,
        "poll_interval": args.poll_interval,
        "lease_seconds": args.lease_seconds,
        "max_attempts": args.max_attempts,
        "stall_timeout": args.stall_timeout,
        "worker_id": args.worker_id,
        "handlers": args.handlers,
        "log_format": args.log_format,
        "metrics_port": None if args.metrics_port is None else parse("int", args.metrics_port.strip()),
        "metrics_host": args.metrics_host,
    }
    try:
        settings = Settings.load(overrides)
        notifier = notify.from_settings(settings)  # a channel that does not fit is a settings error too
    except SettingsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    setup_logging(settings.log_format, settings.log_level)
    stop_metrics: Callable[[], None] | None = None
    if settings.metrics_port:
        try:  # before the store is opened: its requests are counted from the first
            stop_metrics = _serve_metrics(settings)
        except OSError as e:
            print(f"error: cannot serve metrics on {_address(settings)}: {e}", file=sys.stderr)
            return 1
    try:
        return _run(args, settings, notifier)
    finally:
        if stop_metrics is not None:
            stop_metrics()


def _address(settings: Settings) -> str:
    host = f"[{settings.metrics_host}]" if ":" in settings.metrics_host else settings.metrics_host
    return f"{host}:{settings.metrics_port}"


def _serve_metrics(settings: Settings) -> Callable[[], None]:
    metrics.enable()
    stop = metrics.serve(settings.metrics_port, settings.metrics_host)
    log.info("metrics at http://%s/metrics", _address(settings), extra={"event": "metrics"})
    return stop


def _run(args: argparse.Namespace, settings: Settings, notifier: notify.Notifier | None) -> int:
    try:
        for module in settings.handlers:
            load_module(module)
        worker = Worker(settings, notifier=notifier)
        worker.prove_store()
    except (S3TaskError, ValueError) as e:
        print(f"error: refusing to start: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    _install_signals(worker)
    try:
        worker.run_once() if args.once else worker.run_forever()
    except S3TaskError as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    log.info("worker %s stopped", settings.worker_id, extra={"event": "stopped"})
    return 0


def _install_signals(worker: Worker) -> None:
    """SIGTERM or SIGINT: release the tasks in hand and stop; a second one: leave at once.

    The handler runs in the main thread between two of its bytecodes, wherever it is, and may take no lock:
    one the main thread holds at that moment (inside ``Event.wait`` or ``clear``, a logging call) would never
    be released, and the worker would hang on its own stop (a clean-clone CI run saw a worker ignore SIGTERM
    so). It only marks and writes a byte to a pipe; a thread of its own reads it and does the stopping."""
    read_end, write_end = os.pipe()
    stopping: list[int] = []

    def handle(signum: int, _frame: Any) -> None:
        if stopping:
            os._exit(128 + signum)  # second signal: leave at once
        stopping.append(signum)  # mark first: a second signal can arrive during the write below
        os.write(write_end, bytes([signum]))

    def stop_on_signal() -> None:
        signum = os.read(read_end, 1)[0]
        worker.stop_event.set()
        worker._wake.set()
        log.info("signal %d: releasing tasks and stopping (again to exit at once)", signum, extra={"event": "stopping"})

    threading.Thread(target=stop_on_signal, name="s3task-signals", daemon=True).start()
    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
