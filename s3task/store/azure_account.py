"""Azure set-up for browser transfers (``s3task init`` and ``doctor`` on ``az://``): the container, and
the CORS rule that lets the app's origin upload and download with SAS URLs.

Azure's CORS rules belong to the storage account's Blob service (Set Blob Service Properties), not to a
container: one rule serves every container of the account, and an account holds at most five. They carry
no id, so s3task's rule is the one that allows exactly its methods and headers and exposes exactly
ETag; :func:`apply_cors` adds the origins asked for to that rule's (or adds the rule), and keeps every
other rule. It never takes an origin out: the rule may serve another deployment's app on the same account
(an origin is removed in the account's own settings: the portal, ``az storage cors``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from azure.storage.blob import CorsRule

from ..errors import AccessDeniedByStore, BucketMissing, InvalidInput, NotFound, StoreError
from .azure import AzureStore
from .azure_errors import _translated, error_code
from .azure_uploads import DELEGATION_SECONDS
from .bucket import CORS_EXPOSE, CORS_MAX_AGE, CORS_METHODS, Change, cors_problems

#: What a browser sends with a SAS upload: the file's type, and the blob type Put Blob needs.
CORS_HEADERS = ("Content-Type", "x-ms-blob-type")
#: Azure's most CORS rules per service, and origins per rule.
MAX_RULES = 5
MAX_ORIGINS = 64
HOLDER = "the storage account's Blob service"


def ensure_container(store: AzureStore) -> Change:
    try:
        with _translated(store.container, "head"):
            store.client.get_container_properties()
        return Change("unchanged", f"container {store.container} exists")
    except (NotFound, BucketMissing):
        pass
    try:
        with _translated(store.container, "write"):
            store.client.create_container()
    except StoreError as e:
        if error_code(e.__cause__) != "ContainerAlreadyExists":  # made meanwhile: there it is
            raise
        return Change("unchanged", f"container {store.container} exists")
    return Change("created", f"container {store.container}")


def _split(value: Any) -> list[str]:
    """A rule's field as a list: the SDK reads them back as comma-separated text."""
    items = value.split(",") if isinstance(value, str) else list(value or [])
    return [str(item).strip() for item in items if str(item).strip()]


def _as_s3(rule: Any) -> dict[str, Any]:
    return {
        "AllowedOrigins": _split(rule.allowed_origins),
        "AllowedMethods": _split(rule.allowed_methods),
        "AllowedHeaders": _split(rule.allowed_headers),
        "ExposeHeaders": _split(rule.exposed_headers),
        "MaxAgeSeconds": rule.max_age_in_seconds,
    }


def get_cors(store: AzureStore) -> list[dict[str, Any]]:
    """The account's CORS rules, in S3's shape (:func:`.bucket.cors_problems` reads them)."""
    with _translated(store.container, "get"):
        rules = store.service().get_service_properties().get("cors") or []
    return [_as_s3(rule) for rule in rules]


def _ours(rule: dict[str, Any]) -> bool:
    def same(have: list[str], want: Sequence[str]) -> bool:
        return sorted(h.lower() for h in have) == sorted(w.lower() for w in want)

    return (
        same(rule["AllowedMethods"], CORS_METHODS)
        and same(rule["AllowedHeaders"], CORS_HEADERS)
        and same(rule["ExposeHeaders"], CORS_EXPOSE)
    )


def apply_cors(store: AzureStore, origins: Sequence[str]) -> Change:
    rules = get_cors(store)
    ours = [r for r in rules if _ours(r)]
    others = [r for r in rules if not _ours(r)]
    what = f"CORS rule of {HOLDER} (every container of the account)"
    had = list(dict.fromkeys(o for r in ours for o in r["AllowedOrigins"]))  # each once, in their order
    allowed = [*had, *(o for o in origins if o not in had)]
    if len(ours) == 1 and (allowed == had or "*" in had):
        return Change("unchanged", f"{what} ({', '.join(had)})")
    if len(others) >= MAX_RULES:
        raise InvalidInput(f"{HOLDER} has {len(others)} CORS rules of its own, Azure's most: remove one for s3task's")
    if len(allowed) > MAX_ORIGINS:
        raise InvalidInput(
            f"s3task's CORS rule of {HOLDER} would allow {len(allowed)} origins, Azure's most is {MAX_ORIGINS}: "
            "remove the ones no app uses any more in the account's CORS settings"
        )
    wanted: dict[str, Any] = {"AllowedOrigins": allowed, "AllowedMethods": list(CORS_METHODS)}
    wanted |= {"AllowedHeaders": list(CORS_HEADERS), "ExposeHeaders": list(CORS_EXPOSE), "MaxAgeSeconds": CORS_MAX_AGE}
    cors = [_rule(r) for r in [*others, wanted]]
    with _translated(store.container, "write"):
        store.service().set_service_properties(cors=cors)
    verb = "updated" if ours else "added"
    kept = f" (kept: {', '.join(had)})" if had else ""
    added = [o for o in allowed if o not in had]
    return Change(verb, f"{what}: {', '.join(CORS_METHODS)} from {', '.join(added)}{kept}, exposes ETag")


def _rule(rule: dict[str, Any]) -> CorsRule:
    return CorsRule(
        rule["AllowedOrigins"],
        rule["AllowedMethods"],
        allowed_headers=rule["AllowedHeaders"],
        exposed_headers=rule["ExposeHeaders"],
        max_age_in_seconds=int(rule.get("MaxAgeSeconds") or 0),
    )


def browser_problems(store: AzureStore, origins: Sequence[str]) -> list[str]:
    """What keeps a browser at each origin from uploading and downloading with SAS URLs; empty if nothing."""
    return cors_problems(get_cors(store), origins, headers=CORS_HEADERS, holder=HOLDER)


def delegation_check(store: AzureStore) -> tuple[bool, str] | None:
    """Signed in with a token, can the store sign browser URLs? (ok, what to say); None when the account key
    signs them, or no credential can. Asks Azure for a user delegation key, as the first URL would."""
    credential = store.client.credential
    if getattr(credential, "account_key", None) or not hasattr(credential, "get_token"):
        return None
    try:
        store.delegation_key(store.now() + timedelta(seconds=DELEGATION_SECONDS))
    except AccessDeniedByStore as e:
        return False, f"{e}; without it the app makes no download links, and uploads go through the app"
    except StoreError as e:
        return False, f"Azure did not give a user delegation key to sign browser URLs with: {e}"
    return True, "browser URLs are signed with a user delegation key"


#: What doctor says to do when the identity gets no user delegation key.
DELEGATION_FIX = (
    "give the identity the role Storage Blob Delegator on the storage account (Azure portal: the account's "
    "Access control (IAM)), or set AZURE_STORAGE_CONNECTION_STRING"
)
