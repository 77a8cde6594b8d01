"""botocore's errors as s3task's, for the S3 backend (:mod:`.s3` lists the mapping), and a body that reads with them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ..errors import (
    AccessDeniedByStore,
    AlreadyExists,
    BucketMissing,
    Conflict,
    NotFound,
    PartsChanged,
    PreconditionFailed,
    StoreError,
    StoreUnavailable,
    UnsafeStore,
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
    if status == 501 and op in ("create", "update"):
        # OpenStack Swift's S3 layer: "Conditional object PUTs are not supported". Not a passing
        # outage to retry: a store without conditional writes cannot hold task state.
        return UnsafeStore(f"The store does not support conditional writes ({code or status} on {key}).")
    if status == 409 and code == "ConditionalRequestConflict":
        return Conflict(f"{key}: a concurrent conditional write is in progress")
    if code == "InvalidPart":  # CompleteMultipartUpload: a part named is not held with the ETag named
        return PartsChanged(f"the store does not hold the parts of {key} as they were sent ({code})")
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


class Reader:
    """A file-like view of a streaming body whose errors are store errors."""

    def __init__(self, body: Any, key: str) -> None:
        self._body = body
        self._key = key
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        with _translated(self._key, "get"):
            return bytes(self._body.read(None if n is None or n < 0 else n))

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True
        self._body.close()
