"""The Azure backend's SAS URLs and its uploads in blocks, driven from outside the store: a browser
through SAS URLs, or the CLI block by block. :class:`Blocks` is a part of
:class:`~s3task.store.azure.AzureStore` (:class:`~s3task.store.base.MultipartStore`).

Azure has no multipart upload to start or abort: a block blob is made of blocks staged under ids
(Put Block), and a Put Block List names the ones that make the blob. So an "upload" here is a nonce
chosen by :meth:`Blocks.create_multipart`; part ``n`` of it is the block named ``<nonce>-<n, six
digits>`` (every id of one blob must have the same length), base64 on the wire as Azure wants. The
upload id carries the content type too (``<nonce>:<type>``), which the commit sets: Azure keeps
nothing about an upload until it is committed.

- A browser's whole-file PUT gets a SAS with the *create* permission only: it can make the blob but
  not replace one (403 once the blob exists), and it must send ``x-ms-blob-type: BlockBlob``
  (:meth:`Blocks.put_headers`).
- A part's URL is a SAS with the *write* permission (Azurite refuses Put Block under create alone),
  with ``comp=block&blockid=…`` added; the signature covers the blob, not the query's extra fields.
- Put Block answers with no ETag: the commit names blocks by their ids, so the parts' tags are not
  needed (``part_etags`` is False) and :meth:`Blocks.complete_multipart` ignores them.
- The commit is unconditional, as S3's CompleteMultipartUpload is: the caller (``tasks.inputs``)
  joins parts only into a task that still waits for its file, and the submit pins the ETag.
"""

from __future__ import annotations

import base64
import logging
import re
import secrets
import threading
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from azure.core import MatchConditions
from azure.storage.blob import BlobBlock, BlobSasPermissions, ContentSettings, generate_blob_sas

from ..errors import AccessDeniedByStore, AlreadyExists, InvalidInput, NotFound, StoreError
from .azure_errors import _translated
from .base import Part, check_key

#: Azure's limit on the blocks of one blob; part numbers run from 1 to this.
MAX_BLOCKS = 50_000
_NONCE = re.compile(r"[0-9a-f]{16}")
log = logging.getLogger(__name__)


#: A user delegation key is asked for this much longer than the URL that needs it (at most 7 days out,
#: Azure's longest): the URLs made meanwhile are signed with it, and another is asked for only once a URL
#: would outlive it.
DELEGATION_SECONDS = 6 * 3600
#: After Azure refuses a delegation key, none is asked for again for this long: no URLs are made meanwhile
#: (logged once), not one refused call per page.
REFUSAL_SECONDS = 300
#: After Azure does not answer for a key, the URLs asked for meanwhile fail at once (StoreUnavailable),
#: not each after its own timeout while the others wait.
FAILURE_SECONDS = 15
_LONGEST_KEY = timedelta(days=7, minutes=-1)
_SLACK = timedelta(minutes=10)


def sas_url(store: Any, key: str, permission: BlobSasPermissions, expires: int, **extra: Any) -> str | None:
    """The blob's URL with a SAS for ``permission``, expiring ``expires`` seconds from now by the store's
    clock (the one Azure checks it with); None when the store can sign none (:meth:`Blocks.signing`)."""
    signing = store.signing(store.now() + timedelta(seconds=expires))
    if signing is None:
        return None
    sas = generate_blob_sas(
        account_name=str(store.client.account_name),
        container_name=store.container,
        blob_name=check_key(key),
        permission=permission,
        **signing,
        **extra,
    )
    return f"{store.client.get_blob_client(key).url}?{sas}"


def block_name(nonce: str, number: int) -> str:
    """Part ``number``'s block id before base64 (the SDK encodes it; a URL carries it encoded)."""
    if not 1 <= number <= MAX_BLOCKS:
        raise ValueError(f"part numbers run from 1 to {MAX_BLOCKS}")
    return f"{nonce}-{number:06d}"


