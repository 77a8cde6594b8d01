"""The S3 backend (boto3): any endpoint boto3 can reach.

``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` and the normal credential
chain work unchanged. S3's quirks are normalised here and nowhere else:

- 412 on a create → ``AlreadyExists``; on an update or conditional read →
  ``PreconditionFailed``;
- 404 on an update → ``PreconditionFailed`` (the object we compared against
  is gone);
- 409 ``ConditionalRequestConflict`` on an update → ``Conflict`` (the caller
  re-reads and recomputes; we never resend the old body), on a create →
  resend;
- missing key → ``NotFound``; missing bucket → ``BucketMissing``;
- connection errors, timeouts and 5xx → ``StoreUnavailable``.

Record reads and writes use a client with short timeouts, so one slow call
cannot outlive a lease; streaming data uses a second, patient client.
"""

from __future__ import annotations

import contextlib
import email.utils
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, BinaryIO

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from .. import clock
from ..errors import (
    AccessDeniedByStore,
    AlreadyExists,
    BucketMissing,
    Conflict,
    NotFound,
    PreconditionFailed,
    StoreError,
    StoreUnavailable,
)
from .background import Background
from .base import GetResult, ObjectMeta, PutMode, check_key

PART_SIZE = 8 * 1024 * 1024
MAX_PARTS = 10_000
_CREATE_RESENDS = 5

_RECORD_CONFIG = Config(
    connect_timeout=2,
    read_timeout=4,
    retries={"mode": "standard", "total_max_attempts": 3},
    signature_version="s3v4",
)
_DATA_CONFIG = Config(
    connect_timeout=5,
    read_timeout=60,
    retries={"mode": "standard", "total_max_attempts": 5},
    signature_version="s3v4",
)


