"""The Google Cloud Storage backend (google-cloud-storage): ``S3TASK_STORE=gs://<bucket>/<prefix>``.

Credentials are Google's Application Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS``, the
workload's service account from the metadata server, ``gcloud auth application-default login``…).
With ``STORAGE_EMULATOR_HOST`` set (fake-gcs-server), requests go there with anonymous credentials,
as the client does; a service-account key file named by ``GOOGLE_APPLICATION_CREDENTIALS`` then
only signs URLs.

The version token is the object's **generation**: s3task's "ETag" of a GCS object is its generation as
a string (``"1712345678901234"``), and every condition is a generation precondition:

- a create is ``ifGenerationMatch=0``: 412 on an existing object → ``AlreadyExists``;
- an update, a conditional read or delete is ``ifGenerationMatch=<generation>``: 412 →
  ``PreconditionFailed``; 404 (the generation compared against is gone) → ``PreconditionFailed``;
  an ETag that is no generation (not a positive number) can match nothing → ``PreconditionFailed``,
  with no request;
- a conditional read also asks for that generation (``generation=``), and checks the generation it
  got: fake-gcs-server ignores ``ifGenerationMatch`` on reads (docs/STORES.md);
- missing object → ``NotFound``; missing bucket → ``BucketMissing``; 401/403 →
  ``AccessDeniedByStore`` naming the permission and the IAM role that grants it
  (:mod:`.gcs_errors`); timeouts, 408/429/5xx and connection errors → ``StoreUnavailable``.

Large files from a browser or the CLI go in parts, each an object of its own, joined by compose
(:mod:`.gcs_parts`). Listings page through ``list_blobs`` from ``startOffset`` (inclusive: what is not after
``start_after`` is dropped). Large writes are resumable uploads and reads are ranged, pinned to the
generation they started on (:mod:`.gcs_io`). Browser URLs are V4 signed URLs (:mod:`.gcs_urls`).
The store's clock follows the ``Date`` header of every response, as on S3.

Record reads and writes use short timeouts and a quick retry (the client's default retries for two
minutes); streaming data uses the client's patient defaults.
"""

from __future__ import annotations

import contextlib
import dataclasses
import email.utils
import os
import threading
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, BinaryIO, cast

import requests
from google.api_core.retry import Retry
from google.auth.credentials import AnonymousCredentials, Credentials
from google.auth.transport.requests import AuthorizedSession
from google.cloud import storage
from requests.adapters import HTTPAdapter

from ..clock import MACHINE, Clock
from ..errors import NotFound, PreconditionFailed, StoreError
from ..layout import DEFAULT_PREFIX, Layout
from .base import GetResult, ObjectMeta, PutMode, check_key
from .gcs_errors import status_of, translated
from .gcs_io import RangeReader, ResumableWriter
from .gcs_parts import PARTS_DIR, ComposedParts
from .gcs_requests import (
    RECORD_RETRY,
    RECORD_TIMEOUT,
    encode_metadata,
    pinned,
    precondition,
)
from .gcs_urls import SignedUrls
from .server_clock import ServerClock

#: A resumable upload's chunk (a multiple of 256 KiB), and a ranged read's.
CHUNK_SIZE = 8 * 1024 * 1024
#: The most names one listing request returns (GCS's own limit).
PAGE = 1000
#: Connections the session keeps open for reuse, as for S3 and Azure: two fan-outs of 16 record reads.
MAX_POOL_CONNECTIONS = 32
#: What Application Default Credentials are asked for: objects, the bucket's CORS rule (init), and
#: signing URLs through IAM's signBlob.
SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


