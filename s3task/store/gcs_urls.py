"""The GCS backend's browser URLs: V4 signed URLs, a part of :class:`~s3task.store.gcs.GcsStore`.

Who signs them, from the store's credentials (or its ``signer``, :func:`~s3task.store.gcs.open_gcs`):

- credentials that hold a private key (a service account's key file) or sign by themselves
  (``google.auth`` ``Signing`` credentials: impersonated ones call IAM themselves) sign each URL here;
- credentials with a service account but no key (a workload's service account, from the metadata
  server) sign through IAM's ``signBlob`` with their token: the client's
  ``generate_signed_url(service_account_email=…, access_token=…)``. The service account needs
  ``iam.serviceAccounts.signBlob`` on itself (the role *Service Account Token Creator*). Refused, the
  store logs one warning and makes no URLs for :data:`REFUSAL_SECONDS`: the app then carries files
  itself, as with a local store;
- anything else (a person's own login, anonymous credentials) signs nothing: no URLs.

An upload URL creates the object and cannot replace one: it signs the header
``x-goog-if-generation-match: 0``, which the browser must send (:meth:`SignedUrls.put_headers`) and
GCS then enforces (412 once the object exists). A download URL is a GET of the object as it is.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import Any

from google.auth import exceptions as auth
from google.auth.credentials import Signing
from google.auth.transport.requests import Request

from ..errors import AccessDeniedByStore, StoreError, StoreUnavailable
from .base import check_key
from .gcs_errors import ROLES, translated

#: V4 signed URLs last at most 7 days.
LONGEST = 7 * 24 * 3600
#: After IAM refuses to sign, no URL is asked for again for this long (logged once).
REFUSAL_SECONDS = 300
#: The header an upload URL signs, which makes the PUT a create.
CREATE_ONLY = {"x-goog-if-generation-match": "0"}
SIGN_BLOB = "iam.serviceAccounts.signBlob"
log = logging.getLogger(__name__)


class SignedUrls:
    """URL signing for a store with ``bucket``, ``credentials``, ``signer`` and ``now()``."""

    bucket: Any
    credentials: Any
    signer: Any

    def __init__(self) -> None:
        self._refused_until = 0.0
        self._sign_lock = threading.Lock()

    def signing(self) -> dict[str, Any] | None:
        """How to sign: ``{"credentials": …}`` (a key, or credentials that sign), ``{"service_account_email": …,
        "access_token": …}`` (IAM's signBlob), or None when nothing can sign (or IAM refused lately)."""
        credentials = self.signer or self.credentials
        if isinstance(credentials, Signing):
            return {"credentials": credentials}
        if getattr(credentials, "service_account_email", None) is None or time.monotonic() < self._refused_until:
            return None
        with self._sign_lock, translated("a token to sign URLs with", "get"):
            if not credentials.valid:  # a workload's email is "default" until its first token
                credentials.refresh(Request())
        return {"service_account_email": credentials.service_account_email, "access_token": credentials.token}

    def signed_url(self, key: str, expires: int, **kwargs: Any) -> str | None:
        """A V4 signed URL of ``key`` valid for ``expires`` seconds (at most 7 days); None if nothing signs."""
        how = self.signing()
        if how is None:
            return None
        blob = self.bucket.blob(check_key(key))
        try:
            return str(
                blob.generate_signed_url(
                    version="v4", expiration=timedelta(seconds=min(max(expires, 1), LONGEST)), **how, **kwargs
                )
            )
        except auth.TransportError as e:  # IAM's signBlob refused, or did not answer
            if "PERMISSION_DENIED" not in str(e) and " 403" not in str(e):
                raise StoreUnavailable(f"IAM did not sign a URL for {key}: {e}") from e
            self._refuse(e)
            return None
        except auth.RefreshError as e:
            raise StoreError(f"the credentials could not get a token to sign URLs with: {e}") from e

    def _refuse(self, e: Exception) -> None:
        refused = AccessDeniedByStore(
            f"IAM refused to sign URLs ({e}): the service account needs the permission {SIGN_BLOB} on itself "
            f"(the role {ROLES[SIGN_BLOB]})"
        )
        log.warning("no download or upload links for %d s: %s", REFUSAL_SECONDS, refused)
        self._refused_until = time.monotonic() + REFUSAL_SECONDS

    def sign_check(self) -> tuple[bool, str] | None:
        """doctor: can this store sign browser URLs? None when it signs with a key (nothing to check);
        else (ok, what) after signing one URL."""
        credentials = self.signer or self.credentials
        if isinstance(credentials, Signing):
            return None
        if getattr(credentials, "service_account_email", None) is None:
            return False, "these credentials cannot sign browser URLs (no service account): files go through the app"
        self._refused_until = 0.0
        if self.signed_url("_probe/signing", 60) is None:
            return False, f"IAM refused to sign browser URLs: grant {ROLES[SIGN_BLOB]} to the service account on itself"
        email = credentials.service_account_email
        return True, f"browser URLs are signed through IAM signBlob as {email}"

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str | None:
        disposition = None
        if filename:
            safe = "".join(ch for ch in filename if ch.isalnum() or ch in " ._-") or "download"
            disposition = f'attachment; filename="{safe}"'
        return self.signed_url(key, expires, method="GET", response_disposition=disposition)

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str | None:
        """A PUT URL that creates the object and cannot replace one (:data:`CREATE_ONLY` is signed)."""
        return self.signed_url(key, expires, method="PUT", content_type=content_type, headers=dict(CREATE_ONLY))

    def put_headers(self) -> dict[str, str]:
        """What a PUT to :meth:`presign_put`'s URL must send besides its Content-Type."""
        return dict(CREATE_ONLY)
