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

The ETag rule, the staged file every write goes through and the metadata kept
in an extended attribute are in :mod:`s3task.store.local_files`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from ..clock import MACHINE, Clock
from ..errors import AlreadyExists, InvalidKey, NotFound, PreconditionFailed, StoreError
from .base import GetResult, ObjectMeta, PutMode, check_key, iter_chunks
from .local_files import STAGE_PREFIX, ETagHasher, StagedFile, fsync_dir, read_attrs, sweep_staged

META_DIR = ".s3task-meta"


class LocalStore:
    """Objects as files under ``root``; see the module docstring."""

    #: A file another program is still writing into the directory (``cp``) is listed already: a reader
    #: that must not take half a file waits until its size and time stay the same (s3task.tasks.inbox_sweep).
    lists_partial_objects = True

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

    def _meta_of(self, key: str, fd: int) -> ObjectMeta:
        st = os.fstat(fd)
        attrs = read_attrs(fd)
        sealed = None if attrs is None else (attrs.get("mtime_ns"), attrs.get("size"))
        if sealed is not None and sealed[0] is not None and sealed != (st.st_mtime_ns, st.st_size):
            # Written into in place since it was sealed (an editor, `>`), not through the store: its ETag is its
            # bytes' now, so a read or write pinned to the old one is refused (a pinned input, a step list).
            attrs = {k: v for k, v in (attrs or {}).items() if k != "etag"}
        if attrs is None or "etag" not in attrs:  # no xattr support, or changed in place: hash the content
            digest = ETagHasher()
            with open(os.dup(fd), "rb") as f:
                f.seek(0)
                for chunk in iter_chunks(f):
                    digest.update(chunk)
            attrs = {**(attrs or {}), "etag": digest.etag()}
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
    ) -> Iterator[StagedFile]:
        target = self._path(key)
        staged = StagedFile(self._meta / "tmp")
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
                fsync_dir(target.parent)
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

    # --- what killed writers leave (s3task.store.base.Leftovers) -----------

    def drop_unfinished(self, key: str) -> int:
        """Nothing by key: a staged file does not name its key; :meth:`sweep_unfinished` takes it."""
        return 0

    def sweep_unfinished(self, older_than: float) -> int:
        """Remove staged files no live writer holds, untouched for ``older_than`` seconds."""
        cutoff = time.time() - older_than  # file times are the machine's, whatever the store's clock
        return sum(sweep_staged(p, cutoff) for p in (self._meta / "tmp").glob(STAGE_PREFIX + "*"))

    # --- URLs and clock ---------------------------------------------------

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str | None:
        return None

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str | None:
        return None

    def now(self) -> datetime:
        return self.clock.wall_dt()


def _page(items: list[str], start_after: str | None, limit: int | None) -> list[str]:
    if start_after is not None:
        items = [k for k in items if k > start_after]
    return items if limit is None else items[:limit]
