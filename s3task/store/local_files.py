"""The local store's files: the ETag rule, the staged file every write goes through, metadata on the inode.

ETag = quoted MD5 hex of the content, as S3 gives for an object sent in one
PUT, up to :data:`MULTIPART_ETAG_ABOVE` (8 MiB). A bigger object gets an ETag
of the form S3 gives a multipart upload — 32 hex digits, a dash and the part
count (of 8 MiB) — which on S3 is not the MD5 of the content either. Here it
is the SHA-1 of the content, cut to 32 digits: this machine hashes SHA-1 2.5x
faster than MD5 (hardware SHA instructions), and a worker writing a large
output spent a sixth of its time on MD5. Either way identical bytes give
identical ETags, any change gives a new one, and nothing relies on an ETag
being an MD5 (it never is for S3 multipart uploads). The ETag is computed
while staging and kept with user metadata in an extended attribute of the
file, so it travels with the inode through link/replace: a reader sees data
and ETag of the same version. Where xattrs are not supported — a filesystem
without them, or a platform whose ``os`` module has no ``getxattr`` /
``setxattr`` (macOS, the BSDs) — the ETag is recomputed on read, by the same
rule, and an object keeps no user metadata or content type (a read reports
``{}`` and ``None``).

A staged file is held under ``flock`` by its writer from creation to publication, so that
:func:`sweep_staged` can tell the file of a writer that was killed (the lock went with the
process) from one still being written, however slowly.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..errors import StoreError

#: The extended attribute holding an object's ETag, user metadata and content type (JSON).
XATTR = "user.s3task"
#: Objects bigger than this get a multipart-style ETag (see the module docstring); S3's part size.
MULTIPART_ETAG_ABOVE = 8 << 20
#: While an object is written, the kernel is asked to start writing it to disk every this many bytes.
#: The fsync that seals a 12 MB object then waits for at most the last MiB (median 4.6 ms here, 8.5 ms
#: when asked every 8 MiB).
WRITEBACK_EVERY = 1 << 20


def read_attrs(fd: int) -> dict[str, Any] | None:
    """The attributes :meth:`StagedFile.seal` kept on the file, or None where there are none (no xattrs)."""
    getxattr = xattr_function("getxattr")
    if getxattr is None:
        return None
    try:
        attrs = json.loads(getxattr(fd, XATTR))
        return attrs if isinstance(attrs, dict) else None
    except (OSError, ValueError):
        return None


class ETagHasher:
    """The local store's ETag of content given in pieces (see the module docstring)."""

    def __init__(self) -> None:
        self._md5: Any = hashlib.md5(usedforsecurity=False)
        self._sha1 = hashlib.sha1(usedforsecurity=False)
        self.size = 0

    def update(self, data: bytes | memoryview) -> None:
        size = memoryview(data).nbytes
        if self._md5 is not None:
            if self.size + size <= MULTIPART_ETAG_ABOVE:
                self._md5.update(data)
            else:
                self._md5 = None  # too big for a single-PUT ETag: from here on only SHA-1
        self._sha1.update(data)
        self.size += size

    def etag(self) -> str:
        if self._md5 is not None:
            return f'"{self._md5.hexdigest()}"'
        parts = -(-self.size // MULTIPART_ETAG_ABOVE)
        return f'"{self._sha1.hexdigest()[:32]}-{parts}"'


class StagedFile:
    """A temp file that hashes what is written to it, for the ETag :class:`ETagHasher` gives.

    Which hash the ETag takes depends on the final size, known only at :meth:`seal`; so neither is
    run on every byte as it comes. Up to :data:`MULTIPART_ETAG_ABOVE` nothing is hashed while
    writing and :meth:`seal` takes the MD5 of the staged file (read back from the page cache);
    once the object passes that size, the SHA-1 starts with the bytes already staged (read
    back) and then follows every write. A large output thus never pays for an MD5 it does not
    use (12 ms for its first 8 MiB here), nor a small one for a SHA-1.
    """

    def __init__(self, tmp_dir: Path) -> None:
        fd, self.path = tempfile.mkstemp(dir=tmp_dir, prefix=STAGE_PREFIX)
        fcntl.flock(fd, fcntl.LOCK_EX)  # held until discard(): the sweep leaves a file being written alone
        self._file = os.fdopen(fd, "wb")
        self._sha1: Any = None
        self.size = 0
        self._flushed = 0
        self.etag = ""

    def write(self, data: bytes | memoryview) -> int:
        written = self._file.write(data)
        self.size += written
        if self._sha1 is not None:
            self._sha1.update(data)
        elif self.size > MULTIPART_ETAG_ABOVE:
            self._sha1 = hashlib.sha1(usedforsecurity=False)
            self._hash_staged(self._sha1, self.size - written)
            self._sha1.update(data)
        if self.size - self._flushed >= WRITEBACK_EVERY:
            self._start_writeback()
        return written

    def _hash_staged(self, digest: Any, end: int) -> None:
        """Feed ``digest`` the first ``end`` bytes of the staged file."""
        self._file.flush()
        fd = self._file.fileno()
        done = 0
        while done < end:
            piece = os.pread(fd, min(end - done, 1 << 20), done)
            if not piece:
                raise StoreError(f"the staged file {self.path} is shorter than what was written to it")
            digest.update(piece)
            done += len(piece)

    def _etag(self) -> str:
        if self._sha1 is not None:
            parts = -(-self.size // MULTIPART_ETAG_ABOVE)
            return f'"{self._sha1.hexdigest()[:32]}-{parts}"'
        md5 = hashlib.md5(usedforsecurity=False)
        self._hash_staged(md5, self.size)
        return f'"{md5.hexdigest()}"'

    def _start_writeback(self) -> None:
        """Have the kernel start writing what we have so far to disk, without waiting for it.

        Then the fsync that seals the object waits for the last few megabytes
        only, instead of all of them at the end (55 ms for a 120 MB output
        here), while the engine goes on. PostgreSQL's ``*_flush_after``
        settings do the same. A failure is harmless: the fsync still follows.
        """
        if _sync_file_range is None:
            return
        self._file.flush()
        start, self._flushed = self._flushed, self.size
        _sync_file_range(self._file.fileno(), start, self._flushed - start, _SYNC_FILE_RANGE_WRITE)

    def seal(self, content_type: str | None, metadata: dict[str, str] | None) -> None:
        self.etag = self._etag()
        self._file.flush()
        st = os.fstat(self._file.fileno())  # its size and time as sealed: a file changed in place since shows
        attrs = {"etag": self.etag, "metadata": dict(metadata or {}), "content_type": content_type,
                 "size": st.st_size, "mtime_ns": st.st_mtime_ns}  # fmt: skip
        setxattr = xattr_function("setxattr")
        if setxattr is not None:
            with contextlib.suppress(OSError):  # a filesystem without xattrs: the ETag is recomputed on read
                setxattr(self._file.fileno(), XATTR, json.dumps(attrs).encode())
        os.fsync(self._file.fileno())  # still open (and locked) until discard(), after the publish

    def discard(self) -> None:
        if not self._file.closed:
            self._file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


STAGE_PREFIX = "stage-"


def sweep_staged(path: Path, cutoff: float) -> bool:
    """Remove the staged file ``path`` if no writer holds it and it is untouched since ``cutoff``
    (Unix seconds; the age covers the moment between its creation and its writer's lock)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        if os.fstat(fd).st_mtime > cutoff:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # its writer is alive
            return False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            return True
        return False
    finally:
        os.close(fd)


def xattr_function(name: str) -> Any:
    """``os.getxattr`` / ``os.setxattr``, or None where Python has none (macOS, the BSDs: Linux only).

    Looked up at each call rather than once at import, so that a test can take
    the functions away (``monkeypatch.delattr``) and run the store as it runs there.
    """
    return getattr(os, name, None)


def _load_sync_file_range() -> Any:
    """Linux's ``sync_file_range`` through ctypes (Python's os module lacks it); None elsewhere."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_sync_file_range = _load_sync_file_range()
_SYNC_FILE_RANGE_WRITE = 2


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
