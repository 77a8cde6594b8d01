"""A file of which only some byte ranges are here: what a browser sends of a workbook for its preview.

The New task page's direct upload keeps the file in the browser and sends, for a workbook, the ranges
a zip is read from (its end, where the directory is, and the start of each part the preview needs:
``ui/direct_upload.js``). :class:`SparseFile` is a read-only, seekable file of the whole file's size
over those ranges, which :func:`~s3task.csvio.workbook.open_workbook` opens as it opens the whole
file. A read that starts on a byte that was not sent raises :class:`~s3task.errors.NotSent`; one
that starts on a byte that was sent returns the bytes up to the end of its range (a short read,
which the zip module takes as any stream's). So nothing is ever made up: the reader reads what was
sent and stops where it ends (:class:`SentPart`).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable
from typing import Protocol

from ..errors import NotSent

#: What a cell shows whose text (a shared string) is further on in the workbook than the bytes sent.
NOT_SENT_TEXT = "(not in the preview)"
#: The decompressed bytes asked of a part at a time: what a part's stream may lose when its data runs out
#: (the zip module drops what it had inflated in a read that fails), about 4 KB of compressed data.
STEP_BYTES = 4096


class SparseFile:
    """``size`` bytes, of which ``ranges`` (offset, bytes) are here; overlapping or touching ranges are joined."""

    def __init__(self, size: int, ranges: Iterable[tuple[int, bytes]]) -> None:
        self.size = size
        self._starts: list[int] = []
        self._data: list[bytes] = []
        for start, data in _joined(ranges, size):
            self._starts.append(start)
            self._data.append(data)
        self._pos = 0
        self.ran_out = False  # set once a read has asked for a byte that was not sent

    def held(self) -> int:
        """How many of the file's bytes are here."""
        return sum(map(len, self._data))

    def sent(self) -> bytes:
        """Every byte that is here, range after range (what an OLE2 file's name of its streams is looked for in)."""
        return b"".join(self._data)

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (all: to the end of the range), as far as the range that holds the position goes."""
        if self._pos >= self.size or n == 0:
            return b""
        i = bisect.bisect_right(self._starts, self._pos) - 1
        if i < 0 or self._pos >= self._starts[i] + len(self._data[i]):
            self.ran_out = True
            raise NotSent(f"byte {self._pos:,} of the file was not sent for the preview")
        at = self._pos - self._starts[i]
        data = self._data[i][at:] if n < 0 else self._data[i][at : at + n]
        self._pos += len(data)
        return data

    def close(self) -> None:
        pass


def _joined(ranges: Iterable[tuple[int, bytes]], size: int) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    for start, data in sorted((s, d[: max(0, size - s)]) for s, d in ranges if d and 0 <= s < size):
        if out and start <= out[-1][0] + len(out[-1][1]):
            last_start, last = out[-1]
            out[-1] = (last_start, last + data[last_start + len(last) - start :])
        else:
            out.append((start, data))
    return out


class _Part(Protocol):
    def read1(self, n: int, /) -> bytes: ...

    def close(self) -> None: ...


class SentPart:
    """A part's stream out of a :class:`SparseFile`'s zip: ``read(n)`` returns what could be unpacked from the
    bytes sent, then raises :class:`~s3task.errors.NotSent`; ``read()`` returns the whole part or raises. (The
    zip module's own ``read`` drops what it had unpacked when a read of the file fails; ``read1`` unpacks one
    step at a time, and a step is all that is lost.)"""

    def __init__(self, stream: _Part) -> None:
        self._stream = stream
        self._buffer = b""
        self._out = False

    def read(self, n: int = -1) -> bytes:
        parts, got = [self._buffer], len(self._buffer)
        while (n < 0 or got < n) and not self._out:
            try:
                data = self._stream.read1(STEP_BYTES)
            except NotSent:
                self._out = True
                break
            if not data:
                break
            parts.append(data)
            got += len(data)
        data = b"".join(parts)
        if self._out and (n < 0 or not data):  # all of a part (n < 0) is all or nothing: never a part cut short
            raise NotSent("the rest of this part was not sent for the preview")
        cut = len(data) if n < 0 else n
        data, self._buffer = data[:cut], data[cut:]
        return data

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> SentPart:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
