"""GCS set-up for browser transfers (``s3task init`` and ``doctor`` on ``gs://``): the bucket's CORS rule,
which lets the app's origin upload and download with signed URLs, and the lifecycle rule that deletes what
uploads in parts left under the parts root (:mod:`.gcs_parts`) after a week.

A GCS bucket's CORS configuration is a list of rules with no ids: s3task's is the one that allows exactly
its methods and response headers. :func:`apply_cors` adds the origins asked for to that rule's (or adds the
rule) and keeps every other rule, as on Azure. Reading and writing it needs ``storage.buckets.get`` and
``storage.buckets.update`` (the role *Storage Admin*), which a worker or the app does not need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .bucket import CORS_MAX_AGE, CORS_METHODS, Change, cors_problems
from .gcs import GcsStore
from .gcs_errors import translated
from .gcs_parts import RULE_DAYS
from .gcs_requests import RECORD_RETRY, RECORD_TIMEOUT

#: What a browser sends with an upload (the file's type, the create-only precondition the URL signs), and
#: reads back: GCS's ``responseHeader`` is both what a preflight allows and what a response exposes.
CORS_HEADERS = ("Content-Type", "x-goog-if-generation-match", "ETag")


def get_cors(store: GcsStore) -> list[dict[str, Any]]:
    """The bucket's CORS rules, as GCS keeps them (and its metageneration, read with them)."""
    with translated(store.bucket_name, "bucket"):
        store.bucket.reload(timeout=RECORD_TIMEOUT, retry=RECORD_RETRY)
    return [dict(rule) for rule in store.bucket.cors or []]


def as_s3(rule: dict[str, Any]) -> dict[str, Any]:
    """A GCS rule in S3's shape, for :func:`.bucket.cors_problems`."""
    headers = list(rule.get("responseHeader") or [])
    return {
        "AllowedOrigins": list(rule.get("origin") or []),
        "AllowedMethods": [m.upper() for m in rule.get("method") or []],
        "AllowedHeaders": headers,
        "ExposeHeaders": headers,
    }


def browser_problems(store: GcsStore, origins: Sequence[str]) -> list[str]:
    rules = [as_s3(rule) for rule in get_cors(store)]
    return cors_problems(rules, origins, headers=CORS_HEADERS[:2])


def _ours(rule: dict[str, Any]) -> bool:
    methods = {m.upper() for m in rule.get("method") or []}
    return methods == set(CORS_METHODS) and set(rule.get("responseHeader") or []) == set(CORS_HEADERS)


def apply_cors(store: GcsStore, origins: Sequence[str]) -> Change:
    """s3task's rule allows ``origins`` (added to those it had); the bucket's other rules are kept.

    The configuration carries no ETag to write it on: the bucket's metageneration stands in
    (``ifMetagenerationMatch``), so a change made meanwhile fails this one rather than being lost."""
    rules = get_cors(store)
    ours = next((r for r in rules if _ours(r)), None)
    if ours is not None and set(origins) <= set(ours.get("origin") or []):
        return Change("unchanged", f"CORS rule of bucket {store.bucket_name} allows {', '.join(origins)}")
    if ours is None:
        ours = {"method": list(CORS_METHODS), "responseHeader": list(CORS_HEADERS), "maxAgeSeconds": CORS_MAX_AGE}
        rules.append(ours)
        kind = "added"
    else:
        kind = "updated"
    ours["origin"] = sorted({*(ours.get("origin") or []), *origins})
    store.bucket.cors = rules
    with translated(store.bucket_name, "bucket"):
        store.bucket.patch(
            if_metageneration_match=store.bucket.metageneration, timeout=RECORD_TIMEOUT, retry=RECORD_RETRY
        )
    return Change(kind, f"CORS rule of bucket {store.bucket_name}: {', '.join(ours['origin'])}")


def apply_parts_rule(store: GcsStore) -> Change:
    """A lifecycle rule that deletes every object under the store's parts root :data:`RULE_DAYS` days after it
    was written: the parts of an upload nobody continued or cancelled (a tab closed for good). The bucket's other
    rules are kept; written on the bucket's metageneration, as :func:`apply_cors`."""
    with translated(store.bucket_name, "bucket"):
        store.bucket.reload(timeout=RECORD_TIMEOUT, retry=RECORD_RETRY)
    rules = [dict(rule) for rule in store.bucket.lifecycle_rules]
    ours = {"action": {"type": "Delete"}, "condition": {"age": RULE_DAYS, "matchesPrefix": [store.parts_root]}}
    what = f"lifecycle rule of bucket {store.bucket_name}: delete {store.parts_root}* after {RULE_DAYS} days"
    if ours in rules:
        return Change("unchanged", what)
    store.bucket.lifecycle_rules = [*rules, ours]
    with translated(store.bucket_name, "bucket"):
        store.bucket.patch(
            if_metageneration_match=store.bucket.metageneration, timeout=RECORD_TIMEOUT, retry=RECORD_RETRY
        )
    return Change("added", what)