def _parse(upload_id: str) -> tuple[str, str]:
    nonce, _, content_type = upload_id.partition(":")
    if not _NONCE.fullmatch(nonce):
        raise InvalidInput(f"{upload_id!r} is not an upload id of this store")
    return nonce, content_type


class Blocks:
    """Uploads in blocks of ``self.container`` through ``self.client`` (record-sized calls) and
    ``self.data_client`` (the patient one, for the blocks' bytes)."""

    container: str
    client: Any
    data_client: Any
    #: Completing an upload needs no part's ETag (Put Block answers with none): blocks go by id.
    part_etags = False

    def now(self) -> Any: ...  # AzureStore's: the store's clock

    def service(self, *, retries: int = 2) -> Any: ...  # AzureStore's: the account's service client

    _delegation: tuple[Any, datetime] | None  # the user delegation key held, and when it expires
    _failed: tuple[datetime, StoreError] | None  # Azure refused a key or did not answer: until when, and why
    _delegation_lock: threading.Lock

    def signing(self, expiry: datetime) -> dict[str, Any] | None:
        """How to sign a SAS valid until ``expiry``: with the account key (a connection string's), else with a
        user delegation key the store's token asks Azure for (:meth:`delegation_key`; the SAS then expires
        when the key does, if sooner: only at 7 days); None if neither: the credential has no token, or Azure
        refuses the identity a key (:data:`REFUSAL_SECONDS`). ``StoreUnavailable`` if Azure does not answer."""
        credential = self.client.credential
        if account_key := getattr(credential, "account_key", None):
            return {"account_key": account_key, "expiry": expiry}
        if not hasattr(credential, "get_token"):
            return None
        try:
            key, key_expiry = self.delegation_key(expiry)
        except AccessDeniedByStore:
            return None
        return {"user_delegation_key": key, "expiry": min(expiry, key_expiry)}

    def delegation_key(self, until: datetime) -> tuple[Any, datetime]:
        """A user delegation key for URLs valid until ``until``, and when it expires; the one held while it
        lasts that long. ``AccessDeniedByStore`` when Azure refuses it (the identity needs the role Storage
        Blob Delegator), again without asking for :data:`REFUSAL_SECONDS`; ``StoreUnavailable`` (or another
        StoreError) when Azure fails, again without asking for :data:`FAILURE_SECONDS`."""
        with self._delegation_lock:  # one request at a time: the sessions waiting then share its key
            now = self.now()
            if self._failed is not None and now < self._failed[0]:
                failed = self._failed[1]
                raise type(failed)(failed.message)
            # A URL of (nearly) Azure's longest takes the key held if it lasts within _SLACK of that: one key
            # per _SLACK for week-long URLs, each expiring at most that much early (with its key).
            needed = min(until, now + _LONGEST_KEY - _SLACK)
            if self._delegation is None or self._delegation[1] < needed:
                self._delegation = self._new_key(now, until)
            return self._delegation

    def _new_key(self, now: datetime, until: datetime) -> tuple[Any, datetime]:
        # Azure gives no key that expires more than 7 days out: a URL asked for that long (the most s3task
        # makes) expires a minute early, with its key. Valid from a few minutes back: a clock behind Azure's
        # must not make the key not valid yet.
        expiry = min(until + timedelta(seconds=DELEGATION_SECONDS), now + _LONGEST_KEY)
        try:
            with _translated("user delegation key", "get"):
                key = self.service(retries=1).get_user_delegation_key(now - timedelta(minutes=5), expiry)
        except AccessDeniedByStore as e:
            refused = AccessDeniedByStore(
                f"Azure refused a user delegation key to sign URLs with ({e}): the identity needs the role "
                "Storage Blob Delegator on the storage account"
            )
            log.warning("no download or upload links for %d s: %s", REFUSAL_SECONDS, refused)
            self._failed = (self.now() + timedelta(seconds=REFUSAL_SECONDS), refused)
            raise refused from e
        except StoreError as e:  # the while counts from the failure: the request may have taken long
            self._failed = (self.now() + timedelta(seconds=FAILURE_SECONDS), e)
            raise
        self._failed = None
        return key, expiry

    def put_headers(self) -> dict[str, str]:
        """What a PUT to :meth:`presign_put`'s URL must send besides its Content-Type."""
        return {"x-ms-blob-type": "BlockBlob"}

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str | None:
        """A SAS URL that creates the blob in one Put Blob and cannot replace it (the create permission);
        None when the store can sign none (:meth:`signing`)."""
        return sas_url(self, key, BlobSasPermissions(create=True), expires)

    def create_multipart(self, key: str, *, content_type: str) -> str:
        """A new upload's id: nothing is sent (Azure keeps no upload until its blocks are committed)."""
        check_key(key)
        return f"{secrets.token_hex(8)}:{content_type}"

    def presign_part(self, key: str, upload_id: str, part_number: int, *, expires: int) -> str:
        name = block_name(_parse(upload_id)[0], part_number)
        url = sas_url(self, key, BlobSasPermissions(write=True), expires)
        if url is None:
            raise StoreError("this store cannot sign upload URLs (no account key, and no user delegation key)")
        return f"{url}&comp=block&blockid={quote(base64.b64encode(name.encode()).decode(), safe='')}"

    def upload_part(self, key: str, upload_id: str, part_number: int, body: bytes) -> str:
        """Stage one block; its "ETag" is its block id (Azure gives a block none)."""
        name = block_name(_parse(upload_id)[0], part_number)
        with _translated(key, "write"):
            self.data_client.get_blob_client(check_key(key)).stage_block(name, body, length=len(body))
        return name

    def list_parts(self, key: str, upload_id: str) -> list[Part]:
        """The upload's uncommitted blocks, by number (their tag is the block id: Azure keeps no checksum
        of a block); ``NotFound`` if the blob is missing with none, or was committed from this upload."""
        nonce = _parse(upload_id)[0]
        with _translated(key, "get"):
            committed, uncommitted = self.client.get_blob_client(check_key(key)).get_block_list("all")
        if any(str(b.id).startswith(nonce + "-") for b in committed):
            raise NotFound(f"{key}: upload {nonce} was completed")
        parts = {}
        for block in uncommitted:
            name = str(block.id)
            if name.startswith(nonce + "-") and name[len(nonce) + 1 :].isdigit():
                parts[int(name[len(nonce) + 1 :])] = Part(int(name[len(nonce) + 1 :]), int(block.size), name)
        return [parts[n] for n in sorted(parts)]

    def complete_multipart(self, key: str, upload_id: str, parts: list[tuple[int, str]]) -> str:
        """Commit the blocks of the parts' numbers (their tags are not needed); returns the blob's ETag.
        Unconditional, as on S3: an overwrite."""
        nonce, content_type = _parse(upload_id)
        blocks = [BlobBlock(block_name(nonce, n)) for n in sorted({n for n, _ in parts})]
        settings = ContentSettings(content_type=content_type) if content_type else None
        with _translated(key, "write"):
            resp = self.data_client.get_blob_client(check_key(key)).commit_block_list(blocks, content_settings=settings)
        return str(resp["etag"])

    def abort_multipart(self, key: str, upload_id: str) -> None:
        """Drop the uncommitted blocks where no blob is committed yet: commit an empty block list (which
        drops every uncommitted block of the blob) as a create, and delete that empty blob on its ETag.
        Where a blob is committed its blocks stay (dropping them means a commit, which would change the
        blob's ETag) until its next commit, or Azure drops them after a week."""
        _parse(upload_id)
        blob = self.client.get_blob_client(check_key(key))
        try:
            with _translated(key, "create"):
                resp = blob.commit_block_list([], match_condition=MatchConditions.IfMissing)
        except AlreadyExists:
            return
        try:
            with _translated(key, "update"):
                blob.delete_blob(etag=resp["etag"], match_condition=MatchConditions.IfNotModified)
        except StoreError:
            pass  # replaced meanwhile (someone else's blob now): not ours to delete
