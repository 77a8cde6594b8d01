"""The Azure Blob Storage backend (azure-storage-blob): ``S3TASK_STORE=az://<container>/<prefix>``.

Credentials, as :func:`open_azure` reads them (the first that is set wins):

- ``AZURE_STORAGE_CONNECTION_STRING``: a connection string (the endpoint and the account key;
  Azurite's is one of these);
- ``AZURE_STORAGE_ACCOUNT_URL`` (``https://<account>.blob.core.windows.net``), or
  ``AZURE_STORAGE_ACCOUNT`` (the account's name, as the Azure CLI reads it), signed in with
  ``DefaultAzureCredential`` of azure-identity (environment, workload identity, managed identity,
  the Azure CLI's login…). azure-identity is needed only for this.

Azure's quirks are normalised here (the errors in :mod:`.azure_errors`) and nowhere else, so the
core sees what it sees on S3:

- a create (``If-None-Match: *``) on an existing blob: 409 ``BlobAlreadyExists`` (S3: 412) →
  ``AlreadyExists``; a 412 on a create → ``AlreadyExists`` too;
- a stale ETag (``If-Match``) on an update, conditional read or delete, or block-list commit: 412
  ``ConditionNotMet`` → ``PreconditionFailed``; the same on a missing blob: 404 on Azure, 412 on
  Azurite → ``PreconditionFailed`` either way;
- missing blob → ``NotFound``; missing container → ``BucketMissing``; 401/403 →
  ``AccessDeniedByStore``; timeouts, 408/429/5xx and connection errors → ``StoreUnavailable``;
- a block-list commit naming a block the blob does not hold uncommitted: 400 ``InvalidBlockList`` →
  ``PartsChanged`` (S3's ``InvalidPart``);
- no ``StartAfter``: a listing starts at the prefix and skips what is not after ``start_after``
  (the continuation marker is opaque), so a later page costs the listing of the earlier ones;
- ETags are opaque (``"0x8DC…"``, not an MD5) and change on every write, even of the same bytes.
- a Put Blob create answers 409 on Azurite while the blob has only uncommitted blocks (an abandoned
  streamed write's), though no read sees a blob: :meth:`AzureStore.put` then creates by Put Block List.

Downloads are read-only SAS URLs; uploads are SAS URLs too, a whole file in one Put Blob or a large
one in blocks the app then commits (:mod:`.azure_uploads`). They are signed with the account key (a
connection string's), or, signed in with a token, with a user delegation key the token asks Azure for
(the identity needs the role Storage Blob Delegator; refused, no URLs are made and files go through
the app).

Metadata names are escaped (:func:`.azure_writer.encode_metadata`): Azure refuses s3task's hyphens.

Large outputs are streamed as block blobs (:mod:`.azure_writer`): blocks are staged, and the block
list is committed with the put mode's condition. The store's clock follows the ``Date`` header of
every response, as on S3.

Record reads and writes use a client with short timeouts and quick retries (the SDK's default
first backoff is 15 s, longer than a lease's grace); streaming data uses a second, patient client.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import Any, BinaryIO, cast

import requests
from azure.core.pipeline.transport import RequestsTransport
from azure.storage.blob import (
    BlobPrefix,
    BlobSasPermissions,
    BlobServiceClient,
    ContainerClient,
    ContentSettings,
    LinearRetry,
)
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from ..clock import MACHINE, Clock
from ..errors import AlreadyExists, NotFound, StoreError
from ..layout import DEFAULT_PREFIX, Layout
from .azure_errors import Reader, _translated, error_code
from .azure_uploads import Blocks, sas_url
from .azure_writer import (
    BlockWriter,
    _if_match,
    create_by_block_list,
    decode_metadata,
    encode_metadata,
    put_conditions,
)
from .base import GetResult, ObjectMeta, PutMode, check_key
from .server_clock import ServerClock

#: The size of a staged block of a streamed output (:meth:`AzureStore.open_write`).
BLOCK_SIZE = 8 * 1024 * 1024
#: The most names one listing request returns (Azure's own limit).
PAGE = 5000

#: Connections each client keeps open for reuse; requests' default is 10. One store serves every
#: thread of a process: as for S3 (:data:`.s3.MAX_POOL_CONNECTIONS`), 32 lets two fan-outs of 16
#: record reads run at once on warm connections instead of opening (and dropping) extra ones.
MAX_POOL_CONNECTIONS = 32


def _transport(connect: float, read: float) -> RequestsTransport:
    """The SDK's HTTP transport with our timeouts and a pool of :data:`MAX_POOL_CONNECTIONS`.

    Retries stay the pipeline's (``retry_policy``): the adapter retries nothing, as the SDK's own does.
    """
    session = requests.Session()
    adapter = HTTPAdapter(pool_maxsize=MAX_POOL_CONNECTIONS, max_retries=Retry(total=False, redirect=False))
    for scheme in ("http://", "https://"):
        session.mount(scheme, adapter)
    return RequestsTransport(session=session, session_owner=False, connection_timeout=connect, read_timeout=read)


def _record_options() -> dict[str, Any]:
    return {
        "transport": _transport(2, 4),
        "retry_policy": LinearRetry(backoff=1, random_jitter_range=1, retry_total=2),
    }


def _data_options() -> dict[str, Any]:
    return {
        "transport": _transport(5, 60),
        "retry_policy": LinearRetry(backoff=2, random_jitter_range=1, retry_total=4),
        # A download's first request fetches this much before the first read; the SDK's default is 32 MiB.
        "max_single_get_size": 4 * 1024 * 1024,
        "max_chunk_get_size": 4 * 1024 * 1024,
    }


class AzureStore(Blocks):
    def __init__(
        self,
        container: str,
        *,
        connection_string: str | None = None,
        account_url: str | None = None,
        credential: Any = None,
        clock: Clock = MACHINE,
    ) -> None:
        """A store on ``container``: from a connection string, or an account URL and a credential."""
        self.container = container
        self.clock = clock
        self._server_clock = ServerClock(clock)  # from the Date header of every answer
        hook: dict[str, Any] = {"raw_response_hook": self._note_date}
        if not (connection_string or account_url):
            raise StoreError("an Azure store needs a connection string or an account URL")
        try:  # the SDK refuses some settings with a ValueError (a malformed connection string, a token over http)
            made = [
                ContainerClient.from_connection_string(connection_string, container, **options, **hook)
                if connection_string
                else ContainerClient(str(account_url), container, credential=credential, **options, **hook)
                for options in (_record_options(), _data_options())
            ]
        except ValueError as e:
            raise StoreError(f"cannot set up the Azure client: {e}") from e
        self.client, self.data_client = made
        self._delegation, self._failed, self._delegation_lock = None, None, threading.Lock()
        self.account_url = self.client.url.rsplit("/", 1)[0]  # the account's endpoint (its service requests)
        self.description = f"az://{container} ({self.account_url})"

    def service(self, *, retries: int = 2) -> BlobServiceClient:
        """The account's service client (CORS rules, user delegation keys), with the store's endpoint,
        credential and record-sized timeouts; its answers' Date sets the store's clock too (a delegation
        key may be the first thing asked)."""
        options = {
            **_record_options(),
            "retry_policy": LinearRetry(backoff=1, random_jitter_range=1, retry_total=retries),
        }
        credential = self.client.credential
        return BlobServiceClient(self.account_url, credential=credential, raw_response_hook=self._note_date, **options)

    # --- the store's clock ------------------------------------------------

    def _note_date(self, response: Any) -> None:
        self._server_clock.note(response.http_response.headers.get("Date"))

    def now(self) -> datetime:
        return self._server_clock.now()

    # --- reads -------------------------------------------------------------

    def get(self, key: str, *, if_match: str | None = None) -> GetResult:
        with _translated(key, "get"):
            download = self.client.download_blob(check_key(key), **_if_match(if_match))
            body = download.readall()
        return GetResult(body, _meta(key, download.properties))

    def head(self, key: str) -> ObjectMeta:
        with _translated(key, "head"):
            props = self.client.get_blob_client(check_key(key)).get_blob_properties()
        return _meta(key, props)

    def get_start(self, key: str, size: int) -> GetResult:
        """One ranged read; its properties carry the whole blob's size (from Content-Range) and ETag."""
        try:
            with _translated(key, "get"):
                download = self.client.download_blob(check_key(key), offset=0, length=size)
                body = download.readall()
        except StoreError as e:
            if error_code(e.__cause__) != "InvalidRange":  # any range of an empty blob: 416
                raise
            return GetResult(b"", self.head(key))
        meta = _meta(key, download.properties)  # its size is the range's; Content-Range has the blob's
        total = str(download.properties.content_range or "").rpartition("/")[2]
        if total.isdigit():
            meta = dataclasses.replace(meta, size=int(total))
        return GetResult(body[:size], meta)

    @contextlib.contextmanager
    def open_read(self, key: str, *, if_match: str | None = None) -> Iterator[BinaryIO]:
        # The SDK pins the later ranges of one download to the ETag of its first response.
        with _translated(key, "get"):
            download = self.data_client.download_blob(check_key(key), **_if_match(if_match))
        yield cast(BinaryIO, Reader(download, key))  # read(n) is all callers use

    def list_keys(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        with _translated(prefix, "list"):
            names = (b.name for b in self.client.list_blobs(name_starts_with=prefix, results_per_page=PAGE))
            return _after(names, start_after, limit)

    def list_prefixes(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        with _translated(prefix, "list"):
            walked = self.client.walk_blobs(name_starts_with=prefix, delimiter="/", results_per_page=PAGE)
            return _after((b.name for b in walked if isinstance(b, BlobPrefix)), start_after, limit)

    # --- writes -------------------------------------------------------------

    def put(
        self,
        key: str,
        body: bytes,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> str:
        blob = self.client.get_blob_client(check_key(key))
        settings = ContentSettings(content_type=content_type) if content_type else None
        try:
            with _translated(key, mode.kind):
                resp = blob.upload_blob(
                    body,
                    blob_type="BlockBlob",
                    content_settings=settings,
                    metadata=encode_metadata(metadata),
                    **put_conditions(mode),
                )
        except AlreadyExists:
            # Azurite answers a Put Blob create with 409 BlobAlreadyExists while the blob has only the
            # uncommitted blocks of an abandoned streamed write (a killed attempt's), which no read sees
            # and nothing can drop but a commit. Where no blob is there to read, create it by a block
            # list: Put Block List with If-None-Match * commits past them (and drops them).
            if not self._only_uncommitted(key):
                raise
            return create_by_block_list(blob, body, settings, metadata)
        return str(resp["etag"])

    def _only_uncommitted(self, key: str) -> bool:
        try:
            self.head(key)
        except NotFound:
            return True
        return False

    @contextlib.contextmanager
    def open_write(
        self,
        key: str,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Iterator[BlockWriter]:
        writer = BlockWriter(self, check_key(key), mode, content_type, metadata, BLOCK_SIZE)
        try:
            yield writer
            writer.finish()  # inside: a failed last block must stop the background sender too
        except BaseException:
            writer.abort()
            raise

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        blob = self.client.get_blob_client(check_key(key))
        try:  # with if_match a missing blob is PreconditionFailed (azure_errors), never NotFound
            with _translated(key, "update" if if_match else "delete"):
                blob.delete_blob(**_if_match(if_match))
        except NotFound:
            pass  # deleting a missing key is not an error

    # --- URLs ------------------------------------------------------------------

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str | None:
        """A read-only SAS URL of the blob; None when the store can sign none (:meth:`Blocks.signing`)."""
        disposition = None
        if filename:
            safe = "".join(ch for ch in filename if ch.isalnum() or ch in " ._-") or "download"
            disposition = f'attachment; filename="{safe}"'
        return sas_url(self, key, BlobSasPermissions(read=True), expires, content_disposition=disposition)


def _after(names: Iterator[str], start_after: str | None, limit: int | None) -> list[str]:
    """The names strictly after ``start_after`` (Azure lists in key order but cannot start there), at most
    ``limit``; stops listing as soon as it has them."""
    out: list[str] = []
    for name in names:
        if limit is not None and len(out) >= limit:
            break
        if start_after is None or name > start_after:
            out.append(name)
    return out


def _meta(key: str, props: Any) -> ObjectMeta:
    lm = props.last_modified
    settings = props.content_settings
    return ObjectMeta(
        key=key,
        size=int(props.size or 0),
        etag=str(props.etag),
        last_modified=lm if isinstance(lm, datetime) else None,
        metadata=decode_metadata(props.metadata),
        content_type=settings.content_type if settings is not None else None,
    )


# --- opening from the environment ------------------------------------------------------


def open_azure(container: str, prefix: str, clock: Clock = MACHINE) -> tuple[AzureStore, Layout]:
    """The store and layout of ``az://<container>/<prefix>``, with the credentials of the environment
    (the module's docstring says which, in which order)."""
    layout = Layout(prefix.strip("/") or DEFAULT_PREFIX)
    connection_string = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    if connection_string:
        return AzureStore(container, connection_string=connection_string, clock=clock), layout
    account_url = os.environ.get("AZURE_STORAGE_ACCOUNT_URL")
    if not account_url and (account := os.environ.get("AZURE_STORAGE_ACCOUNT")):
        account_url = f"https://{account}.blob.core.windows.net"
    if not account_url:
        raise StoreError(
            "az:// needs AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_URL (or AZURE_STORAGE_ACCOUNT) "
            "with a credential DefaultAzureCredential finds"
        )
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError as e:
        raise StoreError(
            "signing in to an Azure account URL needs azure-identity (pip install azure-identity), "
            "or set AZURE_STORAGE_CONNECTION_STRING"
        ) from e
    credential = DefaultAzureCredential()
    return AzureStore(container, account_url=account_url, credential=credential, clock=clock), layout
