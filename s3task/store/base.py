"""The narrow object-store protocol the core is written against.

Only ``s3task/store/`` knows about boto3 or the filesystem. Everything above
talks to an :class:`ObjectStore` and sees the exceptions in
:mod:`s3task.errors`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO, ClassVar, Literal, Protocol, runtime_checkable

PutKind = Literal["overwrite", "create", "update"]


@dataclass(frozen=True)
class PutMode:
    """How a put treats an existing object: a value, never a set of flags.

    ``PutMode.OVERWRITE`` writes unconditionally, ``PutMode.CREATE`` fails
    with :class:`~s3task.errors.AlreadyExists` if the key exists
    (If-None-Match ``*``), and ``PutMode.update(etag)`` fails with
    :class:`~s3task.errors.PreconditionFailed` unless the stored ETag is
    still ``etag`` (If-Match).
    """

    kind: PutKind
    etag: str | None = None

    OVERWRITE: ClassVar[PutMode]
    CREATE: ClassVar[PutMode]

    def __post_init__(self) -> None:
        if self.kind not in ("overwrite", "create", "update"):
            raise ValueError(f"unknown put mode {self.kind!r}")
        if self.kind == "update" and not self.etag:
            raise ValueError("an update needs the ETag it was read with")
        if self.kind != "update" and self.etag is not None:
            raise ValueError("only an update carries an ETag")

    @classmethod
    def update(cls, etag: str) -> PutMode:
        return cls("update", etag)


PutMode.OVERWRITE = PutMode("overwrite")
PutMode.CREATE = PutMode("create")


@dataclass(frozen=True)
class ObjectMeta:
    key: str
    size: int
    etag: str
    last_modified: datetime | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None


@dataclass(frozen=True)
class GetResult:
    body: bytes
    meta: ObjectMeta

    @property
    def etag(self) -> str:
        return self.meta.etag


class ObjectWriter(Protocol):
    """A file-like sink returned by :meth:`ObjectStore.open_write`.

    ``write`` takes any bytes-like object (the engine hands it views of
    Arrow's buffers) and must be done with it, or have copied it, when it returns.
    """

    #: The written object's ETag, once the ``open_write`` block has closed without error.
    etag: str

    def write(self, data: bytes | memoryview) -> int: ...


@runtime_checkable
class ObjectStore(Protocol):
    """What the core needs from an object store."""

    #: A short, credential-free description for logs and the UI.
    description: str

    def get(self, key: str, *, if_match: str | None = None) -> GetResult: ...

    def head(self, key: str) -> ObjectMeta: ...

    def put(
        self,
        key: str,
        body: bytes,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> str:
        """Write ``body``; return the new ETag."""
        ...

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        """Delete ``key``. Deleting a missing key is not an error unless ``if_match`` is given."""
        ...

    def list_keys(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]: ...

    def list_prefixes(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        """Common prefixes one ``/`` level below ``prefix`` (which should end in ``/``), ascending."""
        ...

    def open_read(self, key: str, *, if_match: str | None = None) -> AbstractContextManager[BinaryIO]: ...

    def open_write(
        self,
        key: str,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> AbstractContextManager[ObjectWriter]:
        """A streaming writer; the object appears only when the block exits cleanly.

        After the block, ``writer.etag`` holds the new ETag.
        """
        ...

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str | None: ...

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str | None: ...

    def now(self) -> datetime:
        """The store's clock (aware UTC)."""
        ...


def iter_chunks(stream: BinaryIO, size: int = 1 << 20) -> Iterator[bytes]:
    while chunk := stream.read(size):
        yield chunk


def check_key(key: str) -> str:
    """Refuse keys that could escape a prefix or a directory."""
    from ..errors import InvalidKey

    if (
        not isinstance(key, str)
        or not key
        or "\x00" in key
        or key.startswith("/")
        or any(part in ("", ".", "..") for part in key.split("/")[:-1])
        or key.split("/")[-1] in (".", "..")
    ):
        raise InvalidKey(f"invalid object key {key!r}")
    return key


@dataclass(frozen=True)
class Part:
    """One part a store holds of an unfinished multipart upload."""

    number: int
    size: int
    etag: str


@runtime_checkable
class MultipartStore(Protocol):
    """A store that takes an upload in parts (S3): a browser's, each part to its own presigned URL, or
    the CLI's, part by part; one that stopped can be continued from the parts the store lists.

    A capability, not a requirement: ``isinstance(store, MultipartStore)`` says
    whether a store has it (the local directory does not: browsers send it the
    file in one piece, through the app). Azure Blob has it too, as staged blocks
    and a block list (:mod:`.azure_uploads`), and GCS, as objects joined by compose (:mod:`.gcs_parts`).
    """

    #: Whether completing needs each part's ETag as the store answered its PUT (S3: yes; Azure names
    #: its blocks by id and answers a Put Block with no ETag, so a browser has none to report).
    part_etags: bool

    def create_multipart(self, key: str, *, content_type: str) -> str:
        """Start an upload of ``key``; returns its upload id."""
        ...

    def presign_part(self, key: str, upload_id: str, part_number: int, *, expires: int) -> str:
        """A PUT URL for one part (numbers from 1)."""
        ...

    def upload_part(self, key: str, upload_id: str, part_number: int, body: bytes) -> str:
        """Send one part; returns its ETag. :class:`~s3task.errors.NotFound` if the upload is gone."""
        ...

    def list_parts(self, key: str, upload_id: str) -> list[Part]:
        """The parts the store holds of the upload, by number (every page of them);
        :class:`~s3task.errors.NotFound` if the upload is gone (aborted or completed)."""
        ...

    def complete_multipart(self, key: str, upload_id: str, parts: list[tuple[int, str]]) -> str:
        """Join the parts (number, ETag) into the object; returns its ETag."""
        ...

    def abort_multipart(self, key: str, upload_id: str) -> None:
        """Drop the upload and its parts; an upload already gone is not an error."""
        ...


#: The metadata a store whose joined object's ETag says nothing of its parts (GCS: a generation) sets on the
#: object it joins from an upload in parts: the upload's id. So a caller that joined a file and stopped before
#: queueing it knows the file is there (s3task.tasks.resumable), as S3's ETag of a joined object tells it.
JOINED_FROM = "s3task-joined-from"


@runtime_checkable
class OpenUploads(Protocol):
    """A store that lists the uploads in parts still open under a prefix (S3's ListMultipartUploads), so
    that they can be counted and bounded (s3task.tasks.open_uploads); GCS lists its uploads' marker objects
    (:mod:`.gcs_parts`). A capability: Azure keeps no uploads to list (a blob's uncommitted blocks are one list,
    dropped by Azure after a week)."""

    def open_uploads(self, prefix: str) -> list[tuple[str, str]]:
        """Every upload still open under ``prefix``, as (key, upload id)."""
        ...


@runtime_checkable
class SizedUrls(Protocol):
    """A store whose upload URLs can bind the body's length (S3: ``Content-Length`` is a signed header of the
    SigV4 URL), so that a store which checks signatures refuses a PUT of any other length: SeaweedFS does
    (tests/contract/test_sized_urls.py); moto checks no signatures. A browser sends the length
    of what it sends itself, so nothing changes on its side. A capability: an Azure SAS binds no length."""

    def presign_sized_put(self, key: str, *, expires: int, content_type: str, size: int) -> str: ...

    def presign_sized_part(self, key: str, upload_id: str, part_number: int, *, expires: int, size: int) -> str: ...


@runtime_checkable
class PutHeaders(Protocol):
    """A store whose presigned PUT (:meth:`ObjectStore.presign_put`) must carry headers besides its
    Content-Type (Azure: ``x-ms-blob-type: BlockBlob``). A capability: S3's needs none."""

    def put_headers(self) -> dict[str, str]: ...


@runtime_checkable
class Leftovers(Protocol):
    """A store where a writer killed mid-write leaves something behind that s3task must drop itself.

    S3: the parts of an unfinished multipart upload (billed until aborted). The local directory:
    the staged file (``.s3task-meta/tmp/stage-*``) a killed process never got to remove.
    """

    def drop_unfinished(self, key: str) -> int:
        """Drop what unfinished writes of ``key`` left (S3: abort its multipart uploads); how many."""
        ...

    def sweep_unfinished(self, older_than: float) -> int:
        """Drop what unfinished writes of any key left, untouched for ``older_than`` seconds; how many."""
        ...


@runtime_checkable
class StartReader(Protocol):
    """A store that reads an object's start together with its size and ETag in one request
    (S3: a ranged GET). A capability: :func:`get_start` serves every store."""

    def get_start(self, key: str, size: int) -> GetResult:
        """The first ``size`` bytes of ``key`` (all of it when shorter) and the whole object's size and ETag."""
        ...


def get_start(store: ObjectStore, key: str, size: int) -> GetResult:
    """The first ``size`` bytes of ``key`` and the whole object's size and ETag: one request on a
    :class:`StartReader`; on any other store a HEAD, then a read of the start on that ETag (If-Match),
    so the bytes and the ETag are always of one version."""
    if isinstance(store, StartReader):
        return store.get_start(key, size)
    meta = store.head(key)
    parts: list[bytes] = []
    left = size
    with store.open_read(key, if_match=meta.etag) as f:
        while left > 0 and (chunk := f.read(left)):  # a network body may return short reads
            parts.append(chunk)
            left -= len(chunk)
    return GetResult(b"".join(parts), meta)
