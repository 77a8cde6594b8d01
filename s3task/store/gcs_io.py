"""The GCS backend's streams: ranged reads pinned to one generation, and writes that are one upload when
small and a resumable upload when large.

- :class:`RangeReader` reads a range of :data:`~.gcs.CHUNK_SIZE` at a time. Its first range is read when
  it is opened (a missing object or a stale generation fails there, as on S3), and every later one asks
  for the generation the first answered with (``generation=`` and ``ifGenerationMatch=``): the object
  replaced meanwhile fails the read (``PreconditionFailed``) rather than mixing two versions.
- :class:`ResumableWriter` buffers one chunk. An object that never fills one is a single upload request
  with the put mode's precondition; a larger one is a resumable upload (the client's ``BlobWriter``),
  started with the precondition, whose chunks are sent from a thread of their own
  (:mod:`.background`) while the caller produces the next. The object exists only once the last chunk
  is sent: a write that fails or is abandoned cancels its upload session, and none is seen.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ..errors import PreconditionFailed, StoreError
from .base import PutMode
from .gcs_errors import status_of, translated
from .gcs_requests import DATA_RETRY, DATA_TIMEOUT, encode_metadata, precondition
from .pieces import PieceWriter

if TYPE_CHECKING:
    from .gcs import GcsStore

_FINISH = object()


class RangeReader:
    """A file-like view of one generation of an object, read a range at a time; errors are store errors."""

    def __init__(self, store: GcsStore, key: str, generation: int | None, chunk: int) -> None:
        self.store, self.key, self.chunk = store, key, chunk
        self.generation = generation
        self.closed = False
        self._buf = b""
        self._pos = 0  # where the next range starts
        self._eof = False
        self._fetch()
        if self.generation is None:  # every later range reads the generation the first one found
            response = store.last_response()
            found = response.headers.get("x-goog-generation", "") if response is not None else ""
            self.generation = int(found) if str(found).isdigit() else None

    def _fetch(self) -> None:
        gen = self.generation
        blob = self.store.bucket.blob(self.key, generation=gen)
        try:
            with translated(self.key, "update" if gen else "get"):
                data = blob.download_as_bytes(
                    start=self._pos,
                    end=self._pos + self.chunk - 1,
                    raw_download=True,
                    if_generation_match=gen,
                    checksum=None,  # a range has no checksum of its own; TCP's and TLS's stand
                    timeout=DATA_TIMEOUT,
                    retry=DATA_RETRY,
                )
        except StoreError as e:
            if e.__cause__ is None or status_of(e.__cause__) != 416:
                raise
            data = b""  # a range past the end: the object ended on the last range's edge (or is empty)
        self._check_generation()
        self._buf += data
        self._pos += len(data)
        self._eof = len(data) < self.chunk

    def _check_generation(self) -> None:
        """A server that ignores the generation asked for must not hand another one's bytes on."""
        response = self.store.last_response()
        got = response.headers.get("x-goog-generation") if response is not None else None
        if self.generation is not None and got and str(got) != str(self.generation):
            raise PreconditionFailed(f"{self.key} changed while it was read")

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            while not self._eof:
                self._fetch()
            out, self._buf = self._buf, b""
            return out
        while len(self._buf) < n and not self._eof:
            self._fetch()
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


class ResumableWriter(PieceWriter):
    """Buffers one chunk; a small object becomes one upload, a large one a resumable upload."""

    def __init__(
        self,
        store: GcsStore,
        key: str,
        mode: PutMode,
        content_type: str | None,
        metadata: dict[str, str] | None,
        chunk: int,
    ) -> None:
        self.store, self.key, self.mode = store, key, mode
        self.content_type, self.metadata = content_type, metadata
        self.condition = precondition(key, mode)  # a stale ETag fails here, before any byte is sent
        super().__init__(chunk, self._send_chunk)
        self.chunk = chunk
        self._upload: Any = None  # the client's BlobWriter, used by the sender's thread only

    def _send_chunk(self, item: Any) -> None:
        with translated(self.key, self.mode.kind):  # the precondition may fail at the start or the end
            if self._upload is None:
                blob = self.store.bucket.blob(self.key, chunk_size=self.chunk)
                blob.metadata = encode_metadata(self.metadata)
                self._upload = blob.open(
                    "wb",
                    content_type=self.content_type or "application/octet-stream",
                    if_generation_match=self.condition,
                    timeout=DATA_TIMEOUT,
                    retry=DATA_RETRY,
                )
            if item is not _FINISH:
                self._upload.write(item)  # a whole chunk: sent now
                return
            self._upload.close()  # the last chunk: the object is made, with the precondition
            response = self.store.last_response()  # the upload's final answer: the object made
            self.etag = str((response.json() if response is not None else {}).get("generation", ""))
            self._upload = None

    def finish(self) -> None:
        # Every chunk sent and the upload finished (_FINISH, on the sender's thread), or the first error raised.
        if not self._sent(_FINISH):  # never filled a chunk: one upload request
            self.etag = self.store.upload(
                self.key,
                bytes(self._buf),
                self.mode,
                self.content_type,
                self.metadata,
                timeout=DATA_TIMEOUT,
                retry=DATA_RETRY,
            )
            return
        if not self.etag:
            raise StoreError(f"{self.key}: the upload finished with no generation in its answer")

    def abort(self) -> None:
        self._stop()
        upload, self._upload = self._upload, None
        cancel(upload)


def cancel(upload: Any) -> None:
    """Cancel a resumable upload's session (a DELETE to its URL): nothing of it is kept. Best effort: GCS
    drops a session left open after a week, and no object is made from it meanwhile."""
    started = getattr(upload, "_upload_and_transport", None) if upload is not None else None
    if not started:
        return
    session, transport = started
    url = getattr(session, "resumable_url", None)
    if url:
        with contextlib.suppress(Exception):
            transport.delete(url, timeout=5)
