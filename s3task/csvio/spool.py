"""A stream copied to a temporary file: what a workbook is read from (a zip's directory is at its end).

The file has no name (``tempfile.TemporaryFile``: on Linux an ``O_TMPFILE``, else unlinked as soon as it
is made), so it goes when it is closed and also when its process is killed, which an attempt's
process may be (stalled, out of memory) before any ``finally`` runs. Disk use is bounded by the size
the caller knows the stream has: the free space is checked first, and a stream that runs longer is cut.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from ..errors import S3TaskError
from .common import Readable

#: Copied per read: memory holds one such piece.
CHUNK_BYTES = 1 << 20
#: Left free on the temporary directory's disk after the copy (the system and other processes need some).
MARGIN_BYTES = 64 << 20


@contextmanager
def spooled(source: Readable, size: int, directory: str | None = None) -> Iterator[IO[bytes]]:
    """``source``'s ``size`` bytes in an unnamed temporary file (in ``directory``, default ``$TMPDIR``),
    positioned at its start; the file is gone when the block is left."""
    where = directory or tempfile.gettempdir()
    free = shutil.disk_usage(where).free
    if free < size + MARGIN_BYTES:
        raise S3TaskError(
            f"not enough free disk space in {where} to read the workbook: it takes {size / 1e6:,.1f} MB "
            f"and {free / 1e6:,.1f} MB are free"
        )
    with tempfile.TemporaryFile(dir=where) as file:
        copied = 0
        while chunk := source.read(CHUNK_BYTES):
            copied += len(chunk)
            if copied > size:
                raise S3TaskError(f"the stored file is longer than the {size:,} bytes it was stored with")
            file.write(chunk)
        if copied != size:
            raise S3TaskError(f"the stored file ends after {copied:,} of its {size:,} bytes")
        file.flush()
        file.seek(0)
        yield file
