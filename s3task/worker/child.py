"""The child process of one attempt: stream the input through the handler into the output.

It runs in its own process so the worker can kill it (hung, crashed, using
too much memory) without going down itself. It reports progress and its
result to the parent through a pipe and never writes the task record: the
parent is the one writer of ``status.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import task_steps
from ..errors import InvalidInput, PreconditionFailed, S3TaskError
from ..input_format import FormatRequest, InputFormat, UnreadableFormat
from ..layout import CSV_TYPE, Layout
from ..progress import Done, Failed, Moved, Progress
from ..store.base import PutMode

PROGRESS_EVERY = 0.5
ROWS_TYPE = "application/vnd.apache.arrow.stream"
WRITE_ID_META = "s3task-write-id"


@dataclass(frozen=True)
class Job:
    store_url: str
    handler_modules: tuple[str, ...]
    task_id: str
    task_type: str
    params: dict[str, Any]
    input_key: str
    input_etag: str
    output_key: str
    write_id: str
    #: The record's ``input_format`` (a CSV's delimiter and encoding, a workbook's sheet and header row),
    #: settled when the file was submitted: the input is read exactly so.
    input_format: InputFormat | FormatRequest | UnreadableFormat = field(default_factory=InputFormat)
    #: The input's size as pinned at submit: a workbook is copied to a temporary file of this size.
    input_size: int = 0
    #: The attempt's memory cap in MB (0: none): a step list's whole-file steps stay well within it.
    memory_mb: int = 0
    #: The record's ``steps_etag``: the step list is read from beside the record at this ETag (s3task.task_steps)
    steps_etag: str | None = None


def main(job: Job, conn: Any) -> None:
    """Entry point of the child process. Sends :class:`Moved` messages, then :class:`Done` or :class:`Failed`."""
    _exit_with_worker(conn)
    latest: list[Progress] = []  # the engine's last counts, sent or not
    try:
        conn.send(Done(_run(job, conn, latest)))
    except InvalidInput as e:  # with the rows read before the bad one: "Rows read" says how far it got
        conn.send(Failed(str(e), permanent=True, progress=latest[-1] if latest else None))
    except PreconditionFailed:
        conn.send(Failed("the input file changed after the task was submitted; submit it as a new task", True))
    except S3TaskError as e:
        conn.send(Failed(str(e), permanent=False))
    except MemoryError:
        conn.send(Failed("the task ran out of memory", permanent=False))
    except Exception as e:  # a handler bug: transient, retried, reported
        conn.send(Failed(f"{type(e).__name__}: {e}", permanent=False))
    finally:
        conn.close()


def _exit_with_worker(conn: Any) -> None:
    """Do not outlive the worker: a SIGKILLed worker cannot kill its child, so the child watches.

    The child holds the only write end of its pipe to the worker; when the
    worker is gone, nobody reads it any more and ``poll`` reports POLLERR.
    (Watching the parent process would not do: that is the fork server,
    which stays up while any child it forked lives.) Without this, a hung
    handler of a killed worker ran on for ever.
    """
    fd = conn.fileno()

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, select.POLLERR | select.POLLHUP)
        while True:
            for _fd, events in poller.poll():
                if events & select.POLLNVAL:  # our own end was closed: the attempt is over
                    return
                if events & (select.POLLERR | select.POLLHUP):
                    os._exit(1)

    threading.Thread(target=watch, name="s3task-exit-with-worker", daemon=True).start()


def _run(job: Job, conn: Any, latest: list[Progress]) -> Progress:
    from .. import handlers
    from ..store import open_store
    from ..store.base import PutMode

    for module in job.handler_modules:
        handlers.load_module(module)
    store, layout = open_store(job.store_url)
    # The list the task was made with, or none: one gone or changed since fails the task for good, in words.
    job = dataclasses.replace(job, params=task_steps.with_steps(store, layout, job.task_id, job.params, job.steps_etag))
    last = 0.0

    def on_progress(counts: Progress) -> None:
        nonlocal last
        latest[:] = [counts]
        now = time.monotonic()
        if now - last >= PROGRESS_EVERY:
            last = now
            conn.send(Moved(counts))

    metadata = {WRITE_ID_META: job.write_id}
    counts = None
    try:
        with (
            store.open_read(job.input_key, if_match=job.input_etag) as source,
            store.open_write(job.output_key, PutMode.CREATE, content_type=CSV_TYPE, metadata=metadata) as sink,
        ):
            counts = _process(job, source, sink, on_progress, (store, layout))
    except S3TaskError:
        # Completing the output failed after the handler finished. It may have
        # landed anyway (a lost response, or a resend refused because our first
        # send succeeded): our write id in its metadata tells.
        if counts is None or not _is_ours(store, job):
            raise
    return counts


def _process(job: Job, source: Any, sink: Any, on_progress: Any, where: tuple[Any, Any]) -> Progress:
    """The input read as its format says: a CSV as it streams, a workbook from a temporary copy (a zip is
    read from its end), which is gone when this returns or the process is killed (see csvio.spool)."""
    from .. import processing
    from ..csvio import spooled

    given = job.input_format
    read_as = given if isinstance(given, InputFormat) else given.settled()  # a format never settled: refused
    with _steps_context(job, *where) as context, tempfile.TemporaryFile(prefix="s3task-rows-") as rows:
        options = {"input_format": read_as, "context": context, "rows": rows}
        if not read_as.is_workbook:
            counts = processing.run(job.task_type, job.params, source, sink, on_progress, **options)
        else:
            with spooled(source, job.input_size) as copy:
                counts = processing.run(job.task_type, job.params, copy, sink, on_progress, **options)
        if rows.tell():  # before the output is complete: an output never lacks its rows (s3task.layout.ROWS)
            rows.seek(0)
            key = Layout.rows_key_of(job.output_key)
            with where[0].open_write(key, PutMode.OVERWRITE, content_type=ROWS_TYPE) as kept:
                shutil.copyfileobj(rows, kept, 1 << 20)
        return counts


@contextlib.contextmanager
def _steps_context(job: Job, store: Any, layout: Any) -> Iterator[Any]:
    """What a step list's whole-file steps need: a scratch folder (gone afterwards), where the rows wait and
    DuckDB reads the key columns and spills beyond its share; the memory the attempt allows DuckDB
    (:func:`s3task.steps.wholefile.memory_for`, of which the steps take at most what
    :func:`~s3task.steps.wholefile.steps_memory` says); and the reference tables."""
    from .. import handlers
    from ..handlers.steps import Steps

    kind = handlers.get(job.task_type)
    if kind.reads_itself:
        with _compare_context(job, store, layout) as context:
            yield context
        return
    if kind is not Steps:
        yield None
        return
    from ..steps.references import reference_rows
    from ..steps.wholefile import Context, memory_for

    with tempfile.TemporaryDirectory(prefix="s3task-steps-") as scratch:
        memory = memory_for(job.memory_mb)
        yield Context(memory_mb=memory, scratch=scratch, open_reference=lambda t: reference_rows(store, layout, t))


@contextlib.contextmanager
def _compare_context(job: Job, store: Any, layout: Any) -> Iterator[Any]:
    """What a comparison needs: DuckDB's memory and scratch folder as a step list's (above), both results
    read straight from the store (pinned), and where its summary goes: beside the output, before it is complete."""
    import json

    from ..compare import compare
    from ..compare.stored import result_tables
    from ..handlers.compare import CompareContext
    from ..steps.wholefile import memory_for

    def keep(summary: dict[str, Any]) -> None:
        body = json.dumps(summary, ensure_ascii=False).encode()
        store.put(Layout.summary_key_of(job.output_key), body, PutMode.OVERWRITE, content_type="application/json")

    with tempfile.TemporaryDirectory(prefix="s3task-compare-") as scratch:
        yield CompareContext(
            memory_mb=memory_for(job.memory_mb),
            scratch=scratch,
            open_result=lambda pin, moved, label: result_tables(store, layout, pin, moved, label),
            keep_summary=keep,
            engine=compare,
        )


def _is_ours(store: Any, job: Job) -> bool:
    try:
        return bool(store.head(job.output_key).metadata.get(WRITE_ID_META) == job.write_id)
    except S3TaskError:
        return False
