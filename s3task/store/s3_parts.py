"""The S3 backend's multipart uploads driven from outside the store: a browser through presigned part
URLs, or the CLI part by part — and, to continue one that stopped, the parts S3 already holds
(ListParts). :class:`Parts` is a part of :class:`~s3task.store.s3.S3Store`
(:class:`~s3task.store.base.MultipartStore`)."""

from __future__ import annotations

from typing import Any

from ..errors import NotFound
from .base import Part, check_key
from .s3_errors import _translated

MAX_PARTS = 10_000
#: Parts asked for per ListParts request, and uploads per ListMultipartUploads request (S3's own maxima).
LIST_PARTS_PAGE = 1000
LIST_UPLOADS_PAGE = 1000


class Parts:
    """Multipart uploads of ``self.bucket`` through ``self.client`` (records-sized calls) and
    ``self.data_client`` (the patient one, for the parts' bytes)."""

    bucket: str
    client: Any
    data_client: Any
    #: CompleteMultipartUpload names each part's ETag, as its PUT answered it.
    part_etags = True

    def _signer(self) -> Any: ...  # S3Store's: the client that signs URLs

    def create_multipart(self, key: str, *, content_type: str) -> str:
        """Start a multipart upload of ``key``; the type is fixed here, parts carry none. Returns its id."""
        with _translated(key, "write"):
            resp = self.client.create_multipart_upload(Bucket=self.bucket, Key=check_key(key), ContentType=content_type)
        return str(resp["UploadId"])

    def presign_part(self, key: str, upload_id: str, part_number: int, *, expires: int) -> str:
        _check_number(part_number)
        params = {"Bucket": self.bucket, "Key": check_key(key), "UploadId": upload_id, "PartNumber": part_number}
        return str(self._signer().generate_presigned_url("upload_part", Params=params, ExpiresIn=expires))

    def presign_sized_part(self, key: str, upload_id: str, part_number: int, *, expires: int, size: int) -> str:
        """:meth:`presign_part` with ``Content-Length: size`` signed too (s3task.store.base.SizedUrls)."""
        _check_number(part_number)
        params = {"Bucket": self.bucket, "Key": check_key(key), "UploadId": upload_id, "PartNumber": part_number,
                  "ContentLength": size}  # fmt: skip
        return str(self._signer().generate_presigned_url("upload_part", Params=params, ExpiresIn=expires))

    def upload_part(self, key: str, upload_id: str, part_number: int, body: bytes) -> str:
        """Send one part's bytes; returns its ETag. A missing upload (aborted, completed) is ``NotFound``."""
        _check_number(part_number)
        with _translated(key, "write"):
            resp = self.data_client.upload_part(
                Bucket=self.bucket, Key=check_key(key), UploadId=upload_id, PartNumber=part_number, Body=body
            )
        return str(resp["ETag"])

    def list_parts(self, key: str, upload_id: str) -> list[Part]:
        """Every part S3 holds of the upload, by number (ListParts, page by page); ``NotFound`` if the
        upload is gone (aborted, completed, or swept by the bucket's lifecycle rule)."""
        parts: list[Part] = []
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": check_key(key), "UploadId": upload_id}
        while True:
            with _translated(key, "get"):
                resp = self.client.list_parts(**kwargs, MaxParts=LIST_PARTS_PAGE)
            parts += [Part(int(p["PartNumber"]), int(p["Size"]), str(p["ETag"])) for p in resp.get("Parts", [])]
            marker = resp.get("NextPartNumberMarker")
            if not resp.get("IsTruncated") or not marker:
                break
            kwargs["PartNumberMarker"] = marker
        return sorted({p.number: p for p in parts}.values(), key=lambda p: p.number)

    def complete_multipart(self, key: str, upload_id: str, parts: list[tuple[int, str]]) -> str:
        """Join the parts (number, ETag) into the object; returns its ETag. Unconditional: an overwrite."""
        listing = {"Parts": [{"PartNumber": n, "ETag": etag} for n, etag in sorted(parts)]}
        with _translated(key, "write"):
            resp = self.data_client.complete_multipart_upload(
                Bucket=self.bucket, Key=check_key(key), UploadId=upload_id, MultipartUpload=listing
            )
        return str(resp["ETag"])

    def open_uploads(self, prefix: str) -> list[tuple[str, str]]:
        """Every multipart upload still open under ``prefix``, as (key, upload id), page by page
        (ListMultipartUploads: ``s3:ListBucketMultipartUploads``)."""
        found: list[tuple[str, str]] = []
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": check_key(prefix), "MaxUploads": LIST_UPLOADS_PAGE}
        while True:
            with _translated(prefix, "list"):
                resp = self.client.list_multipart_uploads(**kwargs)
            found += [(str(u["Key"]), str(u["UploadId"])) for u in resp.get("Uploads", [])]
            key_marker, id_marker = resp.get("NextKeyMarker"), resp.get("NextUploadIdMarker")
            if not resp.get("IsTruncated") or not (key_marker or id_marker):
                break
            kwargs.update(KeyMarker=key_marker or "", UploadIdMarker=id_marker or "")
        return sorted(set(found))

    def abort_multipart(self, key: str, upload_id: str) -> None:
        """Drop the upload and its parts; an upload that is already gone is not an error."""
        try:
            with _translated(key, "delete"):
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=check_key(key), UploadId=upload_id)
        except NotFound:
            pass


def _check_number(part_number: int) -> None:
    if not 1 <= part_number <= MAX_PARTS:
        raise ValueError(f"part numbers run from 1 to {MAX_PARTS}")