class S3Store:
    def __init__(self, bucket: str, *, client: Any = None, data_client: Any = None, session: Any = None) -> None:
        self.bucket = bucket
        try:
            session = session or boto3.session.Session()
            self.client = client or session.client("s3", config=_RECORD_CONFIG)
            self.data_client = data_client or (client or session.client("s3", config=_DATA_CONFIG))
        except BotoCoreError as e:  # e.g. AWS_PROFILE names no profile: a store error, not a crash
            raise StoreError(f"cannot set up the S3 client: {e}") from e
        endpoint = self.client.meta.endpoint_url
        self.description = f"s3://{bucket} ({endpoint})"
        self._offset = 0.0  # store clock minus our wall clock, from the Date header
        self._offset_lock = threading.Lock()
        for c in {id(self.client): self.client, id(self.data_client): self.data_client}.values():
            c.meta.events.register("after-call.s3", self._note_date)

    # --- the store's clock ------------------------------------------------

    def _note_date(self, http_response: Any = None, **_: Any) -> None:
        header = getattr(http_response, "headers", {}).get("Date") if http_response is not None else None
        if not header:
            return
        try:
            server = email.utils.parsedate_to_datetime(header).timestamp()
        except (TypeError, ValueError):
            return
        # Date has one-second resolution; +0.5 centres the error.
        with self._offset_lock:
            self._offset = server + 0.5 - clock.wall()

    def now(self) -> datetime:
        return datetime.fromtimestamp(clock.wall() + self._offset, tz=UTC)

    # --- reads -------------------------------------------------------------

    def get(self, key: str, *, if_match: str | None = None) -> GetResult:
        kwargs = {"IfMatch": if_match} if if_match else {}
        with _translated(key, "get"):
            resp = self.client.get_object(Bucket=self.bucket, Key=check_key(key), **kwargs)
            body = resp["Body"].read()
        return GetResult(body, _meta(key, resp))

    def head(self, key: str) -> ObjectMeta:
        with _translated(key, "head"):
            resp = self.client.head_object(Bucket=self.bucket, Key=check_key(key))
        return _meta(key, resp)

    @contextlib.contextmanager
    def open_read(self, key: str, *, if_match: str | None = None) -> Iterator[BinaryIO]:
        kwargs = {"IfMatch": if_match} if if_match else {}
        with _translated(key, "get"):
            resp = self.data_client.get_object(Bucket=self.bucket, Key=check_key(key), **kwargs)
        body = resp["Body"]
        try:
            yield _Reader(body, key)
        finally:
            body.close()

    def list_keys(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        return [c["Key"] for c in self._list(prefix, start_after, limit, delimiter=None)]

    def list_prefixes(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        return [c["Prefix"] for c in self._list(prefix, start_after, limit, delimiter="/")]

    def _list(self, prefix: str, start_after: str | None, limit: int | None, delimiter: str | None) -> list[dict]:
        out: list[dict] = []
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        if delimiter:
            kwargs["Delimiter"] = delimiter
        if start_after:
            kwargs["StartAfter"] = start_after
        field = "CommonPrefixes" if delimiter else "Contents"
        while limit is None or len(out) < limit:
            if limit is not None:
                kwargs["MaxKeys"] = min(1000, limit - len(out))
            with _translated(prefix, "list"):
                resp = self.client.list_objects_v2(**kwargs)
            out.extend(resp.get(field, []))
            if not resp.get("IsTruncated"):
                break
            kwargs.pop("StartAfter", None)
            kwargs["ContinuationToken"] = resp["NextContinuationToken"]
        return out if limit is None else out[:limit]

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
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": check_key(key), "Body": body}
        if content_type:
            kwargs["ContentType"] = content_type
        if metadata:
            kwargs["Metadata"] = metadata
        return self._conditional(key, mode, self.client.put_object, kwargs)

    def _conditional(self, key: str, mode: PutMode, call: Any, kwargs: dict[str, Any]) -> str:
        if mode.kind == "create":
            kwargs["IfNoneMatch"] = "*"
        elif mode.kind == "update":
            kwargs["IfMatch"] = mode.etag
        for _ in range(_CREATE_RESENDS):
            try:
                with _translated(key, mode.kind):
                    return call(**kwargs)["ETag"]
            except Conflict:
                # A 409 on a create means "another conditional write was in
                # flight": nothing of ours landed and If-None-Match still
                # protects us, so the same request can be sent again. On an
                # update the caller must re-read instead.
                if mode.kind != "create":
                    raise
                time.sleep(0.05)
        raise StoreUnavailable(f"{key}: the store kept reporting conflicting writes")

    @contextlib.contextmanager
    def open_write(
        self,
        key: str,
        mode: PutMode,
        *,
        content_type: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Iterator[_MultipartWriter]:
        writer = _MultipartWriter(self, check_key(key), mode, content_type, metadata)
        try:
            yield writer
            writer.finish()  # inside: a failed last part must abort the upload too
        except BaseException:
            writer.abort()
            raise

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        kwargs = {"IfMatch": if_match} if if_match else {}
        with _translated(key, "update" if if_match else "delete"):
            self.client.delete_object(Bucket=self.bucket, Key=check_key(key), **kwargs)

    # --- presigned URLs ------------------------------------------------------

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str | None:
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": check_key(key)}
        if filename:
            safe = "".join(ch for ch in filename if ch.isalnum() or ch in " ._-") or "download"
            params["ResponseContentDisposition"] = f'attachment; filename="{safe}"'
        return self.client.generate_presigned_url("get_object", Params=params, ExpiresIn=expires)

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str | None:
        params = {"Bucket": self.bucket, "Key": check_key(key), "ContentType": content_type}
        return self.client.generate_presigned_url("put_object", Params=params, ExpiresIn=expires)

    # --- multipart uploads by someone else (a browser), through presigned part URLs ---

    def create_multipart(self, key: str, *, content_type: str) -> str:
        """Start a multipart upload of ``key``; the type is fixed here, parts carry none. Returns its id."""
        with _translated(key, "write"):
            resp = self.client.create_multipart_upload(Bucket=self.bucket, Key=check_key(key), ContentType=content_type)
        return resp["UploadId"]

    def presign_part(self, key: str, upload_id: str, part_number: int, *, expires: int) -> str:
        if not 1 <= part_number <= MAX_PARTS:
            raise ValueError(f"part numbers run from 1 to {MAX_PARTS}")
        params = {"Bucket": self.bucket, "Key": check_key(key), "UploadId": upload_id, "PartNumber": part_number}
        return self.client.generate_presigned_url("upload_part", Params=params, ExpiresIn=expires)

    def complete_multipart(self, key: str, upload_id: str, parts: list[tuple[int, str]]) -> str:
        """Join the parts (number, ETag) into the object; returns its ETag. Unconditional: an overwrite."""
        listing = {"Parts": [{"PartNumber": n, "ETag": etag} for n, etag in sorted(parts)]}
        with _translated(key, "write"):
            resp = self.data_client.complete_multipart_upload(
                Bucket=self.bucket, Key=check_key(key), UploadId=upload_id, MultipartUpload=listing
            )
        return resp["ETag"]

    def abort_multipart(self, key: str, upload_id: str) -> None:
        """Drop the upload and its parts; an upload that is already gone is not an error."""
        try:
            with _translated(key, "delete"):
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=check_key(key), UploadId=upload_id)
        except NotFound:
            pass


class _Reader:
    """A file-like view of a streaming body whose errors are store errors."""

    def __init__(self, body: Any, key: str) -> None:
        self._body = body
        self._key = key
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        with _translated(self._key, "get"):
            return self._body.read(None if n is None or n < 0 else n)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True
        self._body.close()


class _MultipartWriter:
    """Buffers one part; small objects become one PUT, large ones a multipart upload.

    Parts are uploaded by a thread of their own (:mod:`.background`), one
    part waiting at most behind the one in flight, so the caller goes on
    producing the next part meanwhile. The upload is completed with the put
    mode's condition (If-None-Match on a create), so a second writer of the
    same output cannot replace the first.
    """

    def __init__(self, store: S3Store, key: str, mode: PutMode, content_type: str | None, metadata: dict | None):
        self.store, self.key, self.mode = store, key, mode
        self.content_type, self.metadata = content_type, metadata
        self._buf = bytearray()
        self._upload_id: str | None = None
        self._parts: list[dict] = []
        self._sender: Background | None = None
        self.etag = ""
        self.size = 0

    def write(self, data: bytes | memoryview) -> int:
        size = memoryview(data).nbytes
        self._buf += data  # a copy: the caller may reuse its buffer once this returns
        self.size += size
        while len(self._buf) >= PART_SIZE:
            with memoryview(self._buf) as view:
                part = bytes(view[:PART_SIZE])
            del self._buf[:PART_SIZE]
            if self._sender is None:
                self._sender = Background(self._send_part, depth=1, name="s3task-upload")
            self._sender.write(part)
        return size

    def _send_part(self, data: bytes) -> None:
        c = self.store.data_client
        if self._upload_id is None:
            kwargs: dict[str, Any] = {"Bucket": self.store.bucket, "Key": self.key}
            if self.content_type:
                kwargs["ContentType"] = self.content_type
            if self.metadata:
                kwargs["Metadata"] = self.metadata
            with _translated(self.key, "write"):
                self._upload_id = c.create_multipart_upload(**kwargs)["UploadId"]
        number = len(self._parts) + 1
        with _translated(self.key, "write"):
            resp = c.upload_part(
                Bucket=self.store.bucket, Key=self.key, UploadId=self._upload_id, PartNumber=number, Body=data
            )
        self._parts.append({"PartNumber": number, "ETag": resp["ETag"]})

    def finish(self) -> None:
        if self._sender is None:  # never filled a part: one PUT
            self.etag = self.store.put(
                self.key, bytes(self._buf), self.mode, content_type=self.content_type, metadata=self.metadata
            )
            return
        if self._buf:
            self._sender.write(bytes(self._buf))
            self._buf.clear()
        self._sender.close()  # every part uploaded, or the first upload error raised here (open_write aborts)
        self._sender = None
        kwargs = {
            "Bucket": self.store.bucket,
            "Key": self.key,
            "UploadId": self._upload_id,
            "MultipartUpload": {"Parts": self._parts},
        }
        try:
            self.etag = self.store._conditional(
                self.key, self.mode, self.store.data_client.complete_multipart_upload, kwargs
            )
        except StoreError:
            self.abort()
            raise

    def abort(self) -> None:
        if self._sender is not None:
            sender, self._sender = self._sender, None
            sender.abort()  # waits for the part in flight; drops the rest
        if self._upload_id is None:
            return
        with contextlib.suppress(Exception):
            self.store.data_client.abort_multipart_upload(
                Bucket=self.store.bucket, Key=self.key, UploadId=self._upload_id
            )
        self._upload_id = None


def _meta(key: str, resp: dict) -> ObjectMeta:
    lm = resp.get("LastModified")
    return ObjectMeta(
        key=key,
        size=int(resp.get("ContentLength", 0)),
        etag=resp["ETag"],
        last_modified=lm if isinstance(lm, datetime) else None,
        metadata=dict(resp.get("Metadata") or {}),
        content_type=resp.get("ContentType"),
    )


@contextlib.contextmanager
def _translated(key: str, op: str) -> Iterator[None]:
    """Map botocore errors to s3task's, keeping the original as ``__cause__``.

    ``op`` is how the call was meant: ``create`` / ``update`` / ``overwrite``
    / ``get`` / ``head`` / ``list`` / ``delete`` / ``write``.
    """
    try:
        yield
    except ClientError as e:
        raise _from_client_error(e, key, op) from e
    except BotoCoreError as e:
        raise StoreUnavailable(f"the store did not answer for {key}: {e}") from e


def _from_client_error(e: ClientError, key: str, op: str) -> StoreError:
    code = str(e.response.get("Error", {}).get("Code", ""))
    status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    if status == 412 or code == "PreconditionFailed":
        if op == "create":
            return AlreadyExists(f"{key} already exists")
        return PreconditionFailed(f"{key} changed since it was read")
    if status == 409 and code == "ConditionalRequestConflict":
        return Conflict(f"{key}: a concurrent conditional write is in progress")
    if code == "NoSuchBucket":
        return BucketMissing(f"the bucket does not exist ({e})")
    if status == 404 or code in ("NoSuchKey", "NotFound", "404"):
        if op == "update":
            return PreconditionFailed(f"{key} no longer exists")
        return NotFound(f"{key} not found")
    if status == 403 or code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
        return AccessDeniedByStore(f"the store refused access to {key} ({code})")
    if status >= 500 or code in ("SlowDown", "RequestTimeout", "ServiceUnavailable", "InternalError"):
        return StoreUnavailable(f"the store failed on {key} ({code or status})")
    return StoreError(f"store error on {key}: {code or status} {e}")
