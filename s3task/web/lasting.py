"""Links meant to last (../shared/DESIGN.md, "Results for notebooks"): a result as CSV streamed through the API
on the caller's token, never a presigned URL that expires — what Excel's Power Query ("From Web", with an
``Authorization`` header), a notebook or a scheduled script keeps and refreshes:

- ``GET /api/tasks/{task_id}/result.csv``: one completed task's result;
- ``GET /api/recipes/{recipe}/latest.csv``: the newest completed result of a recipe (this month's file).

The bytes are the result's *exact* copy (s3task.exports): the values as the task wrote them, without the leading
``'`` the download puts before a formula-like cell, as a data tool reads values and runs no formula. Access is
the app's: the result of a task the caller may download (their own, or any for an operator).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.responses import StreamingResponse

if TYPE_CHECKING:
    from starlette.requests import Request

    from ..record import TaskRecord
    from ..tasks import Actor, TaskService
    from .copywait import CopyWaiters

#: Bytes read from the store at a time.
CHUNK = 1024 * 1024
#: Seconds a request waits for the exact copy to be made on its first request (then 503 with Retry-After).
PREPARE_WAIT_SECONDS = 20.0


class LastingLinks:
    """The routes above, for :class:`s3task.web.api.Api` (which has the service, the token check and the
    waiting for copies)."""

    service: TaskService
    copy_waiters: CopyWaiters

    def actor(self, request: Request) -> Actor:
        raise NotImplementedError

    async def result_csv(self, request: Request) -> StreamingResponse:
        actor = self.actor(request)
        record = await run_in_threadpool(self.service.get, actor, request.path_params["task_id"])
        return await self._stream(actor, record)

    async def latest_csv(self, request: Request) -> StreamingResponse:
        actor = self.actor(request)
        record = await run_in_threadpool(self.service.recipes.latest, actor, request.path_params["recipe"])
        return await self._stream(actor, record)

    async def _stream(self, actor: Actor, record: TaskRecord) -> StreamingResponse:
        task_id = record.task_id
        job = await run_in_threadpool(self.service.copy_job, actor, task_id, "exact")  # checks the access too
        if job is not None:
            await self.copy_waiters.wait(job, PREPARE_WAIT_SECONDS)
        name = self.service.output_filename(record, "exact")
        headers = {
            "Content-Disposition": f"inline; filename*=UTF-8''{quote(name)}",
            "Cache-Control": "no-store",
            "X-S3task-Task": task_id,  # which task's result this is (a recipe's latest changes month by month)
        }
        chunks = _chunks(self.service, actor, task_id)
        first = await run_in_threadpool(next, chunks, b"")  # opened here: a store error is an error answer
        return StreamingResponse(_then(first, chunks), media_type="text/csv; charset=utf-8", headers=headers)


def _chunks(service: TaskService, actor: Actor, task_id: str) -> Iterator[bytes]:
    with service.open_output(actor, task_id, "exact") as f:
        while chunk := f.read(CHUNK):
            yield chunk


async def _then(first: bytes, rest: Iterator[bytes]) -> AsyncIterator[Any]:
    if first:
        yield first
    async for chunk in iterate_in_threadpool(rest):
        yield chunk
