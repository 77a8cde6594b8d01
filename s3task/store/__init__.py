"""Object stores: the protocol, the S3 and local-directory backends, and the CAS probe."""

from __future__ import annotations

import os
from urllib.parse import urlparse

from ..layout import DEFAULT_PREFIX, Layout
from .base import GetResult, ObjectMeta, ObjectStore, PutMode

DEFAULT_LOCAL_STORE = "./s3task-data"

__all__ = ["DEFAULT_LOCAL_STORE", "GetResult", "ObjectMeta", "ObjectStore", "PutMode", "open_store"]


def open_store(url: str | None = None) -> tuple[ObjectStore, Layout]:
    """A store and its layout from a URL: ``s3://bucket/prefix`` or a local path."""
    url = url or DEFAULT_LOCAL_STORE
    if url.startswith("s3://"):
        from .s3 import S3Store

        parsed = urlparse(url)
        if not parsed.netloc:
            raise ValueError(f"{url!r} names no bucket (expected s3://bucket/prefix)")
        return S3Store(parsed.netloc), Layout(parsed.path.strip("/") or DEFAULT_PREFIX)
    if "://" in url and not url.startswith("file://"):
        raise ValueError(f"unsupported store URL {url!r} (use s3://bucket/prefix or a local path)")
    from .local import LocalStore

    path = url.removeprefix("file://")
    return LocalStore(os.path.expanduser(path)), Layout(DEFAULT_PREFIX)
