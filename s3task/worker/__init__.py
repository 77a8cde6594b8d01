"""The worker: ``python worker.py`` on a box, or a thread inside the app."""

from __future__ import annotations

import atexit
import logging
import threading

from ..config import Settings
from .loop import Worker
from .presence import live_workers

__all__ = ["EmbeddedWorker", "Worker", "live_workers", "start_embedded", "stop_embedded"]

log = logging.getLogger("s3task.worker")

_embedded: EmbeddedWorker | None = None
_embedded_lock = threading.Lock()


class EmbeddedWorker:
    """A worker loop on a daemon thread. No signal handlers: the host process owns those."""

    def __init__(self, settings: Settings) -> None:
        self.worker = Worker(settings)
        self.thread = threading.Thread(target=self._run, name="s3task-embedded-worker", daemon=True)

    def _run(self) -> None:
        try:
            self.worker.run_forever()
        except Exception:  # keep the app alive; say why the worker stopped
            log.exception("embedded worker stopped")

    def start(self) -> EmbeddedWorker:
        self.thread.start()
        return self

    def stop(self, timeout: float = 30) -> None:
        """Release the task in hand back to the queue and stop."""
        self.worker.stop(timeout)
        self.thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()


def start_embedded(settings: Settings) -> EmbeddedWorker:
    """Start the process-wide embedded worker once; later calls return the same one."""
    global _embedded
    with _embedded_lock:
        if _embedded is None or not _embedded.alive:
            _embedded = EmbeddedWorker(settings).start()
            atexit.register(_embedded.stop)
        return _embedded


def stop_embedded(timeout: float = 30) -> None:
    """Stop the embedded worker, if one runs, handing its task back to the queue (the app's shutdown hook)."""
    with _embedded_lock:
        worker = _embedded
    if worker is not None and worker.alive:
        worker.stop(timeout)
