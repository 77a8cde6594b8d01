"""The GCS backend's uploads in parts, driven from outside the store: a browser through V4 signed part URLs,
or the CLI part by part. :class:`ComposedParts` is a part of :class:`~s3task.store.gcs.GcsStore`
(:class:`~s3task.store.base.MultipartStore`, :class:`~s3task.store.base.OpenUploads`).

Each part is an object of its own, joined by **compose** (the official client's ``Blob.compose``), the way
GCS itself documents parallel uploads. Why not the two other ways GCS has (docs/STORES.md says what
fake-gcs-server 1.54.0 answered): its XML API multipart upload is not served by fake-gcs-server 1.54.0
(``POST …?uploads`` answers 400), so nothing of it could be tested; and a JSON-API resumable session
takes its bytes in order, one request at a time, and fake-gcs-server 1.54.0 commits a session's bytes as
the object when asked how many it holds (``Content-Range: bytes */SIZE``), so neither asking nor
continuing could be tested honestly.

An upload of ``key`` lives under ``<parts_root><key>/<nonce>/``: a marker object ``upload`` (made by
:meth:`ComposedParts.create_multipart`; the upload exists while it does), and part ``n`` as ``<n, five
digits>``. The parts root is under the store's prefix (``<prefix>/parts/``, :func:`~s3task.store.gcs.open_gcs`),
where a task id never is, so no task listing or inbox sees a part; ``s3task init`` sets a lifecycle rule
that deletes what is there after :data:`RULE_DAYS` days (:mod:`.gcs_bucket`). The upload id is
``<nonce>:<content type>`` (the type is set on the joined object, as on Azure).

- A part is written whole or not at all (one upload request), and a part sent again replaces it, as on S3.
- The join composes the parts, 32 at a time (GCS's most per request; more parts are composed in rounds
  into objects of the upload's own), into ``key`` **only if it is absent** (``ifGenerationMatch=0``: 412
  → ``AlreadyExists``), then deletes the upload: its parts, rounds and marker. The object names the upload
  in its metadata (:data:`~s3task.store.base.JOINED_FROM`): a ``--resume`` after a join whose task was not
  queued finds the file there and only queues it.
- A part's "ETag" is its MD5 in hex, as GCS lists it (S3's is the same for a part sent in one piece), so
  ``submit --resume`` checks the parts held against the file's bytes as on S3. Joining needs none of them:
  the parts go by number (``part_etags`` is False), so a browser reports none.
"""

from __future__ import annotations

import base64
import contextlib
import re
import secrets
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import BucketMissing, InvalidInput, NotFound, PartsChanged, StoreError, StoreUnavailable
from .base import JOINED_FROM, Part, check_key
from .gcs_errors import translated
from .gcs_requests import DATA_RETRY, DATA_TIMEOUT, RECORD_RETRY, RECORD_TIMEOUT

#: The most parts of one upload (five digits in their names; s3task sends at most 1,000).
MAX_PARTS = 99_999
#: The most objects one compose request joins (GCS's own limit).
COMPOSE_MAX = 32
#: Where parts go under the store's prefix.
PARTS_DIR = "parts"
#: What the bucket's lifecycle rule (``s3task init``) leaves under the parts root before deleting it: a
#: week, as long as a task waiting for its upload is offered to be continued (s3task.tasks.resumable).
RULE_DAYS = 7
MARKER = "upload"
#: Deletes in flight at once when an upload is dropped.
PARALLEL_DELETES = 8
_NONCE = re.compile(r"[0-9a-f]{16}")


def _parse(upload_id: str) -> tuple[str, str]:
    nonce, _, content_type = upload_id.partition(":")
    if not _NONCE.fullmatch(nonce):
        raise InvalidInput(f"{upload_id!r} is not an upload id of this store")
    return nonce, content_type


def _check_number(number: int) -> int:
    if not 1 <= number <= MAX_PARTS:
        raise ValueError(f"part numbers run from 1 to {MAX_PARTS}")
    return number


def md5_hex(md5_base64: str | None) -> str:
    """GCS's MD5 of an object (base64) in hex, as S3 gives a part's ETag; "" if it has none."""
    return base64.b64decode(md5_base64).hex() if md5_base64 else ""


