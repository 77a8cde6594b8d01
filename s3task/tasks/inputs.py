"""A task's input file: putting it in the store, and queueing the task once it is there.

One place for every way a file arrives — streamed through the caller (the CLI, the page's own
uploader), or sent by a browser straight to the store in one piece or in parts — and for what
happens after: join the parts, check the size and the header, queue the task, or, when any of
that fails, leave no half-made task behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from .. import lifecycle
from ..csvio import INSPECT_BYTES
from ..errors import InvalidInput, InvalidTransition, PartsChanged, S3TaskError, StoreUnavailable, UploadInterrupted
from ..input_format import AskedFormat
from ..layout import CSV_TYPE
from ..record import RecipeRef, TaskRecord
from ..states import Status
from ..store.base import MultipartStore, ObjectMeta, PutMode, SizedUrls
from . import access, changed_parts, open_uploads
from .access import Actor
from .input_check import judge_input
from .transitions import Transitions
from .urls import Urls


@dataclass(frozen=True)
class Created:
    record: TaskRecord
    #: Where the browser may PUT the input directly, or None if the store has no presigned URLs.
    upload_url: str | None
    upload_content_type: str = CSV_TYPE
    #: The headers that PUT must send: the signed Content-Type, and any the store needs (Azure's blob type).
    upload_headers: Mapping[str, str] = field(default_factory=lambda: {"Content-Type": CSV_TYPE})


class Inputs:
    def __init__(self, transitions: Transitions, urls: Urls) -> None:
        self.transitions, self.urls = transitions, urls
        self.store = transitions.store

    def create(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None = None,
        input_format: AskedFormat | None = None,
        fingerprint: Mapping[str, Any] | None = None,
        size: int | None = None,
        *,
        recipe: RecipeRef | None = None,
    ) -> Created:
        """A new task waiting for its input (see :meth:`Transitions.create`), and where a browser may send it;
        ``fingerprint``: the file's (s3task.fingerprint), recorded on the task so its upload can be continued;
        ``size``: the file's, bound into the upload URL where the store can (S3's signed Content-Length);
        ``recipe``: the one its settings came from."""
        record = self.transitions.prepare(actor, name, task_type, payload, input_format, fingerprint, recipe=recipe)
        # Its upload URL before the record: a store that cannot sign one now (Azure not answering for a
        # user delegation key) refuses the create with nothing written, not a task left waiting for a file.
        created = self.created(record, size)
        return dataclasses.replace(created, record=self.transitions.store_new(actor, record))

    def created(self, record: TaskRecord, size: int | None = None) -> Created:
        """A task just created, with the URL its browser may send the file (of ``size`` bytes, if known) to."""
        url, headers = self.urls.put_request(record.input_object_path, CSV_TYPE, size)
        return Created(record, url, CSV_TYPE, headers)

    # --- the whole operation, as the page, the CLI and the API call it -----------------------

    def submit_file(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None,
        stream: BinaryIO | bytes | Iterable[bytes],
        input_format: AskedFormat | None = None,
        fingerprint: Mapping[str, Any] | None = None,
        *,
        recipe: RecipeRef | None = None,
    ) -> TaskRecord:
        """Create a task, store its input from ``stream`` and queue it; on failure, no task is left behind.

        ``input_format`` as for ``create`` (its delimiter and encoding; ``detect`` for what the file shows);
        ``fingerprint``: the file's (s3task.fingerprint), recorded on the task."""
        record = self.transitions.create(actor, name, task_type, payload, input_format, fingerprint, recipe=recipe)
        try:
            # The file passes through here: its first bytes are checked as they go by and its
            # ETag comes back with the write, so neither the record nor the file is read again.
            meta, head = self._store_input(record, stream)
            judged = judge_input(self.store, record, self.transitions.params_of(record), head, meta)
            known = self.transitions.recall(record.task_id)
            return self.transitions.queue(record, None if known is None else known[1], meta, judged)
        except Exception:  # a refusal, the store failing, or a bug: no task is left half-made either way
            # Nobody has seen this task: remove it. Once its queueing began (or if the store fails
            # us), cancel it instead, so it is never left waiting for a file.
            if not self.transitions.discard(record):
                self.abandon_upload(actor, record.task_id)
            raise

    def finish_upload(
        self,
        actor: Actor,
        task_id: str,
        *,
        size: int | None = None,
        upload_id: str | None = None,
        parts: Sequence[tuple[int, str]] = (),
    ) -> TaskRecord:
        """A browser says the file is in the store: join its parts, check its size, queue the task.

        If any of that fails the parts are dropped and the task is cancelled (and the
        error raised), so a failed upload never leaves a task waiting for a file. A task
        that is no longer waiting for its file (submitted or cancelled meanwhile) is left
        as it is. Two exceptions, on an upload noted on the task (one that can be continued from
        the task's page, s3task.tasks.resumable), which keep the task and its parts (UploadInterrupted):
        the store failing (StoreUnavailable: a timeout, a 5xx after the SDK's retries), and a part that
        changed in the store since it was sent (PartsChanged, said in words: s3task.tasks.changed_parts).
        """
        try:
            if upload_id:
                self.complete_multipart(actor, task_id, upload_id, list(parts))
            # The submit reads the file's size with its start, and checks it against ``size``.
            return self.transitions.submit(actor, task_id, size=size)
        except InvalidTransition:
            raise
        except PartsChanged as e:
            raise self._parts_changed(actor, task_id, upload_id or "", parts) from e
        except StoreUnavailable as e:
            if upload_id and self._noted(actor, task_id, upload_id):
                raise UploadInterrupted(f"the task store failed while joining the file's parts: {e}") from e
            self.abandon_upload(actor, task_id, upload_id)
            raise
        except S3TaskError as e:  # refused (a file of another size, say): only a task still waiting is cancelled
            self.abandon_upload(actor, task_id, upload_id, waiting_only=isinstance(e, InvalidInput))
            raise

    def _parts_changed(
        self, actor: Actor, task_id: str, upload_id: str, parts: Sequence[tuple[int, str]]
    ) -> S3TaskError:
        """The join refused because parts changed since they were sent, in words: an upload noted on the task
        keeps waiting with those parts to go again (UploadInterrupted); any other is given up."""
        noted = self._noted(actor, task_id, upload_id)
        key = self.transitions.layout.input_key(task_id)
        store = self._multipart_store()
        numbers = changed_parts.changed(store, key, upload_id, parts)
        gone = not store.part_etags  # its parts go by number: one named is one no longer held
        name = str((noted.input_fingerprint if noted else {}).get("name") or "the file")
        if noted is None:
            self.abandon_upload(actor, task_id, upload_id)
            return PartsChanged(changed_parts.words(name, task_id, numbers, how=None, gone=gone))
        resend = numbers if numbers is not None else [n for n, _ in parts]
        changed_parts.note_resend(self.transitions, task_id, upload_id, resend, gone=gone)
        return UploadInterrupted(changed_parts.words(name, task_id, numbers, how=changed_parts.ON_THE_PAGE, gone=gone))

    def _noted(self, actor: Actor, task_id: str, upload_id: str) -> TaskRecord | None:
        """The task, if ``upload_id`` is the upload noted on it, to be continued (None when that cannot be read)."""
        try:
            record = self.transitions.get(actor, task_id, fresh=True)
        except S3TaskError:
            return None
        noted = record.status == Status.CREATED and (record.input_upload or {}).get("upload_id") == upload_id
        return record if noted else None

    def abandon_upload(
        self, actor: Actor, task_id: str, upload_id: str | None = None, *, waiting_only: bool = False
    ) -> None:
        """Drop an upload that will not finish: its parts, and the task made for it with what was sent of its
        file (``Transitions.cancel``, s3task.tasks.unsent; best effort). ``waiting_only`` (a file refused at the
        finish): only a task still waiting for its file is cancelled; one queued meanwhile keeps its file."""
        if upload_id:
            with contextlib.suppress(S3TaskError):
                self.abort_multipart(actor, task_id, upload_id)
        with contextlib.suppress(S3TaskError):
            self.transitions.cancel(actor, task_id, waiting_only=waiting_only)

    # --- the steps ------------------------------------------------------------------------------

    def uploadable(self, actor: Actor, task_id: str) -> TaskRecord:
        """The task, if ``actor`` may put its input now: until it is submitted."""
        record = self.transitions.get(actor, task_id)
        access.require(actor, record, "upload to")
        if record.status != Status.CREATED:
            raise InvalidTransition(f"cannot replace the input: {lifecycle.describe(record)}")
        return record

    def upload_input(self, actor: Actor, task_id: str, stream: BinaryIO | bytes | Iterable[bytes]) -> ObjectMeta:
        """Store the input (streamed). Allowed until the task is submitted."""
        return self._store_input(self.uploadable(actor, task_id), stream)[0]

    def _store_input(self, record: TaskRecord, stream: BinaryIO | bytes | Iterable[bytes]) -> tuple[ObjectMeta, bytes]:
        """Write the input; its size and ETag as stored, and its first ``INSPECT_BYTES`` (for the check)."""
        size, head = 0, bytearray()
        with self.store.open_write(record.input_object_path, PutMode.OVERWRITE, content_type=CSV_TYPE) as w:
            for chunk in _chunks(stream):
                if len(head) < INSPECT_BYTES:
                    head += chunk[: INSPECT_BYTES - len(head)]
                size += len(chunk)
                w.write(chunk)
        return ObjectMeta(record.input_object_path, size, w.etag, content_type=CSV_TYPE), bytes(head)

    # --- the input in parts, straight from a browser (stores with presigned part URLs: S3) ---

    @property
    def supports_multipart(self) -> bool:
        return isinstance(self.store, MultipartStore)

    @property
    def parts_need_etags(self) -> bool:
        """Whether joining parts needs the ETag each part's PUT answered (S3), which a browser must report."""
        return self._multipart_store().part_etags

    def _multipart_store(self) -> MultipartStore:
        if not isinstance(self.store, MultipartStore):
            raise InvalidInput(f"{self.store.description} takes uploads in one piece, not in parts")
        return self.store

    def create_multipart(self, actor: Actor, task_id: str) -> str:
        """Start a multipart upload of the input; returns its upload id."""
        return self.open_upload(actor, self.uploadable(actor, task_id))

    def open_upload(self, actor: Actor, record: TaskRecord) -> str:
        """Start an upload in parts of ``record``'s input, within the bounds on open uploads (refused in words
        past them, TooManyUploads: s3task.tasks.open_uploads); its id."""
        upload_id = self._multipart_store().create_multipart(record.input_object_path, content_type=CSV_TYPE)
        open_uploads.check_started(self.transitions, actor, record, upload_id)
        return upload_id

    def presign_parts(
        self,
        actor: Actor,
        task_id: str,
        upload_id: str,
        numbers: Iterable[int],
        *,
        expires: int | None = None,
        sizes: Mapping[int, int] | None = None,
    ) -> list[str]:
        """PUT URLs for the given part numbers (the browser sends each part's bytes, no headers needed);
        ``sizes`` (by number): each part's, bound into its URL where the store can (S3's signed Content-Length)."""
        key = self.uploadable(actor, task_id).input_object_path
        store, seconds = self._multipart_store(), expires or self.urls.seconds
        if sizes is not None and isinstance(store, SizedUrls):
            return [store.presign_sized_part(key, upload_id, n, expires=seconds, size=sizes[n]) for n in numbers]
        return [store.presign_part(key, upload_id, n, expires=seconds) for n in numbers]

    def complete_multipart(
        self, actor: Actor, task_id: str, upload_id: str, parts: list[tuple[int, str]]
    ) -> ObjectMeta:
        """Join the uploaded parts (number, ETag) into the input. Only before submit, like any upload."""
        key = self.uploadable(actor, task_id).input_object_path
        self._multipart_store().complete_multipart(key, upload_id, parts)
        return self.store.head(key)

    def abort_multipart(self, actor: Actor, task_id: str, upload_id: str) -> None:
        """Drop an unfinished upload's parts (in any state: a cancelled task's upload goes too)."""
        record = self.transitions.get(actor, task_id)
        access.require(actor, record, "upload to")
        self._multipart_store().abort_multipart(record.input_object_path, upload_id)


def _chunks(stream: BinaryIO | bytes | Iterable[bytes], size: int = 1 << 20) -> Iterator[bytes]:
    if isinstance(stream, bytes | bytearray):
        yield bytes(stream)
        return
    read = getattr(stream, "read", None)
    if read is None:
        yield from stream  # an iterable of chunks
        return
    while chunk := read(size):
        yield chunk
