"""How the GCS backend makes each request: its timeouts and retries, and the generation as the version
token (an s3task ETag of a GCS object is its generation; a put mode is a generation precondition)."""

from __future__ import annotations

from google.api_core.retry import Retry
from google.cloud.storage.retry import DEFAULT_RETRY, _should_retry

from ..errors import PreconditionFailed
from .base import PutMode

#: Records: (connect, read) seconds, and a retry of a few seconds in all.
RECORD_TIMEOUT = (2.0, 4.0)
RECORD_RETRY = Retry(predicate=_should_retry, initial=0.2, maximum=1.0, multiplier=2.0, timeout=10.0)
#: Streamed data: patient, the client's own retry (two minutes).
DATA_TIMEOUT = (5.0, 60.0)
DATA_RETRY = DEFAULT_RETRY


def generation(etag: str | None) -> int | None:
    """The generation an s3task ETag of this store names; None if it names none (it can match nothing)."""
    text = (etag or "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def pinned(key: str, etag: str) -> int:
    gen = generation(etag)
    if gen is None:
        raise PreconditionFailed(f"{key}: {etag!r} is no generation of it")
    return gen


def precondition(key: str, mode: PutMode) -> int | None:
    """The ``ifGenerationMatch`` of a put mode: 0 for a create, the generation for an update."""
    if mode.kind == "create":
        return 0
    if mode.kind == "update":
        return pinned(key, str(mode.etag))
    return None


def encode_metadata(metadata: dict[str, str] | None) -> dict[str, str] | None:
    """Names in lower case, as a download's ``x-goog-meta-*`` headers give them back (S3 does the same)."""
    return {name.lower(): value for name, value in metadata.items()} if metadata else None
