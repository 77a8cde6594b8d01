"""The worker: ``python worker.py`` on a box, or a thread inside the app."""

from __future__ import annotations

import atexit
import logging
import threading

from ..config import Settings
from ..errors import S3TaskError, UnsafeStore
from ..notify import Notifier
from .loop import Worker
from .presence import live_workers

__all__ = [
    "EmbeddedWorker",
    "Worker",
    "ensure_embedded",
    "live_workers",
    "start_embedded",
    "stop_embedded",
    "wake_embedded",
]

log = logging.getLogger("s3task.worker")

_embedded: EmbeddedWorker | None = None
_embedded_lock = threading.Lock()
_problem: str | None = None


class EmbeddedWorker:
    """A worker loop on a daemon thread. No signal handlers: the host process owns those."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
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
        """Release the task in hand back to the queue and stop (once: the exit hook after a stop does nothing)."""
        if self.worker.stop_event.is_set() and not self.thread.is_alive():
            return
        self.worker.stop(timeout)
        self.thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self.thread.is_alive()


def start_embedded(settings: Settings, notifier: Notifier | None = None) -> EmbeddedWorker:
    """Start the process-wide embedded worker once; later calls return the same one.

    ``notifier``: the app's own (shared with its TaskService), else one made from ``settings``.

    The store is probed first (:meth:`Worker.prove_store`): on a store that
    ignores conditional writes this raises :class:`~s3task.errors.UnsafeStore`
    and no worker thread starts, so nothing is ever claimed from this process.
    """
    global _embedded
    with _embedded_lock:
        if _embedded is None or not _embedded.alive:
            worker = Worker(settings, notifier=notifier)
            worker.prove_store()
            _embedded = EmbeddedWorker(worker).start()
            atexit.register(_embedded.stop)
        return _embedded


def ensure_embedded(settings: Settings, notifier: Notifier | None = None) -> str | None:
    """Start (or revive) the embedded worker; return why it cannot run, or None when it runs.

    Called at server start and again by the pages every minute, so a store that
    is fixed (or was only unreachable) is picked up without a restart. The
    reason is logged once per change, not once per call.
    """
    global _problem
    try:
        start_embedded(settings, notifier)
        problem = None
    except (S3TaskError, ValueError, OSError) as e:
        problem = _explain(e, settings)
    with _embedded_lock:
        changed, _problem = problem != _problem, problem
    if changed and problem:
        log.error("the embedded worker is not running: %s", problem, extra={"event": "refused"})
    elif changed:
        log.info("the embedded worker is running", extra={"event": "started"})
    return problem


def _explain(error: Exception, settings: Settings) -> str:
    reason = " ".join(str(error).split())
    if isinstance(error, UnsafeStore):
        return (
            f"{settings.store} failed the safety check: {reason} Tasks will not be processed on this store; "
            "use one that enforces If-Match/If-None-Match (AWS S3, MinIO, a local directory)."
        )
    return f"it could not start ({reason}); it tries again every minute."


def stop_embedded(timeout: float = 30) -> None:
    """Stop the embedded worker, if one runs, handing its task back to the queue (the app's shutdown hook)."""
    with _embedded_lock:
        worker = _embedded
    if worker is not None and worker.alive:
        worker.stop(timeout)


def wake_embedded(task_id: str = "") -> None:
    """Have this process's embedded worker poll now, if one runs (else nothing): the app's TaskService
    calls it after a submit or retry (``on_queued``), so a task is picked up at once, not at the next poll."""
    worker = _embedded
    if worker is not None and worker.alive:
        worker.worker.wake()
