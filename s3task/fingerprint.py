"""Which file an upload is of: its name, its size, and a SHA-256 of its first and last MiB.

Recorded on a task when it is created for an upload (``TaskRecord.input_fingerprint``), so that an
upload that stopped can be continued only with the same file: the CLI's ``submit --resume``, and a
browser's *Continue upload* on the task's page (ui/resume_upload.py; the browser computes the digest).
It is cheap (2 MiB read, whatever the size) and tells apart a file that was replaced, grew, shrank or
was re-exported — not one changed only in its middle, which the CLI's continued upload catches with
each part's checksum (s3task.tasks.resumable) and a browser's does not (it keeps a part on its size).

The digest, exactly (a browser computes the same with ``file.slice``): SHA-256 over the bytes
``[0, min(EDGE, size))`` followed by ``[max(EDGE, size - EDGE), size)`` — the first MiB, then the
last MiB that is not already in the first (nothing more for a file of 1 MiB or less).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

#: How much of each end of the file the digest covers.
EDGE = 1 << 20


@dataclass(frozen=True)
class Fingerprint:
    name: str
    size: int
    edges_sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "edges_sha256": self.edges_sha256}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fingerprint | None:
        """The fingerprint a record holds; None for a record without one (older, or not made for an upload)."""
        try:
            return cls(str(data["name"]), int(data["size"]), str(data["edges_sha256"]))
        except (KeyError, TypeError, ValueError):
            return None

    def differs_from(self, other: Fingerprint) -> str:
        """How ``other`` (the file recorded) differs from this one, in words; "" when they are the same file."""
        if self == other:
            return ""
        if self.name != other.name:
            return f"it was made for {other.name!r}, not {self.name!r}"
        if self.size != other.size:
            return f"it was made for {other.size:,} bytes of {other.name!r}; this file has {self.size:,}"
        return f"{self.name!r} has the same size but other content at its start or end"


def edges_digest(head: bytes, tail: bytes) -> str:
    """The digest of the first MiB (``head``) and the rest of the last MiB (``tail``), as the docstring says."""
    return hashlib.sha256(head + tail).hexdigest()


def of_stream(stream: BinaryIO, name: str, size: int) -> Fingerprint:
    """The fingerprint of a seekable file of ``size`` bytes; leaves it at its start."""
    stream.seek(0)
    head = stream.read(min(EDGE, size))
    start = max(EDGE, size - EDGE)
    tail = b""
    if size > start:
        stream.seek(start)
        tail = stream.read(size - start)
    stream.seek(0)
    return Fingerprint(name, size, edges_digest(head, tail))


def of_file(path: str | os.PathLike[str]) -> Fingerprint:
    """The fingerprint of the file at ``path``, named by its last component."""
    path = Path(path)
    with path.open("rb") as f:
        return of_stream(f, path.name, os.fstat(f.fileno()).st_size)