class GcsStore(ComposedParts, SignedUrls):
    def __init__(
        self,
        bucket: str,
        *,
        credentials: Credentials | None = None,
        project: str | None = None,
        signer: Credentials | None = None,
        clock: Clock = MACHINE,
        parts_root: str = f"{DEFAULT_PREFIX}/{PARTS_DIR}/",
    ) -> None:
        """A store on ``bucket`` with ``credentials`` (anonymous if None: an emulator); ``signer`` signs
        URLs instead of ``credentials`` (an emulator takes no token, but a test's key signs); uploads in
        parts keep their parts under ``parts_root`` (:mod:`.gcs_parts`)."""
        self.clock = clock
        self._server_clock = ServerClock(clock)  # from the Date header of every answer
        self._local = threading.local()  # each thread's last response (its headers: see _last)
        self.credentials = credentials or AnonymousCredentials()  # type: ignore[no-untyped-call]
        self.session = AuthorizedSession(self.credentials)  # type: ignore[no-untyped-call]
        adapter = HTTPAdapter(pool_maxsize=MAX_POOL_CONNECTIONS)
        for scheme in ("http://", "https://"):
            self.session.mount(scheme, adapter)
        self.session.hooks["response"].append(self._note_response)
        self.client = storage.Client(project=project or "<none>", credentials=self.credentials, _http=self.session)
        self.bucket = self.client.bucket(bucket)
        self.bucket_name = bucket
        self.signer = signer
        self.parts_root = parts_root
        self.endpoint = str(self.client.api_endpoint)
        self.description = f"gs://{bucket} ({self.endpoint})"
        super().__init__()

    # --- the store's clock, and each thread's last response ------------------------------

    def _note_response(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self._local.response = response
        self._server_clock.note(response.headers.get("Date"))

    def last_response(self) -> requests.Response | None:
        """The last HTTP response this thread received: the client hands a download's bytes back, not
        its headers (custom metadata, Last-Modified, Content-Range), nor an upload's final answer."""
        return cast("requests.Response | None", getattr(self._local, "response", None))

    def now(self) -> datetime:
        return self._server_clock.now()

    # --- reads -----------------------------------------------------------------------------

    def get(self, key: str, *, if_match: str | None = None) -> GetResult:
        gen = pinned(key, if_match) if if_match is not None else None
        blob = self.bucket.blob(check_key(key), generation=gen)
        with translated(key, "update" if gen else "get"):
            body = blob.download_as_bytes(
                if_generation_match=gen, raw_download=True, timeout=RECORD_TIMEOUT, retry=RECORD_RETRY
            )
        meta = meta_of_download(key, self.last_response(), len(body))
        if gen is not None and meta.etag != str(gen):
            raise PreconditionFailed(f"{key} changed since it was read")
        return GetResult(body, meta)

    def head(self, key: str) -> ObjectMeta:
        blob = self.bucket.blob(check_key(key))
        with translated(key, "head"):
            blob.reload(timeout=RECORD_TIMEOUT, retry=RECORD_RETRY)
        return meta_of_blob(key, blob)

    def get_start(self, key: str, size: int) -> GetResult:
        """One ranged read; Content-Range carries the whole object's size, the headers its generation."""
        blob = self.bucket.blob(check_key(key))
        try:
            with translated(key, "get"):
                body = blob.download_as_bytes(
                    start=0, end=max(size, 1) - 1, raw_download=True, timeout=RECORD_TIMEOUT, retry=RECORD_RETRY
                )
        except StoreError as e:
            if e.__cause__ is None or status_of(e.__cause__) != 416:  # any range of an empty object
                raise
            return GetResult(b"", self.head(key))
        response = self.last_response()
        meta = meta_of_download(key, response, len(body))
        total = str(response.headers.get("Content-Range", "") if response is not None else "").rpartition("/")[2]
        if total.isdigit():
            meta = dataclasses.replace(meta, size=int(total))
        return GetResult(body[:size], meta)

    @contextlib.contextmanager
    def open_read(self, key: str, *, if_match: str | None = None) -> Iterator[BinaryIO]:
        gen = pinned(key, if_match) if if_match is not None else None
        reader = RangeReader(self, check_key(key), gen, CHUNK_SIZE)  # its first range is read here
        yield cast(BinaryIO, reader)

    def list_keys(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        with translated(prefix, "list"):
            listed = self._listing(prefix, start_after, fields="items(name),nextPageToken")
            return _after((b.name for b in listed), start_after, limit)

    def list_prefixes(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        """GCS lists prefixes in key order across pages; fake-gcs-server repeats all of them on every page.
        Either way the first ``limit`` of those seen so far are the answer once there are that many."""
        found: set[str] = set()
        after: list[str] = []
        with translated(prefix, "list"):
            listed = self._listing(prefix, start_after, delimiter="/", fields="prefixes,nextPageToken")
            for page in listed.pages:
                found.update(page.prefixes)
                after = sorted(p for p in found if start_after is None or p > start_after)
                if limit is not None and len(after) >= limit:
                    break
        return after[:limit] if limit is not None else after

    def _listing(self, prefix: str, start_after: str | None, **extra: Any) -> Any:
        return self.client.list_blobs(
            self.bucket,
            prefix=prefix,
            start_offset=start_after,
            page_size=PAGE,
            timeout=RECORD_TIMEOUT,
            retry=RECORD_RETRY,
            **extra,
        )

    # --- writes ----------------------------------------------------------------------------

    def put(
        self,
        key: str,
        body: bytes,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> str:
        return self.upload(key, body, mode, content_type, metadata, timeout=RECORD_TIMEOUT, retry=RECORD_RETRY)

    def upload(
        self,
        key: str,
        body: bytes,
        mode: PutMode,
        content_type: str | None,
        metadata: dict[str, str] | None,
        *,
        timeout: Any,
        retry: Retry,
    ) -> str:
        """One upload request with the put mode's precondition; the new generation."""
        condition = precondition(key, mode)
        blob = self.bucket.blob(check_key(key))
        blob.metadata = encode_metadata(metadata)
        with translated(key, mode.kind):
            blob.upload_from_string(
                body,
                content_type=content_type or "application/octet-stream",
                if_generation_match=condition,
                timeout=timeout,
                retry=retry,
            )
        return str(blob.generation)

    @contextlib.contextmanager
    def open_write(
        self,
        key: str,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Iterator[ResumableWriter]:
        writer = ResumableWriter(self, check_key(key), mode, content_type, metadata, CHUNK_SIZE)
        try:
            yield writer
            writer.finish()  # inside: a failed last chunk must stop the background sender too
        except BaseException:
            writer.abort()
            raise

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        gen = pinned(key, if_match) if if_match is not None else None
        try:  # with if_match a missing object is PreconditionFailed (op "update"), never NotFound
            with translated(check_key(key), "update" if gen else "delete"):
                self.bucket.delete_blob(key, if_generation_match=gen, timeout=RECORD_TIMEOUT, retry=RECORD_RETRY)
        except NotFound:
            pass  # deleting a missing key is not an error


def _after(names: Iterable[str], start_after: str | None, limit: int | None) -> list[str]:
    """The names strictly after ``start_after`` (``startOffset`` includes it), at most ``limit``; stops
    listing as soon as it has them."""
    out: list[str] = []
    for name in names:
        if limit is not None and len(out) >= limit:
            break
        if start_after is None or name > start_after:
            out.append(name)
    return out


def meta_of_blob(key: str, blob: Any) -> ObjectMeta:
    return ObjectMeta(
        key=key,
        size=int(blob.size or 0),
        etag=str(blob.generation),
        last_modified=blob.updated if isinstance(blob.updated, datetime) else None,
        metadata=dict(blob.metadata or {}),
        content_type=blob.content_type,
    )


def meta_of_download(key: str, response: requests.Response | None, size: int) -> ObjectMeta:
    """A download's object, from its response's headers (``x-goog-generation``, ``x-goog-meta-*``…)."""
    headers = response.headers if response is not None else requests.structures.CaseInsensitiveDict()
    modified = None
    with contextlib.suppress(TypeError, ValueError):
        modified = email.utils.parsedate_to_datetime(headers.get("Last-Modified", ""))
    metadata = {
        name.lower().removeprefix("x-goog-meta-"): value
        for name, value in headers.items()
        if name.lower().startswith("x-goog-meta-")
    }
    content_type = headers.get("Content-Type")
    return ObjectMeta(key, size, str(headers.get("x-goog-generation", "")), modified, metadata, content_type)


# --- opening from the environment ------------------------------------------------------


def open_gcs(bucket: str, prefix: str, clock: Clock = MACHINE) -> tuple[GcsStore, Layout]:
    """The store and layout of ``gs://<bucket>/<prefix>``, with Application Default Credentials (or, with
    ``STORAGE_EMULATOR_HOST`` set, anonymous ones: the module's docstring)."""
    layout = Layout(prefix.strip("/") or DEFAULT_PREFIX)
    parts_root = f"{layout.prefix}/{PARTS_DIR}/"
    project = os.environ.get("GOOGLE_CLOUD_PROJECT")
    if os.environ.get("STORAGE_EMULATOR_HOST"):
        signer = None
        if key_file := os.environ.get("GOOGLE_APPLICATION_CREDENTIALS"):
            from google.oauth2 import service_account

            signer = service_account.Credentials.from_service_account_file(key_file)  # type: ignore[no-untyped-call]
        store = GcsStore(
            bucket, project=project or "s3task-emulator", signer=signer, clock=clock, parts_root=parts_root
        )
        return store, layout
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        credentials, found_project = google.auth.default(scopes=SCOPES)
    except DefaultCredentialsError as e:
        raise StoreError(
            "gs:// needs Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, a service account "
            f"of the workload, or `gcloud auth application-default login`): {e}"
        ) from e
    project = project or found_project
    return GcsStore(bucket, credentials=credentials, project=project, clock=clock, parts_root=parts_root), layout
