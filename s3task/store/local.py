"""A local-directory object store: the embedded default.

Same semantics as the S3 backend for processes on one POSIX machine
(Windows is not supported: it needs ``fcntl`` and hard links). It is meant
for one box — a laptop, a small server — not for a network filesystem,
whose locking and rename guarantees vary.

- create = write a staged file, then ``os.link`` it into place, which fails
  atomically if the key exists;
- overwrite = staged file + ``os.replace``;
- update / conditional delete = under ``fcntl.flock`` on a lock file kept in
  a separate tree (a lock on the data file itself would be defeated by
  ``os.replace``), re-open the target, compare its ETag, then replace.

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
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from ..clock import MACHINE, Clock
from ..errors import AlreadyExists, InvalidKey, NotFound, PreconditionFailed, StoreError
from .base import GetResult, ObjectMeta, PutMode, check_key, iter_chunks

META_DIR = ".s3task-meta"
_XATTR = "user.s3task"
#: Objects bigger than this get a multipart-style ETag (see the module docstring); S3's part size.
MULTIPART_ETAG_ABOVE = 8 << 20
#: While an object is written, the kernel is asked to start writing it to disk every this many bytes.
#: The fsync that seals a 12 MB object then waits for at most the last MiB (median 4.6 ms here, 8.5 ms
#: when asked every 8 MiB).
WRITEBACK_EVERY = 1 << 20


class LocalStore:
    """Objects as files under ``root``; see the module docstring."""

    def __init__(self, root: str | os.PathLike[str], *, clock: Clock = MACHINE) -> None:
        self.root = Path(root).resolve()
        self.clock = clock
        self.root.mkdir(parents=True, exist_ok=True)
        self._meta = self.root / META_DIR
        (self._meta / "tmp").mkdir(parents=True, exist_ok=True)
        (self._meta / "locks").mkdir(parents=True, exist_ok=True)
        self.description = f"local directory {self.root}"

    # --- paths ---------------------------------------------------------

    def _path(self, key: str) -> Path:
        check_key(key)
        if key == META_DIR or key.startswith(META_DIR + "/"):
            raise InvalidKey(f"invalid object key {key!r}")
        return self.root / key

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        lock_path = self._meta / "locks" / (key + ".lock")
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    # --- metadata on the inode -------------------------------------------

    @staticmethod
    def _read_attrs(fd: int) -> dict[str, Any] | None:
        getxattr = _xattr_function("getxattr")
        if getxattr is None:
            return None
        try:
            attrs = json.loads(getxattr(fd, _XATTR))
            return attrs if isinstance(attrs, dict) else None
        except (OSError, ValueError):
            return None

    def _meta_of(self, key: str, fd: int) -> ObjectMeta:
        st = os.fstat(fd)
        attrs = self._read_attrs(fd)
        if attrs is None:  # no xattr support: hash the content
            digest = ETagHasher()
            with open(os.dup(fd), "rb") as f:
                f.seek(0)
                for chunk in iter_chunks(f):
                    digest.update(chunk)
            attrs = {"etag": digest.etag()}
        return ObjectMeta(
            key=key,
            size=st.st_size,
            etag=attrs["etag"],
            last_modified=datetime.fromtimestamp(st.st_mtime, tz=UTC),
            metadata=dict(attrs.get("metadata") or {}),
            content_type=attrs.get("content_type"),
        )

    def _open(self, key: str) -> BinaryIO:
        try:
            return open(self._path(key), "rb")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as e:
            raise NotFound(f"{key} not found") from e

    # --- reads -----------------------------------------------------------

    def get(self, key: str, *, if_match: str | None = None) -> GetResult:
        with self._open(key) as f:
            meta = self._meta_of(key, f.fileno())
            if if_match is not None and meta.etag != if_match:
                raise PreconditionFailed(f"{key} changed (ETag {meta.etag}, expected {if_match})")
            f.seek(0)
            return GetResult(f.read(), meta)

    def head(self, key: str) -> ObjectMeta:
        with self._open(key) as f:
            return self._meta_of(key, f.fileno())

    def get_start(self, key: str, size: int) -> GetResult:
        with self._open(key) as f:
            meta = self._meta_of(key, f.fileno())
            f.seek(0)
            return GetResult(f.read(size), meta)

    @contextlib.contextmanager
    def open_read(self, key: str, *, if_match: str | None = None) -> Iterator[BinaryIO]:
        with self._open(key) as f:
            if if_match is not None:
                etag = self._meta_of(key, f.fileno()).etag
                if etag != if_match:
                    raise PreconditionFailed(f"{key} changed (ETag {etag}, expected {if_match})")
                f.seek(0)
            yield f

    def list_keys(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        keys = sorted(k for k in self._walk(prefix) if k.startswith(prefix))
        return _page(keys, start_after, limit)

    def list_prefixes(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        base = self.root / prefix if prefix else self.root
        if prefix and not prefix.endswith("/"):
            raise ValueError("list_prefixes needs a prefix ending in '/'")
        try:
            names = [e.name for e in os.scandir(base) if e.is_dir() and e.name != META_DIR]
        except FileNotFoundError:
            return []
        # Sort and page the names first, then check only as many directories as the page needs:
        # a listing of the newest 50 must not walk every task directory in the store.
        found: list[str] = []
        for candidate in _page(sorted(prefix + name + "/" for name in names), start_after, None):
            if limit is not None and len(found) >= limit:
                break
            if self._has_objects(base / candidate[len(prefix) : -1]):
                found.append(candidate)
        return found

    def _has_objects(self, path: Path) -> bool:
        return any(files for _dirpath, _dirs, files in os.walk(path))

    def _walk(self, prefix: str) -> Iterator[str]:
        check_key(prefix + "x")
        start = self.root / prefix.rsplit("/", 1)[0] if "/" in prefix else self.root
        for dirpath, dirs, files in os.walk(start):
            dirs[:] = [d for d in dirs if d != META_DIR]
            rel = os.path.relpath(dirpath, self.root)
            for name in files:
                yield name if rel == "." else f"{rel}/{name}"

    # --- writes ----------------------------------------------------------

    def put(
        self,
        key: str,
        body: bytes,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> str:
        with self.open_write(key, mode, content_type=content_type, metadata=metadata) as w:
            w.write(body)
        return w.etag

    @contextlib.contextmanager
    def open_write(
        self,
        key: str,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Iterator[_StagedFile]:
        target = self._path(key)
        staged = _StagedFile(self._meta / "tmp")
        try:
            yield staged
            staged.seal(content_type, metadata)
            self._publish(key, target, staged.path, mode)
        finally:
            staged.discard()

    def _publish(self, key: str, target: Path, staged: str, mode: PutMode) -> None:
        for _ in range(5):  # a concurrent delete may remove an empty parent directory
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                if mode.kind == "create":
                    try:
                        os.link(staged, target)
                    except FileExistsError as e:
                        raise AlreadyExists(f"{key} already exists") from e
                elif mode.kind == "overwrite":
                    os.replace(staged, target)
                else:
                    with self._locked(key):
                        self._check_etag(key, mode.etag)
                        os.replace(staged, target)
                _fsync_dir(target.parent)
                return
            except FileNotFoundError:
                if mode.kind == "update":
                    raise
                continue
        raise StoreError(f"could not write {key}: its directory keeps disappearing")

    def _check_etag(self, key: str, expected: str | None) -> None:
        try:
            current = self.head(key).etag
        except NotFound as e:
            raise PreconditionFailed(f"{key} no longer exists") from e
        if current != expected:
            raise PreconditionFailed(f"{key} changed (ETag {current}, expected {expected})")

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        path = self._path(key)
        if if_match is None:
            self._unlink(path)
            return
        with self._locked(key):
            self._check_etag(key, if_match)
            self._unlink(path)

    def _unlink(self, path: Path) -> None:
        try:
            path.unlink()
        except FileNotFoundError:
            return
        # S3 has no directories: drop parents left empty, so listings match.
        parent = path.parent
        while parent != self.root:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent

    # --- URLs and clock ---------------------------------------------------

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str | None:
        return None

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str | None:
        return None

    def now(self) -> datetime:
        return self.clock.wall_dt()


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


class _StagedFile:
    """A temp file that hashes what is written to it, for the ETag :class:`ETagHasher` gives.

    Which hash the ETag takes depends on the final size, known only at :meth:`seal`; so neither is
    run on every byte as it comes. Up to :data:`MULTIPART_ETAG_ABOVE` nothing is hashed while
    writing and :meth:`seal` takes the MD5 of the staged file (read back from the page cache);
    once the object passes that size, the SHA-1 starts with the bytes already staged (read
    back) and then follows every write. A large output thus never pays for an MD5 it does not
    use (12 ms for its first 8 MiB here), nor a small one for a SHA-1.
    """

    def __init__(self, tmp_dir: Path) -> None:
        fd, self.path = tempfile.mkstemp(dir=tmp_dir, prefix="stage-")
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
        attrs = {"etag": self.etag, "metadata": dict(metadata or {}), "content_type": content_type}
        self._file.flush()
        setxattr = _xattr_function("setxattr")
        if setxattr is not None:
            with contextlib.suppress(OSError):  # a filesystem without xattrs: the ETag is recomputed on read
                setxattr(self._file.fileno(), _XATTR, json.dumps(attrs).encode())
        os.fsync(self._file.fileno())
        self._file.close()

    def discard(self) -> None:
        if not self._file.closed:
            self._file.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def _xattr_function(name: str) -> Any:
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


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _page(items: list[str], start_after: str | None, limit: int | None) -> list[str]:
    if start_after is not None:
        items = [k for k in items if k > start_after]
    return items if limit is None else items[:limit]