class ComposedParts:
    """Uploads in parts of ``self.bucket`` through ``self.client``, under ``self.parts_root``."""

    bucket: Any
    client: Any
    parts_root: str
    #: Joining names parts by number: a browser need not report any part's tag.
    part_etags = False

    signed_url: Callable[..., str | None]  # SignedUrls': a V4 signed URL of an object, None if nothing signs

    def _upload_prefix(self, key: str, nonce: str) -> str:
        return f"{self.parts_root}{check_key(key)}/{nonce}/"

    def _part_name(self, key: str, upload_id: str, number: int) -> str:
        return f"{self._upload_prefix(key, _parse(upload_id)[0])}{_check_number(number):05d}"

    def create_multipart(self, key: str, *, content_type: str) -> str:
        """A new upload of ``key``: its marker object, made only if absent. Returns its id."""
        nonce = secrets.token_hex(8)
        marker = self.bucket.blob(self._upload_prefix(key, nonce) + MARKER)
        with translated(marker.name, "create"):
            marker.upload_from_string(b"", if_generation_match=0, timeout=RECORD_TIMEOUT, retry=RECORD_RETRY)
        return f"{nonce}:{content_type}"

    def presign_part(self, key: str, upload_id: str, part_number: int, *, expires: int) -> str:
        """A signed PUT URL of the part's object: no header to send, and a part sent again replaces it."""
        url = self.signed_url(self._part_name(key, upload_id, part_number), expires, method="PUT")
        if url is None:
            raise StoreError("this store cannot sign upload URLs now (no key, and IAM does not sign for it)")
        return url

    def upload_part(self, key: str, upload_id: str, part_number: int, body: bytes) -> str:
        """Send one part whole; its MD5 in hex. ``NotFound`` if the upload is gone (its marker deleted)."""
        name = self._part_name(key, upload_id, part_number)
        marker = self.bucket.blob(self._upload_prefix(key, _parse(upload_id)[0]) + MARKER)
        with translated(marker.name, "head"):
            there = marker.exists(timeout=RECORD_TIMEOUT, retry=RECORD_RETRY)
        if not there:
            raise NotFound(f"{key}: upload {upload_id} is gone (completed or aborted)")
        blob = self.bucket.blob(name)
        with translated(name, "overwrite"):
            blob.upload_from_string(body, timeout=DATA_TIMEOUT, retry=DATA_RETRY)
        return md5_hex(blob.md5_hash)

    def _listed(self, prefix: str) -> list[Any]:
        with translated(prefix, "list"):
            return list(
                self.client.list_blobs(
                    self.bucket, prefix=prefix, fields="items(name,size,md5Hash),nextPageToken",
                    timeout=RECORD_TIMEOUT, retry=RECORD_RETRY,
                )
            )  # fmt: skip

    def list_parts(self, key: str, upload_id: str) -> list[Part]:
        """The parts the store holds of the upload, by number, each with its size and MD5 (hex); ``NotFound``
        if the upload is gone (completed or aborted: no marker)."""
        prefix = self._upload_prefix(key, _parse(upload_id)[0])
        listed = self._listed(prefix)
        if not any(b.name == prefix + MARKER for b in listed):
            raise NotFound(f"{key}: upload {upload_id} is gone (completed or aborted)")
        parts = [
            Part(int(tail), int(b.size or 0), md5_hex(b.md5_hash))
            for b in listed
            if (tail := b.name[len(prefix) :]).isdigit() and 1 <= int(tail) <= MAX_PARTS
        ]
        return sorted(parts, key=lambda p: p.number)

    def complete_multipart(self, key: str, upload_id: str, parts: list[tuple[int, str]]) -> str:
        """Compose the parts of the numbers given (their tags are not needed) into ``key``, only if absent;
        then drop the upload. Returns the object's generation."""
        nonce, content_type = _parse(upload_id)
        prefix = self._upload_prefix(key, nonce)
        sources = [self.bucket.blob(self._part_name(key, upload_id, n)) for n in sorted({n for n, _ in parts})]
        if not sources:
            raise InvalidInput(f"{key}: no parts to join")
        numbers = sorted({n for n, _ in parts})
        # Parts deleted since they were sent (the bucket's rule for a week-old upload): said before composing, as
        # GCS's compose says only "not found" (fake-gcs-server a 500, retried); one deleted meanwhile is caught below.
        self._refuse_gone(key, upload_id, numbers)
        rounds = 0
        try:
            while len(sources) > COMPOSE_MAX:  # compose in rounds, into objects of the upload's own
                joined = []
                for i in range(0, len(sources), COMPOSE_MAX):
                    name = f"{prefix}r{rounds}-{i // COMPOSE_MAX:05d}"
                    joined.append(self._compose(name, sources[i : i + COMPOSE_MAX]))
                sources, rounds = joined, rounds + 1
            blob = self.bucket.blob(check_key(key))
            blob.content_type, blob.metadata = content_type or None, {JOINED_FROM: upload_id}
            with translated(key, "create"):
                blob.compose(sources, if_generation_match=0, timeout=DATA_TIMEOUT, retry=DATA_RETRY)
        except BucketMissing as e:  # compose's 404 names no object: a part gone, a round's object gone, the bucket
            self._refuse_gone(key, upload_id, numbers)  # a part gone is named; a bucket gone fails this listing
            raise StoreUnavailable(  # as a store failing mid-join: an upload noted on its task is kept, to go again
                f"an object the join of {key} was composing was deleted while it ran; nothing was joined, and every "
                "part is still held"
            ) from e
        with contextlib.suppress(StoreError):  # joined: what is left of the upload goes (else the bucket's rule)
            self._drop(prefix)
        return str(blob.generation)

    def _refuse_gone(self, key: str, upload_id: str, numbers: list[int]) -> None:
        """``PartsChanged`` if the store does not hold each of the parts ``numbers`` (one deleted after it was
        sent: by the bucket's rule, or by hand); ``NotFound`` if the upload itself is gone."""
        held = {p.number for p in self.list_parts(key, upload_id)}
        gone = [n for n in numbers if n not in held]
        if gone:
            raise PartsChanged(f"the store does not hold parts {gone} of {key} any more")

    def _compose(self, name: str, sources: list[Any]) -> Any:
        """One round's object, of the upload's own (a round sent again replaces it)."""
        blob = self.bucket.blob(name)
        with translated(name, "overwrite"):
            blob.compose(sources, timeout=DATA_TIMEOUT, retry=DATA_RETRY)
        return blob

    def abort_multipart(self, key: str, upload_id: str) -> None:
        """Delete the upload: its parts, the objects of its rounds, its marker. One already gone is no error."""
        self._drop(self._upload_prefix(key, _parse(upload_id)[0]))

    def _drop(self, prefix: str) -> None:
        names = [b.name for b in self._listed(prefix)]
        parts, markers = [n for n in names if n != prefix + MARKER], [n for n in names if n == prefix + MARKER]
        with ThreadPoolExecutor(PARALLEL_DELETES, thread_name_prefix="s3task-gcs-drop") as pool:
            list(pool.map(self._delete_one, parts))
        for name in markers:  # last: while any part is left, the upload is still listed as open
            self._delete_one(name)

    def _delete_one(self, name: str) -> None:
        with contextlib.suppress(NotFound), translated(name, "delete"):
            self.bucket.delete_blob(name, timeout=RECORD_TIMEOUT, retry=RECORD_RETRY)

    # --- what is open (s3task.store.base.OpenUploads), and what unfinished writes left (s3task.tasks.unsent) ---

    def open_uploads(self, prefix: str) -> list[tuple[str, str]]:
        """Every upload still open of a key under ``prefix``, as (key, upload id): one per marker."""
        root = self.parts_root + prefix
        found = []
        for blob in self._listed(root):
            upload, _, tail = blob.name[len(self.parts_root) :].rpartition("/")
            key, _, nonce = upload.rpartition("/")
            if tail == MARKER and key and _NONCE.fullmatch(nonce):
                found.append((key, nonce))
        return found

    def drop_unfinished(self, key: str) -> int:
        """Delete every upload of ``key`` still open (whoever started it); how many."""
        uploads = [u for k, u in self.open_uploads(key) if k == key]
        for nonce in uploads:
            self._drop(self._upload_prefix(key, nonce))
        return len(uploads)
