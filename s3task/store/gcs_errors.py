"""google-cloud-storage's errors as s3task's, for the Google Cloud Storage backend (:mod:`.gcs` lists the
mapping), with the IAM role that grants a permission GCS says is missing."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import requests
from google.api_core import exceptions as api
from google.auth import exceptions as auth
from google.cloud.storage import exceptions as media

from ..errors import (
    AccessDeniedByStore,
    AlreadyExists,
    BucketMissing,
    NotFound,
    PreconditionFailed,
    StoreError,
    StoreUnavailable,
)

#: The predefined role that grants each permission s3task uses (the least one that grants all the
#: permissions of its kind a role of s3task needs: an overwrite needs storage.objects.delete too, which
#: roles/storage.objectCreator lacks).
ROLES = {
    "storage.objects.get": "roles/storage.objectUser",
    "storage.objects.list": "roles/storage.objectUser",
    "storage.objects.create": "roles/storage.objectUser",
    "storage.objects.delete": "roles/storage.objectUser",
    "storage.objects.update": "roles/storage.objectUser",
    "storage.buckets.get": "roles/storage.admin",
    "storage.buckets.update": "roles/storage.admin",
    "storage.buckets.create": "roles/storage.admin",
    "iam.serviceAccounts.signBlob": "roles/iam.serviceAccountTokenCreator",
}
#: Which permission an operation needs, for a refusal whose message names none.
NEEDS = {
    "get": "storage.objects.get",
    "head": "storage.objects.get",
    "list": "storage.objects.list",
    "create": "storage.objects.create",
    "update": "storage.objects.delete",  # replacing an object deletes its generation
    "overwrite": "storage.objects.delete",
    "write": "storage.objects.create",
    "delete": "storage.objects.delete",
    "bucket": "storage.buckets.get",
}
#: "Permission 'storage.objects.create' denied on resource", else "does not have storage.objects.create access".
_PERMISSION = (re.compile(r"Permission '([\w.]+)'"), re.compile(r"\b(storage\.[a-zA-Z]+\.[a-zA-Z]+)\b"))


def role_hint(message: str, op: str) -> str:
    """``missing permission P: grant the role R`` for the permission a refusal names (else the one ``op``
    needs)."""
    found = next((m for pattern in _PERMISSION if (m := pattern.search(message or ""))), None)
    permission = found.group(1) if found else NEEDS.get(op, "")
    role = ROLES.get(permission)
    if not role:
        return "check the identity's IAM roles on the bucket"
    return f"missing permission {permission}: grant the role {role} on the bucket"


def status_of(e: BaseException) -> int:
    """The HTTP status of a client error (api_core's ``code``, or a media error's response), 0 if none."""
    if isinstance(e, api.GoogleAPICallError):
        return int(e.code or 0)
    response = getattr(e, "response", None)
    return int(getattr(response, "status_code", 0) or 0)


def _text(e: BaseException) -> str:
    if isinstance(e, api.GoogleAPICallError):
        return str(e.message or "")
    response = getattr(e, "response", None)
    return str(getattr(response, "text", "") or e)


@contextlib.contextmanager
def translated(key: str, op: str) -> Iterator[None]:
    """Map the client's errors to s3task's, keeping the original as ``__cause__``.

    ``op`` is how the call was meant: ``create`` / ``update`` / ``overwrite`` / ``get`` / ``head`` /
    ``list`` / ``delete`` / ``write`` (``update`` also for a read or delete on a generation).
    """
    try:
        yield
    except (api.GoogleAPICallError, media.InvalidResponse) as e:
        raise from_status(status_of(e), _text(e), key, op) from e
    except api.RetryError as e:  # the retry's deadline passed: the last error is its cause
        raise StoreUnavailable(f"the store did not answer for {key} in time: {e.cause or e}") from e
    except (requests.ConnectionError, requests.Timeout, auth.TransportError) as e:
        raise StoreUnavailable(f"the store did not answer for {key}: {e}") from e
    except auth.RefreshError as e:
        raise AccessDeniedByStore(f"the credentials could not get a token for {key}: {e}") from e
    except media.DataCorruption as e:
        raise StoreUnavailable(f"{key} arrived damaged (its checksum differs): {e}") from e


def from_status(status: int, message: str, key: str, op: str) -> StoreError:
    if status == 412:
        if op == "create":  # ifGenerationMatch=0 on an existing object
            return AlreadyExists(f"{key} already exists")
        return PreconditionFailed(f"{key} changed since it was read")
    if status == 404:
        # A write or a listing needs no object: its 404 is the bucket's (fake-gcs-server says only "Not Found").
        if op in ("create", "overwrite", "write", "list") or ("bucket" in message.lower() and "not exist" in message):
            return BucketMissing(f"the bucket does not exist ({message})")
        if op == "update":  # the generation compared against is gone
            return PreconditionFailed(f"{key} no longer exists")
        return NotFound(f"{key} not found")
    if status in (401, 403):
        return AccessDeniedByStore(f"the store refused access to {key} ({role_hint(message, op)})")
    if status in (408, 429) or status >= 500:
        return StoreUnavailable(f"the store failed on {key} ({status} {message})".rstrip())
    return StoreError(f"store error on {key}: {status} {message}".rstrip())
