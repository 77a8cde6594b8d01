"""Prometheus metrics: what the workers did, what the store answered, how deep the queue was.

One set of metric objects per process, made once at import, in ``prometheus_client``'s
default registry: however many workers a process runs (tests make several) and however
often the app reruns its scripts, nothing is registered twice. Served as ``/metrics`` by
the app and the API server (:func:`route`), and by ``worker.py --metrics-port``
(:func:`serve`).

Labels are bounded: task types (registered ones; anything else is ``other``), store
operations and error classes, never task ids or keys. Counting happens once per attempt
or per store request, never per row.

Store requests are counted by a wrapper that :func:`enable` adds to every store the
process opens from then on (:func:`s3task.store.wrap_stores`). The tasks' own processes
(which read the input and write the output) are not counted: their requests die with them.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, generate_latest, start_http_server
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .errors import S3TaskError, UnknownTaskType

if TYPE_CHECKING:
    from starlette.routing import Route

    from .store.base import ObjectStore

log = logging.getLogger("s3task.metrics")

TASKS_CLAIMED = Counter("s3task_tasks_claimed", "Attempts this process's workers claimed.", ["task_type"])
TASKS_COMPLETED = Counter("s3task_tasks_completed", "Attempts that completed their task.", ["task_type"])
TASKS_FAILED = Counter(
    "s3task_tasks_failed",
    "Attempts that failed; final=true when the task failed for good (bad input or no attempts left).",
    ["task_type", "final"],
)
TASKS_RELEASED = Counter(
    "s3task_tasks_released", "Attempts handed back to the queue unfinished (the worker was stopping).", ["task_type"]
)
ATTEMPTS_LOST = Counter(
    "s3task_attempts_lost",
    "Attempts stopped without an outcome written by this worker: cancelled meanwhile, lease lost, or the store "
    "down until the lease ran out.",
    ["task_type"],
)
TASKS_CANCELLED = Counter("s3task_tasks_cancelled", "Tasks cancelled through this process.", ["task_type"])
LEASE_EXPIRIES = Counter(
    "s3task_lease_expiries",
    "Attempts of other (stopped or stuck) workers this worker ended because their lease had expired.",
    ["task_type"],
)
ATTEMPT_SECONDS = Histogram(
    "s3task_attempt_duration_seconds",
    "How long attempts ran, from claim to outcome.",
    ["task_type", "outcome"],
    buckets=(0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400),
)
ROWS_PER_SECOND = Histogram(
    "s3task_attempt_rows_per_second",
    "Input rows per second of completed attempts (rows over the whole attempt, start-up included).",
    ["task_type"],
    buckets=(10, 100, 1_000, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000),
)
STORE_REQUESTS = Counter(
    "s3task_store_requests", "Object store requests made by this process, by operation.", ["operation"]
)
STORE_ERRORS = Counter(
    "s3task_store_errors",
    "Object store requests that raised, by operation and error class (NotFound, PreconditionFailed, "
    "StoreUnavailable, …).",
    ["operation", "error"],
)
QUEUE_DEPTH = Gauge(
    "s3task_queue_depth", "Queued tasks seen at the last poll (the most recent poll of any worker in this process)."
)
WORKER_UP = Gauge("s3task_worker_up", "Worker loops running in this process (1 while worker.py polls).")

#: Store methods counted, and the operation each is counted as (S3's names: a streamed read is a get).
OPERATIONS = {
    "get": "get",
    "get_start": "get",
    "open_read": "get",
    "head": "head",
    "put": "put",
    "open_write": "put",
    "delete": "delete",
    "list_keys": "list",
    "list_prefixes": "list",
    "create_multipart": "multipart_create",
    "complete_multipart": "multipart_complete",
    "abort_multipart": "multipart_abort",
}
_STREAMED = ("open_read", "open_write")
OUTCOMES = ("completed", "failed", "released", "lost")


def task_type_label(task_type: str) -> str:
    """A registered task type's name; ``other`` for anything else (a record can say anything)."""
    from . import handlers

    try:
        handlers.get(task_type)
    except UnknownTaskType:
        return "other"
    return task_type


# --- what the worker calls ------------------------------------------------------------------


def worker_started() -> None:
    """A worker loop starts: it counts as up, and every registered type shows zeros until it has counts."""
    from . import handlers

    for t in handlers.all_types():
        for counter in (TASKS_CLAIMED, TASKS_COMPLETED, TASKS_RELEASED, ATTEMPTS_LOST, LEASE_EXPIRIES):
            counter.labels(t.name)
        TASKS_FAILED.labels(t.name, "true")
        TASKS_FAILED.labels(t.name, "false")
    WORKER_UP.inc()


def worker_stopped() -> None:
    WORKER_UP.dec()


def polled(queued: int) -> None:
    QUEUE_DEPTH.set(queued)


def claimed(task_type: str) -> None:
    TASKS_CLAIMED.labels(task_type_label(task_type)).inc()


