"""Short-lived URLs for a task's files: the store's own presigned ones, else a signer's (the local store)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..store.base import ObjectStore, PutHeaders, SizedUrls


class UrlSigner(Protocol):
    """Makes transfer URLs for a store that has no presigned URLs of its own (see s3task.transfer)."""

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str: ...

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str: ...


@runtime_checkable
class SizedSigner(Protocol):
    """A signer whose upload links take a body of one size only (s3task.web.transfer's: the size is in the token,
    and the route refuses any other before publishing)."""

    def presign_sized_put(self, key: str, *, expires: int, content_type: str, size: int) -> str: ...


class Urls:
    """Download and upload URLs valid for ``seconds``; None when neither the store nor a signer makes them."""

    def __init__(self, store: ObjectStore, seconds: int, signer: UrlSigner | None = None) -> None:
        self.store, self.seconds = store, seconds
        #: Used only when the store's own presign returns None (the local store).
        self.signer = signer

    def get(self, key: str, filename: str | None = None) -> str | None:
        url = self.store.presign_get(key, expires=self.seconds, filename=filename)
        if url is None and self.signer is not None:
            url = self.signer.presign_get(key, expires=self.seconds, filename=filename)
        return url

    def put(self, key: str, content_type: str) -> str | None:
        return self.put_request(key, content_type)[0]

    def put_request(self, key: str, content_type: str, size: int | None = None) -> tuple[str | None, dict[str, str]]:
        """An upload URL and the headers a PUT to it must send: the signed Content-Type, and whatever
        else the store's own URLs need (:class:`~s3task.store.base.PutHeaders`: Azure's blob type).
        ``size``: the file's, where known; bound into the URL where the store can (:class:`SizedUrls`: S3) or the
        signer can (:class:`SizedSigner`: the local route)."""
        headers = {"Content-Type": content_type}
        if size is not None and isinstance(self.store, SizedUrls):
            return self.store.presign_sized_put(
                key, expires=self.seconds, content_type=content_type, size=size
            ), headers
        url = self.store.presign_put(key, expires=self.seconds, content_type=content_type)
        if url is not None:
            if isinstance(self.store, PutHeaders):
                headers.update(self.store.put_headers())
            return url, headers
        if size is not None and isinstance(self.signer, SizedSigner):
            url = self.signer.presign_sized_put(key, expires=self.seconds, content_type=content_type, size=size)
        elif self.signer is not None:
            url = self.signer.presign_put(key, expires=self.seconds, content_type=content_type)
        return url, headers
