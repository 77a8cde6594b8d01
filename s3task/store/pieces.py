"""Writing one object in pieces: what the streaming writers of S3 (a multipart upload), Azure (staged blocks)
and GCS (a resumable upload) share, so each backend says only how it sends a piece and how it finishes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .background import Background


class PieceWriter:
    """Bytes written are cut into pieces of ``piece_size``; ``send`` sends each on a thread of its own while
    the next fills (one piece in flight: memory stays near two pieces whatever the object's size). An object
    that never fills a piece is never sent by it: :meth:`_rest` says so, and the backend sends it in one
    request. ``size``: the bytes written; ``etag``: the object's, once the backend has finished it."""

    def __init__(self, piece_size: int, send: Callable[[Any], None]) -> None:
        self.piece_size = piece_size
        self._send = send
        self._buf = bytearray()
        self._sender: Background | None = None
        self.etag = ""
        self.size = 0

    def write(self, data: bytes | memoryview) -> int:
        size = memoryview(data).nbytes
        self._buf += data  # a copy: the caller may reuse its buffer once this returns
        self.size += size
        while len(self._buf) >= self.piece_size:
            with memoryview(self._buf) as view:
                piece = bytes(view[: self.piece_size])
            del self._buf[: self.piece_size]
            if self._sender is None:
                self._sender = Background(self._send, depth=1, name="s3task-upload")
            self._sender.write(piece)
        return size

    def _sent(self, *after: Any) -> bool:
        """Send what is left as the last piece, then ``after`` (a backend's own end of the upload), and wait
        until all of it is sent: the first error of any piece is raised here (and :meth:`_stop` still stops
        the sender). False when no piece was ever sent: the buffer holds the whole object, sent by nothing."""
        if self._sender is None:
            return False
        if self._buf:
            self._sender.write(bytes(self._buf))
            self._buf.clear()
        for item in after:
            self._sender.write(item)
        sender, self._sender = self._sender, None
        sender.close()  # its thread has ended whether or not this raises
        return True

    def _stop(self) -> None:
        """Stop sending: the piece in flight is waited for, the rest dropped."""
        if self._sender is not None:
            sender, self._sender = self._sender, None
            sender.abort()