def attempt_ended(task_type: str, outcome: str, seconds: float, rows: int, *, final: bool = False) -> None:
    """One attempt's end: its outcome counter, its duration, and (completed) its rows per second."""
    label = task_type_label(task_type)
    if outcome not in OUTCOMES:
        outcome = "lost"
    ATTEMPT_SECONDS.labels(label, outcome).observe(seconds)
    if outcome == "completed":
        TASKS_COMPLETED.labels(label).inc()
        if seconds > 0:
            ROWS_PER_SECOND.labels(label).observe(rows / seconds)
    elif outcome == "failed":
        TASKS_FAILED.labels(label, "true" if final else "false").inc()
    elif outcome == "released":
        TASKS_RELEASED.labels(label).inc()
    else:
        ATTEMPTS_LOST.labels(label).inc()


def lease_expired(task_type: str) -> None:
    LEASE_EXPIRIES.labels(task_type_label(task_type)).inc()


def cancelled(task_type: str) -> None:
    TASKS_CANCELLED.labels(task_type_label(task_type)).inc()


# --- store requests ---------------------------------------------------------------------------

_enabled = False
_enable_lock = threading.Lock()
#: Depth of counted store calls on this thread: a backend calling its own methods (the local
#: store's put is an open_write) is one request, not two.
_depth = threading.local()


def enable() -> None:
    """Count the requests of every store this process opens from now on (once per process)."""
    global _enabled
    with _enable_lock:
        if _enabled:
            return
        from .store import wrap_stores

        wrap_stores(count_requests)
        _enabled = True


def count_requests(store: ObjectStore) -> ObjectStore:
    """The same store object, its request methods counted.

    The methods are replaced on the instance, not hidden behind a proxy: the store keeps its
    class, so ``isinstance(store, LocalStore)`` and the capability checks still hold.
    """
    if getattr(store, "_s3task_counted", False):
        return store
    try:
        for name, operation in OPERATIONS.items():
            if getattr(type(store), name, None) is None:
                continue  # a capability this backend does not have (multipart on the local store)
            method = getattr(store, name)
            wrap = _counted_stream if name in _STREAMED else _counted
            setattr(store, name, wrap(method, operation))
        store._s3task_counted = True  # type: ignore[attr-defined]
    except AttributeError:  # a store whose attributes are fixed (__slots__): served uncounted
        log.debug("store requests of %s are not counted", type(store).__name__, exc_info=True)
    return store


def error_kind(error: BaseException) -> str:
    if isinstance(error, S3TaskError):
        return type(error).__name__
    if isinstance(error, OSError):
        return "OSError"
    return "other"


@contextlib.contextmanager
def _outermost(operation: str) -> Iterator[bool]:
    """Yields whether this call is the outermost store call on this thread (and so is counted)."""
    depth = getattr(_depth, "value", 0)
    _depth.value = depth + 1
    try:
        yield depth == 0
    except Exception as e:
        if depth == 0:
            STORE_ERRORS.labels(operation, error_kind(e)).inc()
        raise
    finally:
        _depth.value = depth


def _counted(method: Callable[..., Any], operation: str) -> Callable[..., Any]:
    requests = STORE_REQUESTS.labels(operation)

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        if getattr(_depth, "value", 0):
            return method(*args, **kwargs)  # inside another counted call: part of that request
        _depth.value = 1
        try:
            return method(*args, **kwargs)
        except Exception as e:
            STORE_ERRORS.labels(operation, error_kind(e)).inc()
            raise
        finally:
            _depth.value = 0
            requests.inc()

    return call


class _CountedStream:
    """``open_read`` / ``open_write``: opening is the request; an error on closing (the upload) counts too.

    The caller's own block runs outside the count (its store calls are requests of their own);
    when it raises, the backend discards the write, and that is not a store error.
    """

    def __init__(self, opened: Any, operation: str) -> None:
        self._opened, self._operation = opened, operation

    def __enter__(self) -> Any:
        with _outermost(self._operation) as outermost:
            if outermost:
                STORE_REQUESTS.labels(self._operation).inc()
            return self._opened.__enter__()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        if kind is not None:
            return bool(self._opened.__exit__(kind, error, tb))
        with _outermost(self._operation):
            return bool(self._opened.__exit__(None, None, None))


def _counted_stream(method: Callable[..., Any], operation: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        if getattr(_depth, "value", 0):
            return method(*args, **kwargs)  # inside another counted call: part of that request
        return _CountedStream(method(*args, **kwargs), operation)

    return call


# --- serving -----------------------------------------------------------------------------------


def exposition() -> bytes:
    """The process's metrics in Prometheus' text format."""
    return generate_latest(REGISTRY)


def route() -> Route:
    """``GET /metrics`` for a Starlette app (the app's server, the API server). No token: counts only."""
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def metrics(request: Request) -> Response:
        return Response(await run_in_threadpool(exposition), media_type=CONTENT_TYPE_LATEST)

    return Route("/metrics", metrics, methods=["GET"])


def serve(port: int, host: str = "127.0.0.1") -> Callable[[], None]:
    """Serve ``/metrics`` on ``host:port`` from a background thread; returns a function that stops it.

    Raises ``OSError`` when the address cannot be bound (in use, not this machine's).
    """
    server, thread = start_http_server(port, addr=host, registry=REGISTRY)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(5)

    return stop
