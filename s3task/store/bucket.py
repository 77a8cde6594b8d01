"""Bucket set-up for browser transfers: the CORS rule and the lifecycle rules (``python -m s3task init``).

Browsers upload to and download from the bucket directly through presigned
URLs, which a browser only sends cross-origin if the bucket's CORS rule lets
the app's origin do so. Multipart uploads a browser (or a killed worker)
abandons leave billed parts behind until a lifecycle rule aborts them.

Every rule s3task owns carries an ``s3task-`` id; the bucket's other rules are
kept as they are. Applying is idempotent and says what changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import BucketMissing, NotFound
from ..layout import MAX_RECORD_BYTES
from .s3 import S3Store
from .s3_errors import _translated

CORS_ID = "s3task-browser-transfers"
ABORT_ID = "s3task-abort-incomplete-uploads"
RETENTION_ID = "s3task-retention"
CORS_METHODS = ("PUT", "GET", "HEAD")
#: What a browser sends with a presigned URL: the signed Content-Type (the signature itself rides
#: in the query string), and whatever ``x-amz-`` headers a signer may bind.
CORS_HEADERS = ("Content-Type", "x-amz-*")
#: Multipart uploads read each part's ETag to complete the upload.
CORS_EXPOSE = ("ETag",)
CORS_MAX_AGE = 3000
ABORT_AFTER_DAYS = 1


@dataclass(frozen=True)
class Change:
    """One line of what ``init`` did: ``what`` is ``created``/``added``/``updated``/``removed``/``unchanged``."""

    what: str
    subject: str

    def __str__(self) -> str:
        return f"{self.what}: {self.subject}"


def cors_rule(origins: Sequence[str]) -> dict[str, Any]:
    return {
        "ID": CORS_ID,
        "AllowedOrigins": list(origins),
        "AllowedMethods": list(CORS_METHODS),
        "AllowedHeaders": list(CORS_HEADERS),
        "ExposeHeaders": list(CORS_EXPOSE),
        "MaxAgeSeconds": CORS_MAX_AGE,
    }


def abort_rule(prefix: str) -> dict[str, Any]:
    return {
        "ID": ABORT_ID,
        "Status": "Enabled",
        "Filter": {"Prefix": prefix.strip("/") + "/"},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": ABORT_AFTER_DAYS},
    }


def retention_rule(prefix: str, days: int) -> dict[str, Any]:
    """Expire inputs and outputs ``days`` after they were written.

    S3 cannot filter by name suffix, but it can by size: every record, marker and
    presence object is at most ``MAX_RECORD_BYTES`` (larger records are refused),
    so objects above that size under the prefix are task data (inputs and outputs),
    and the records — the task history — stay. Small inputs and outputs stay too.
    """
    return {
        "ID": RETENTION_ID,
        "Status": "Enabled",
        "Filter": {"And": {"Prefix": prefix.strip("/") + "/", "ObjectSizeGreaterThan": MAX_RECORD_BYTES}},
        "Expiration": {"Days": int(days)},
    }


# --- applying -----------------------------------------------------------------------


def ensure_bucket(store: S3Store) -> Change:
    client = store.client
    try:
        with _translated(store.bucket, "head"):
            client.head_bucket(Bucket=store.bucket)
        return Change("unchanged", f"bucket {store.bucket} exists")
    except (NotFound, BucketMissing):
        pass
    region = client.meta.region_name
    kwargs: dict[str, Any] = {"Bucket": store.bucket}
    if region and region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    with _translated(store.bucket, "write"):
        client.create_bucket(**kwargs)
    return Change("created", f"bucket {store.bucket}")


def apply_cors(store: S3Store, origins: Sequence[str]) -> Change:
    rules = get_cors(store)
    wanted = cors_rule(origins)
    ours = [r for r in rules if r.get("ID") == CORS_ID]
    others = [r for r in rules if r.get("ID") != CORS_ID]
    if ours and _same(ours[0], wanted) and len(ours) == 1:
        return Change("unchanged", f"CORS rule {CORS_ID} ({', '.join(origins)})")
    with _translated(store.bucket, "write"):
        store.client.put_bucket_cors(Bucket=store.bucket, CORSConfiguration={"CORSRules": [*others, wanted]})
    verb = "updated" if ours else "added"
    return Change(verb, f"CORS rule {CORS_ID}: {', '.join(CORS_METHODS)} from {', '.join(origins)}, exposes ETag")


def apply_lifecycle(store: S3Store, prefix: str, retain_days: int | None) -> list[Change]:
    """The abort rule always; the retention rule set (``retain_days`` ≥ 1), removed (0) or left (None)."""
    rules = get_lifecycle(store)
    by_id = {r.get("ID"): r for r in rules}
    wanted: dict[str, dict[str, Any] | None] = {ABORT_ID: abort_rule(prefix)}
    if retain_days is not None:
        wanted[RETENTION_ID] = retention_rule(prefix, retain_days) if retain_days > 0 else None
    changes, new_rules = [], [r for r in rules if r.get("ID") not in wanted]
    for rule_id, rule in wanted.items():
        old = by_id.get(rule_id)
        if rule is None:
            if old is not None:
                changes.append(Change("removed", f"lifecycle rule {rule_id}"))
            continue
        new_rules.append(rule)
        if old is None:
            changes.append(Change("added", f"lifecycle rule {rule_id}: {_describe(rule)}"))
        elif not _same(old, rule):
            changes.append(Change("updated", f"lifecycle rule {rule_id}: {_describe(rule)}"))
        else:
            changes.append(Change("unchanged", f"lifecycle rule {rule_id}"))
    if any(c.what != "unchanged" for c in changes):
        with _translated(store.bucket, "write"):
            if new_rules:
                store.client.put_bucket_lifecycle_configuration(
                    Bucket=store.bucket, LifecycleConfiguration={"Rules": new_rules}
                )
            else:
                store.client.delete_bucket_lifecycle(Bucket=store.bucket)
    return changes


def _describe(rule: dict[str, Any]) -> str:
    if "AbortIncompleteMultipartUpload" in rule:
        days = rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"]
        return f"abort unfinished multipart uploads after {days} day{'s' if days != 1 else ''}"
    days = rule["Expiration"]["Days"]
    return f"delete task inputs and outputs (objects over {MAX_RECORD_BYTES // 1024} KiB) after {days} days"


# --- reading and checking -----------------------------------------------------------


def get_cors(store: S3Store) -> list[dict[str, Any]]:
    try:
        with _translated(store.bucket, "get"):
            return list(store.client.get_bucket_cors(Bucket=store.bucket).get("CORSRules", []))
    except NotFound:  # NoSuchCORSConfiguration
        return []


def get_lifecycle(store: S3Store) -> list[dict[str, Any]]:
    try:
        with _translated(store.bucket, "get"):
            resp = store.client.get_bucket_lifecycle_configuration(Bucket=store.bucket)
        return list(resp.get("Rules", []))
    except NotFound:  # NoSuchLifecycleConfiguration
        return []


def cors_problems(
    rules: Sequence[dict[str, Any]],
    origins: Sequence[str],
    *,
    headers: Sequence[str] = ("Content-Type",),
    holder: str = "the bucket",
) -> list[str]:
    """What keeps a browser at each origin from uploading and downloading directly; empty if nothing.

    ``rules`` in S3's shape; ``headers``: what a browser's upload sends (Azure adds ``x-ms-blob-type``);
    ``holder``: whose rules they are, in the words (Azure's are the storage account's)."""
    if not rules:
        return [f"{holder} has no CORS rule, so browsers cannot upload to it or download from it directly"]
    if not origins:  # none configured: check the origins our own rule (else the first rule) names
        ours = next((r for r in rules if r.get("ID") == CORS_ID), rules[0])
        origins = list(ours.get("AllowedOrigins", [])) or ["*"]
    problems = []
    for origin in origins:
        # Like S3, any one rule that allows everything the browser does is enough.
        found: list[list[str]] = [_rule_problems(r, origin, headers) for r in rules if _allows_origin(r, origin)]
        if not found:
            problems.append(f"no CORS rule allows the origin {origin}")
        elif all(found):
            problems += sorted(found, key=len)[0]  # the rule closest to allowing it
    return problems


def _rule_problems(rule: dict[str, Any], origin: str, needed: Sequence[str]) -> list[str]:
    problems = []
    methods = {m.upper() for m in rule.get("AllowedMethods", [])}
    if missing := [m for m in CORS_METHODS if m not in methods]:
        problems.append(f"the CORS rule for {origin} does not allow {', '.join(missing)}")
    allowed = [h.lower() for h in rule.get("AllowedHeaders", [])]
    for header in needed:  # an allowed header may end in * (x-amz-*, x-ms-*): a prefix
        if not any(a == header.lower() or (a.endswith("*") and header.lower().startswith(a[:-1])) for a in allowed):
            problems.append(f"the CORS rule for {origin} does not allow the {header} header")
    if "etag" not in [h.lower() for h in rule.get("ExposeHeaders", [])]:
        problems.append(f"the CORS rule for {origin} does not expose ETag (multipart uploads need it)")
    return problems


def _allows_origin(rule: dict[str, Any], origin: str) -> bool:
    for allowed in rule.get("AllowedOrigins", []):
        if allowed == "*" or allowed == origin:
            return True
        if "*" in allowed:
            head, _, tail = allowed.partition("*")
            if origin.startswith(head) and origin.endswith(tail) and origin != "*":
                return True
    return False


def _same(have: dict[str, Any], want: dict[str, Any]) -> bool:
    """Equal on every field we set (a store may add defaults of its own)."""

    def norm(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items()}
        if isinstance(value, list):
            return sorted((norm(v) for v in value), key=repr)
        return value

    return all(norm(have.get(k)) == norm(v) for k, v in want.items())
