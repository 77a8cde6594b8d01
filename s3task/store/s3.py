"""The S3 backend (boto3): any endpoint boto3 can reach.

``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` and the normal credential
chain work unchanged. S3's quirks are normalised in this backend (the errors in
:mod:`.s3_errors`) and nowhere else:

- 412 on a create → ``AlreadyExists``; on an update or conditional read →
  ``PreconditionFailed``;
- 404 on an update → ``PreconditionFailed`` (the object we compared against
  is gone);
- 409 ``ConditionalRequestConflict`` on an update → ``Conflict`` (the caller
  re-reads and recomputes; we never resend the old body), on a create →
  resend;
- missing key → ``NotFound``; missing bucket → ``BucketMissing``;
- ``InvalidPart`` on a join (a part named is not held with the ETag named: sent again with other
  bytes) → ``PartsChanged``;
- 501 on a conditional delete (LocalStack) → the delete is done by a conditional
  overwrite first (:func:`.s3_writer.delete_by_tombstone`);
- a listing entry not after ``start_after`` (LocalStack's common prefixes) → dropped;
- 501 on a conditional write (Swift's S3 layer refuses If-Match) → ``UnsafeStore``;
- connection errors, timeouts and 5xx → ``StoreUnavailable``.

Record reads and writes use a client with short timeouts, so one slow call
cannot outlive a lease; streaming data uses a second, patient client.

Presigned URLs go to a browser, so on AWS itself they are signed by a third
client in the bucket's own region (:mod:`.s3_urls` says why and how); with a
custom endpoint (MinIO, moto) by the record client. Objects are written by
:mod:`.s3_writer`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any, BinaryIO, cast

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ..clock import MACHINE, Clock
from ..errors import Conflict, StoreError, StoreUnavailable
from .base import GetResult, ObjectMeta, PutMode, check_key
from .s3_errors import Reader, _translated
from .s3_parts import Parts
from .s3_urls import _URL_CONFIG, configured_endpoint, find_bucket_region
from .s3_writer import _MultipartWriter, delete_by_tombstone
from .server_clock import ServerClock

#: Size of the parts of a multipart upload; :meth:`S3Store.open_write` hands it to the writer.
PART_SIZE = 8 * 1024 * 1024
_CREATE_RESENDS = 5

#: Connections each client keeps open for reuse; botocore's default is 10. One store, and so one
#: record client, serves every thread of a process that uses it: in the app, every browser session
#: and the HTTP API share one TaskService, and one listing page reads its records 16 at a time
#: (``s3task.tasks._READERS``); the worker (the embedded one has a store of its own) reads 16 records
#: at a time when it polls (``s3task.worker.loop._READERS``) besides its presence reads and the lease
#: renewals of the tasks in hand. 32 lets two such fan-outs, or one and the odd single calls of other
#: sessions, run at once on warm connections. Past the pool size nothing blocks: urllib3 opens an
#: extra connection and closes it after one request — a new TLS handshake each time, and a
#: "Connection pool is full" warning in the log. Idle pooled connections cost one socket each.
MAX_POOL_CONNECTIONS = 32

_RECORD_CONFIG = Config(
    connect_timeout=2,
    read_timeout=4,
    retries={"mode": "standard", "total_max_attempts": 3},
    signature_version="s3v4",
    max_pool_connections=MAX_POOL_CONNECTIONS,
)
_DATA_CONFIG = Config(
    connect_timeout=5,
    read_timeout=60,
    retries={"mode": "standard", "total_max_attempts": 5},
    signature_version="s3v4",
    max_pool_connections=MAX_POOL_CONNECTIONS,
)


class S3Store(Parts):
    def __init__(
        self,
        bucket: str,
        *,
        client: Any = None,
        data_client: Any = None,
        session: Any = None,
        bucket_region: str | None = None,
        clock: Clock = MACHINE,
    ) -> None:
        """A store on ``bucket``; ``clock`` is this machine's, from which the store's is derived.

        ``client`` (and ``data_client``, else the same) are used as given, to sign URLs too.
        Without them the clients come from ``session`` (boto3's configuration chain); then,
        if no endpoint is configured, URLs are signed for the bucket's region:
        ``bucket_region`` if given, else the one S3 reports at the first URL.
        """
        self.bucket = bucket
        self.clock = clock
        try:
            # boto3 reads AWS_DEFAULT_REGION and the profile's region but not AWS_REGION, which the
            # AWS CLI and the other SDKs read first (and Lambda and ECS set): take it the same way.
            session = session or boto3.session.Session(region_name=os.environ.get("AWS_REGION") or None)
            on_aws = client is None and configured_endpoint(session) is None
            self.client = client or session.client("s3", config=_RECORD_CONFIG)
            self.data_client = data_client or (client or session.client("s3", config=_DATA_CONFIG))
        except BotoCoreError as e:  # e.g. AWS_PROFILE names no profile: a store error, not a crash
            raise StoreError(f"cannot set up the S3 client: {e}") from e
        endpoint = self.client.meta.endpoint_url
        self.description = f"s3://{bucket} ({endpoint})"
        self._url_session = session if on_aws else None
        self._bucket_region = bucket_region
        self._url_client: Any = None
        self._url_lock = threading.Lock()
        self._server_clock = ServerClock(clock)  # from the Date header of every answer
        self._deletes_conditionally = True  # until the store answers a conditional delete with 501
        for c in {id(self.client): self.client, id(self.data_client): self.data_client}.values():
            c.meta.events.register("after-call.s3", self._note_date)

    # --- the store's clock ------------------------------------------------

    def _note_date(self, http_response: Any = None, **_: Any) -> None:
        self._server_clock.note(
            getattr(http_response, "headers", {}).get("Date") if http_response is not None else None
        )

    def now(self) -> datetime:
        return self._server_clock.now()

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

    def get_start(self, key: str, size: int) -> GetResult:
        # A ranged GET answers with the whole object's size in Content-Range ("bytes 0-99/12345")
        # and its ETag; S3 refuses any range of an empty object (416), which a HEAD then describes.
        try:
            with _translated(key, "get"):
                resp = self.client.get_object(Bucket=self.bucket, Key=check_key(key), Range=f"bytes=0-{size - 1}")
                try:  # at most ``size`` bytes, even from a store that ignores Range and sends it all
                    body = resp["Body"].read(size)
                finally:
                    resp["Body"].close()
        except StoreError as e:
            if _code(e) != "InvalidRange":
                raise
            return GetResult(b"", self.head(key))
        meta = _meta(key, resp)
        total = str(resp.get("ContentRange", "")).rpartition("/")[2]
        if total.isdigit():  # absent when the store sent the whole object (a 200, not a 206)
            meta = dataclasses.replace(meta, size=int(total))
        return GetResult(body, meta)

    @contextlib.contextmanager
    def open_read(self, key: str, *, if_match: str | None = None) -> Iterator[BinaryIO]:
        kwargs = {"IfMatch": if_match} if if_match else {}
        with _translated(key, "get"):
            resp = self.data_client.get_object(Bucket=self.bucket, Key=check_key(key), **kwargs)
        body = resp["Body"]
        try:
            yield cast(BinaryIO, Reader(body, key))  # read(n) is all callers use
        finally:
            body.close()

    def list_keys(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        return [c["Key"] for c in self._list(prefix, start_after, limit, delimiter=None)]

    def list_prefixes(self, prefix: str, *, start_after: str | None = None, limit: int | None = None) -> list[str]:
        return [c["Prefix"] for c in self._list(prefix, start_after, limit, delimiter="/")]

    def _list(
        self, prefix: str, start_after: str | None, limit: int | None, delimiter: str | None
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
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
            name = "Prefix" if delimiter else "Key"
            # Strictly after start_after, as S3 and the local store list: LocalStack also answers
            # with the common prefix equal to it (StartAfter "a/" and a key "a/x" give "a/").
            out.extend(e for e in resp.get(field, []) if not start_after or e[name] > start_after)
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
                    return str(call(**kwargs)["ETag"])
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
        writer = _MultipartWriter(self, check_key(key), mode, content_type, metadata, PART_SIZE)
        try:
            yield writer
            writer.finish()  # inside: a failed last part must abort the upload too
        except BaseException:
            writer.abort()
            raise

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        if if_match and not self._deletes_conditionally:
            return delete_by_tombstone(self, check_key(key), if_match)
        kwargs = {"IfMatch": if_match} if if_match else {}
        try:
            with _translated(key, "update" if if_match else "delete"):
                self.client.delete_object(Bucket=self.bucket, Key=check_key(key), **kwargs)
        except StoreError as e:  # a 501 on a conditional call is UnsafeStore (s3_errors)
            if not (if_match and _code(e) == "NotImplemented"):
                raise
            # LocalStack answers a conditional delete with 501: nothing was deleted. From now on
            # this store deletes conditionally the way that does not need it (s3_writer says how).
            self._deletes_conditionally = False
            delete_by_tombstone(self, key, if_match)

    # --- presigned URLs ------------------------------------------------------

    def _signer(self) -> Any:
        """The client that signs URLs: the record client, or on AWS one in the bucket's region."""
        if self._url_session is None:
            return self.client
        with self._url_lock:
            if self._url_client is None:
                # The bucket's region even when one is configured (AWS_REGION, the profile) and
                # differs: the API clients follow S3's redirects to the bucket's region, a browser
                # given a URL for the wrong region gets a redirect or an error it cannot follow.
                region = self._bucket_region or find_bucket_region(self.client, self.bucket)
                if region is None:
                    # S3 did not say (no such bucket yet, store unreachable): sign for the configured
                    # region this time, as the API calls go, and ask again at the next URL.
                    return self._url_client_for(self._url_session.region_name or "us-east-1")
                self._bucket_region = region
                self._url_client = self._url_client_for(region)
            return self._url_client

    def _url_client_for(self, region: str) -> Any:
        assert self._url_session is not None  # only called on AWS, where URLs get a client of their own
        try:
            return self._url_session.client("s3", region_name=region, config=_URL_CONFIG)
        except BotoCoreError as e:
            raise StoreError(f"cannot set up the S3 client for URLs in {region}: {e}") from e

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str | None:
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": check_key(key)}
        if filename:
            safe = "".join(ch for ch in filename if ch.isalnum() or ch in " ._-") or "download"
            params["ResponseContentDisposition"] = f'attachment; filename="{safe}"'
        return str(self._signer().generate_presigned_url("get_object", Params=params, ExpiresIn=expires))

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str | None:
        params = {"Bucket": self.bucket, "Key": check_key(key), "ContentType": content_type}
        return str(self._signer().generate_presigned_url("put_object", Params=params, ExpiresIn=expires))

    def presign_sized_put(self, key: str, *, expires: int, content_type: str, size: int) -> str:
        """:meth:`presign_put` with ``Content-Length: size`` signed too (s3task.store.base.SizedUrls)."""
        params = {"Bucket": self.bucket, "Key": check_key(key), "ContentType": content_type, "ContentLength": size}
        return str(self._signer().generate_presigned_url("put_object", Params=params, ExpiresIn=expires))

    # --- what killed writers leave (s3task.store.base.Leftovers) ---

    def drop_unfinished(self, key: str) -> int:
        """Abort every unfinished multipart upload of exactly ``key`` (a killed attempt's output, a
        cancelled task's input), every page of them."""
        uploads = [upload_id for k, upload_id in self.open_uploads(key) if k == key]
        for upload_id in uploads:
            self.abort_multipart(key, upload_id)
        return len(uploads)

    def sweep_unfinished(self, older_than: float) -> int:
        """Nothing to sweep by age: S3 lists no staged files, and the bucket's lifecycle rule takes the rest."""
        return 0


def _code(e: StoreError) -> str:
    """The S3 error code behind one of our errors ("" if it came from elsewhere)."""
    cause = e.__cause__
    return str(cause.response.get("Error", {}).get("Code", "")) if isinstance(cause, ClientError) else ""


def _meta(key: str, resp: dict[str, Any]) -> ObjectMeta:
    lm = resp.get("LastModified")
    return ObjectMeta(
        key=key,
        size=int(resp.get("ContentLength", 0)),
        etag=resp["ETag"],
        last_modified=lm if isinstance(lm, datetime) else None,
        metadata=dict(resp.get("Metadata") or {}),
        content_type=resp.get("ContentType"),
    )
