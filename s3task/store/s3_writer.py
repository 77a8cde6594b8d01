"""The S3 backend's writers: one PUT for a small object, a multipart upload for a large one, and the
conditional delete of a store that cannot delete conditionally."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from .base import PutMode
from .pieces import PieceWriter
from .s3_errors import _translated

if TYPE_CHECKING:
    from .s3 import S3Store

#: Metadata of the empty object a conditional delete leaves for a moment (:func:`delete_by_tombstone`).
TOMBSTONE = {"s3task-deleting": "1"}


class _MultipartWriter(PieceWriter):
    """Buffers one part; small objects become one PUT, large ones a multipart upload.

    Parts are uploaded by a thread of their own (:mod:`.background`), one
    part waiting at most behind the one in flight, so the caller goes on
    producing the next part meanwhile. The upload is completed with the put
    mode's condition (If-None-Match on a create), so a second writer of the
    same output cannot replace the first.
    """

    def __init__(
        self,
        store: S3Store,
        key: str,
        mode: PutMode,
        content_type: str | None,
        metadata: dict[str, str] | None,
        part_size: int,
    ):
        self.store, self.key, self.mode = store, key, mode
        self.content_type, self.metadata = content_type, metadata
        super().__init__(part_size, self._send_part)
        self.part_size = part_size
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []

    def _send_part(self, data: bytes) -> None:
        c = self.store.data_client
        if self._upload_id is None:
            kwargs: dict[str, Any] = {"Bucket": self.store.bucket, "Key": self.key}
            if self.content_type:
                kwargs["ContentType"] = self.content_type
            if self.metadata:
                kwargs["Metadata"] = self.metadata
            with _translated(self.key, "write"):
                self._upload_id = c.create_multipart_upload(**kwargs)["UploadId"]
        number = len(self._parts) + 1
        with _translated(self.key, "write"):
            resp = c.upload_part(
                Bucket=self.store.bucket, Key=self.key, UploadId=self._upload_id, PartNumber=number, Body=data
            )
        self._parts.append({"PartNumber": number, "ETag": resp["ETag"]})

    def finish(self) -> None:
        # Every part sent, or the first error raised (open_write aborts the upload).
        if not self._sent():  # never filled a part: one PUT
            self.etag = self.store.put(
                self.key, bytes(self._buf), self.mode, content_type=self.content_type, metadata=self.metadata
            )
            return
        kwargs = {
            "Bucket": self.store.bucket,
            "Key": self.key,
            "UploadId": self._upload_id,
            "MultipartUpload": {"Parts": self._parts},
        }
        try:
            self.etag = self.store._conditional(
                self.key, self.mode, self.store.data_client.complete_multipart_upload, kwargs
            )
        except StoreError:
            self.abort()
            raise

    def abort(self) -> None:
        self._stop()
        if self._upload_id is None:
            return
        with contextlib.suppress(Exception):
            self.store.data_client.abort_multipart_upload(
                Bucket=self.store.bucket, Key=self.key, UploadId=self._upload_id
            )
        self._upload_id = None


def delete_by_tombstone(store: S3Store, key: str, if_match: str) -> None:
    """Delete ``key`` only if its ETag is ``if_match``, on a store that refuses If-Match on DELETE.

    Step one is a compare-and-set that any store enforcing conditional writes honours: replace the
    object by an empty one, If-Match ``if_match`` (a 412, or a 404 if it is gone, raises
    ``PreconditionFailed`` and changes nothing). From then on every conditional write based on the
    version we compared against fails, as it would after a real conditional delete. Step two deletes
    the empty object unconditionally. Between the two a reader may see it: empty, with the
    ``s3task-deleting`` metadata; and an unconditional overwrite landing in between is deleted with
    it. s3task deletes conditionally only objects nobody overwrites: the outbox's notification entries
    and the record of a task its own creator discards before queueing it. Their readers take an empty
    object for a missing one (``Records.read``; the outbox's sweep finishes the delete), so a process
    that dies between the two steps leaves nothing anyone reads as data.
    """
    store.put(key, b"", PutMode.update(if_match), metadata=TOMBSTONE)
    with _translated(key, "delete"):
        store.client.delete_object(Bucket=store.bucket, Key=key)
