"""azure-core's errors as s3task's, for the Azure Blob backend (:mod:`.azure` lists the mapping), and a body
that reads with them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from azure.core.exceptions import (
    AzureError,
    HttpResponseError,
    ServiceRequestError,
    ServiceResponseError,
)

from ..errors import (
    AccessDeniedByStore,
    AlreadyExists,
    BucketMissing,
    NotFound,
    PartsChanged,
    PreconditionFailed,
    StoreError,
    StoreUnavailable,
)


def error_code(e: BaseException | None) -> str:
    """The storage error code (``BlobNotFound``, ``ConditionNotMet``…) of an SDK error, "" if none.

    The SDK hands some codes as ``StorageErrorCode`` members, whose ``str()`` is the member's name: the
    value is the service's own spelling.
    """
    code = getattr(e, "error_code", None)
    return str(getattr(code, "value", code) or "")


@contextlib.contextmanager
def _translated(key: str, op: str) -> Iterator[None]:
    """Map azure-core errors to s3task's, keeping the original as ``__cause__``.

    ``op`` is how the call was meant: ``create`` / ``update`` / ``overwrite``
    / ``get`` / ``head`` / ``list`` / ``delete`` / ``write``.
    """
    try:
        yield
    except HttpResponseError as e:
        raise _from_response_error(e, key, op) from e
    except (ServiceRequestError, ServiceResponseError) as e:
        raise StoreUnavailable(f"the store did not answer for {key}: {e}") from e
    except AzureError as e:  # e.g. a credential that cannot get a token
        raise StoreError(f"store error on {key}: {e}") from e


def _from_response_error(e: HttpResponseError, key: str, op: str) -> StoreError:
    code = error_code(e)
    status = int(e.status_code or 0)
    if op == "create" and (status == 412 or code == "BlobAlreadyExists"):
        # Azure answers If-None-Match: * on an existing blob with 409 BlobAlreadyExists (S3: 412).
        return AlreadyExists(f"{key} already exists")
    if status == 412:
        # ConditionNotMet: the ETag changed, or (Azurite only) the blob compared against is gone.
        return PreconditionFailed(f"{key} changed since it was read")
    if code == "InvalidBlockList":  # a block named at a commit is not held uncommitted (S3's InvalidPart)
        return PartsChanged(f"the store does not hold the blocks of {key} as they were sent ({code})")
    if code == "ContainerNotFound":
        return BucketMissing(f"the container does not exist ({code})")
    if status == 404:
        if op == "update":  # Azure: If-Match on a missing blob is 404; the blob we compared against is gone
            return PreconditionFailed(f"{key} no longer exists")
        return NotFound(f"{key} not found")
    if status in (401, 403):
        return AccessDeniedByStore(f"the store refused access to {key} ({code or status})")
    if status in (408, 429) or status >= 500:
        return StoreUnavailable(f"the store failed on {key} ({code or status})")
    return StoreError(f"store error on {key}: {code or status} {e.reason or ''}".rstrip())


class Reader:
    """A file-like view of a blob download (``StorageStreamDownloader``) whose errors are store errors."""

    def __init__(self, download: Any, key: str) -> None:
        self._download = download
        self._key = key
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        with _translated(self._key, "get"):
            return bytes(self._download.read(-1 if n is None or n < 0 else n))

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True
