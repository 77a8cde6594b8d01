"""A file sent by a browser straight to the store, as the app runs it from beginning to end.

The page only draws: the service begins the upload (the task, and where each byte goes), the browser
sends the bytes, and the page reports how that ended; the service then finishes it (joins the parts,
checks the file, queues the task), keeps it to be continued, or gives it up (the parts and the task).

- **Begin** (:meth:`BrowserUploads.begin`): the task is made with the file's format and fingerprint, and
  the plan says where the bytes go: one PUT to the task's upload URL, or, for a large file on a store
  with parts, presigned part URLs. With the file's fingerprint the parts are noted on the task before the
  first goes (:mod:`.resumable`), so an upload that stops can be continued; a store that gives no upload
  link now leaves no task behind and says so (:class:`NoUploadLink`: the page sends the file through the
  app instead).
- **Continue** (:meth:`BrowserUploads.resume`): the same file again (a different one is refused in words),
  with part URLs only for the parts the store does not hold.
- **Finish** (:meth:`BrowserUploads.finish`): the browser's parts with those held, joined and checked
  (``Inputs.finish_upload``: refused, the upload is dropped and the task cancelled; the store failing at
  the join of a noted upload keeps both, ``UploadInterrupted``).
- **Stopped** (:meth:`BrowserUploads.stopped`): a noted upload that broke off midway is kept, to be
  continued from the task's page; any other is given up.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import S3TaskError
from ..fingerprint import Fingerprint
from ..input_format import AskedFormat
from ..record import RecipeRef, TaskRecord
from .access import Actor
from .inputs import Inputs
from .resumable import PARTS_ABOVE, Resumable, part_size_for

#: Part URLs must outlive the whole upload (S3 checks expiry when each part starts): the usual lifetime
#: plus the time the file takes at this slow a rate, at most SigV4's 7 days.
SLOWEST_BYTES_PER_SECOND = 1 * 2**20
MAX_URL_SECONDS = 7 * 24 * 3600


class NoUploadLink(S3TaskError):
    """The store gives no upload link now (Azure refusing a user delegation key): nothing was made; send the
    file through the app."""


@dataclass(frozen=True)
class UploadPlan:
    """Where a browser sends one file: a single PUT to ``url`` with ``headers``, or parts of ``part_size`` to
    ``parts`` (a URL each; None for a part the store holds, listed in ``held`` by number with its ETag)."""

    task_id: str
    size: int
    url: str | None = None
    headers: Mapping[str, str] | None = None
    upload_id: str | None = None  # a multipart upload (S3), or blocks (Azure)
    part_size: int = 0
    parts: tuple[str | None, ...] | None = None
    held: Mapping[int, str] | None = None
    #: Whether the browser must report each part's ETag (S3; Azure's blocks answer with none).
    part_etags: bool = True

    @property
    def continuable(self) -> bool:
        """An upload in parts noted on its task (the file's fingerprint known): one that stops can go on later."""
        return self.held is not None

    def joined_parts(self, sent: Iterable[tuple[Any, Any]]) -> list[tuple[int, str]]:
        """Every part of the file: those the store held when the upload began, and those the browser sent
        (``(number, ETag)`` pairs as it reports them; "" for Azure's blocks, which have none)."""
        reported = {int(n): str(etag or "") for n, etag in sent}
        return sorted({**(self.held or {}), **reported}.items())


def part_sizes(size: int, part_size: int) -> dict[int, int]:
    """Each part's size by number, in a file of ``size`` bytes cut in parts of ``part_size`` (the last shorter)."""
    return {n: min(part_size, size - (n - 1) * part_size) for n in range(1, math.ceil(size / part_size) + 1)}


def part_url_seconds(size: int, usual: int) -> int:
    return min(MAX_URL_SECONDS, usual + math.ceil(size / SLOWEST_BYTES_PER_SECOND))


class BrowserUploads:
    """Begin, continue, finish or give up a browser's upload (see the module)."""

    def __init__(self, inputs: Inputs, resumable: Resumable) -> None:
        self.inputs, self.resumable = inputs, resumable

    def begin(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None,
        input_format: AskedFormat | None,
        size: int,
        file: Fingerprint | None = None,
        *,
        recipe: RecipeRef | None = None,
    ) -> UploadPlan:
        """A new task for a file of ``size`` bytes, and where the browser sends it."""
        fingerprint = file.to_dict() if file else None
        created = self.inputs.create(actor, name, task_type, payload, input_format, fingerprint, size, recipe=recipe)
        task_id = created.record.task_id
        try:
            if created.upload_url is None:
                raise NoUploadLink("the task store gives no upload links now")
            return self._plan(actor, task_id, created.upload_url, created.upload_headers, size, file)
        except S3TaskError:  # no half-made task in the list
            if not self.inputs.transitions.discard(created.record):  # nobody saw it: no trace at all
                self.inputs.abandon_upload(actor, task_id)
            raise

    def resume(self, actor: Actor, record: TaskRecord, file: Fingerprint) -> UploadPlan:
        """Where the browser sends the rest of the file of the task ``record`` waits for (the same file)."""
        self.resumable.require_same(record, file)
        url, headers = self.link(record, file.size)
        if url is None:
            raise NoUploadLink("the task store gives no upload links now")
        return self._plan(actor, record.task_id, url, headers, file.size, file)

    def link(self, record: TaskRecord, size: int | None = None) -> tuple[str | None, Mapping[str, str]]:
        """The task's upload URL (for a file of ``size`` bytes, if known) and its headers; None where the store
        has none (or gives none now)."""
        try:
            created = self.inputs.created(record, size)
        except S3TaskError:  # the store did not answer for one
            return None, {}
        return created.upload_url, created.upload_headers

    def finish(self, actor: Actor, plan: UploadPlan, sent: Iterable[tuple[Any, Any]] = ()) -> TaskRecord:
        """The browser has sent the file: join the parts, check it, queue the task (see the module)."""
        parts = plan.joined_parts(sent) if plan.upload_id else []
        return self.inputs.finish_upload(actor, plan.task_id, size=plan.size, upload_id=plan.upload_id, parts=parts)

    def stopped(self, actor: Actor, plan: UploadPlan, *, interrupted: bool) -> bool:
        """The browser's upload ended before the file was whole. Kept (True) when it broke off midway and
        can be continued; else the parts and the task are given up (False)."""
        if interrupted and plan.continuable:
            return True
        self.give_up(actor, plan)
        return False

    def give_up(self, actor: Actor, plan: UploadPlan) -> None:
        """Drop an upload that will not finish: its parts, and the task made for it."""
        self.inputs.abandon_upload(actor, plan.task_id, plan.upload_id)

    def _plan(
        self, actor: Actor, task_id: str, url: str, headers: Mapping[str, str], size: int, file: Fingerprint | None
    ) -> UploadPlan:
        inputs = self.inputs
        if not (inputs.supports_multipart and size > PARTS_ABOVE):
            return UploadPlan(task_id, size, url=url, headers=dict(headers) if headers else None)
        expires = part_url_seconds(size, inputs.urls.seconds)
        if file is not None:  # noted on the task: only the parts the store lacks
            upload = self.resumable.browser_parts(actor, task_id, file)
            missing = upload.missing()
            sizes = part_sizes(size, upload.part_size)
            urls = inputs.presign_parts(actor, task_id, upload.upload_id, missing, expires=expires, sizes=sizes)
            signed = dict(zip(missing, urls, strict=True))
            return UploadPlan(
                task_id, size, upload_id=upload.upload_id, part_size=upload.part_size,
                parts=tuple(signed.get(n) for n in range(1, upload.count + 1)), held=dict(upload.held),
                part_etags=inputs.parts_need_etags,
            )  # fmt: skip
        part_size = part_size_for(size)
        upload_id = inputs.create_multipart(actor, task_id)
        sizes = part_sizes(size, part_size)
        parts = tuple(inputs.presign_parts(actor, task_id, upload_id, sorted(sizes), expires=expires, sizes=sizes))
        return UploadPlan(
            task_id, size, upload_id=upload_id, part_size=part_size, parts=parts, part_etags=inputs.parts_need_etags
        )
