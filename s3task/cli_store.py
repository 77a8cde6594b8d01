"""``python -m s3task repair | doctor | init``: the commands on the store itself, not on tasks.

``repair`` puts the ``active/`` markers right, ``doctor`` checks the store does what s3task relies on
(conditional writes, listing, its clock, and for browsers CORS and URL signing), ``init`` sets a bucket
(or an Azure container, or a GCS bucket's CORS rule) up for the app.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeGuard

from . import markers
from .config import Settings
from .errors import InvalidInput
from .layout import Layout
from .record import TaskRecord
from .store.base import ObjectStore
from .store.probe import cas_probe
from .tasks.unsent import drop_left

if TYPE_CHECKING:
    from .store.azure import AzureStore
    from .store.gcs import GcsStore

EXIT_ERROR = 1
#: Where ./run.sh serves the app: the origins init allows when none is given.
DEV_ORIGINS = ("http://127.0.0.1:8501", "http://localhost:8501")


def add_store_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The commands on the store itself: repair, doctor, init."""
    sub.add_parser(
        "repair",
        help="recreate missing active markers, drop stale ones, delete files cancelled uploads left (scans all tasks)",
    )
    s = sub.add_parser(
        "doctor", help="check the store enforces conditional writes, we may use it, and browsers may too"
    )
    s.add_argument("--origin", action="append", default=[], help="the app's origin to check CORS for (repeatable)")

    s = sub.add_parser(
        "init",
        help="set up the bucket: create it, let the app's origin upload and download (CORS), "
        "abort abandoned multipart uploads after a day, optionally expire old task files",
    )
    s.add_argument(
        "--origin",
        action="append",
        default=[],
        help="where browsers load the app from, e.g. https://tasks.example.org (repeatable; "
        f"env S3TASK_APP_ORIGIN; default {', '.join(DEV_ORIGINS)})",
    )
    s.add_argument(
        "--retain-days",
        type=int,
        metavar="N",
        help="delete task inputs and outputs N days after they were written (0 removes that rule; "
        "records stay, so the task history does)",
    )


def cmd_repair(args: argparse.Namespace, store: ObjectStore, layout: Layout) -> int:
    dropped: list[str] = []  # files of tasks cancelled before they were queued, left by a cancel that died

    def each(record: TaskRecord) -> None:
        if drop_left(store, record):
            dropped.append(record.task_id)

    added, removed, problems = markers.repair(store, layout, each)
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    print(
        f"markers added: {added}, removed: {removed}, unreadable records: {len(problems)}, "
        f"files of cancelled uploads deleted: {len(dropped)}"
    )
    return 0


def cmd_doctor(args: argparse.Namespace, store: ObjectStore, layout: Layout) -> int:
    print(f"store: {store.description}, prefix {layout.prefix}")
    cas_probe(store, layout.prefix)
    print("ok: conditional writes are enforced (create-once, If-Match, one winner of a parallel burst)")
    store.list_keys(layout.active_root, limit=1)
    print("ok: listing works")
    skew = (store.now() - datetime.now(UTC)).total_seconds()
    print(f"ok: store clock is {skew:+.1f}s from this machine's (leases follow the store's clock)")
    signing = _doctor_signing(store)
    return _doctor_cors(args, store) or signing


def _doctor_signing(store: object) -> int:
    """Signed in to Azure with a token, browser URLs need a user delegation key: can the identity get one?
    On GCS, credentials without a key sign through IAM's signBlob: may they?"""
    if _on_gcs(store):
        signing, fix = store.sign_check(), "grant the service account roles/iam.serviceAccountTokenCreator on itself"
        if signing is None:
            print("ok: browser URLs are signed with the credentials' own key")
    elif _on_azure(store):
        from .store import azure_account

        signing, fix = azure_account.delegation_check(store), azure_account.DELEGATION_FIX
    else:
        return 0
    if signing is None:  # a key signs them
        return 0
    ok, what = signing
    print(f"{'ok' if ok else 'problem'}: {what}", file=sys.stdout if ok else sys.stderr)
    if not ok:
        print(f"fix: {fix}", file=sys.stderr)
    return 0 if ok else EXIT_ERROR


def _on_azure(store: object) -> TypeGuard[AzureStore]:
    """An Azure Blob store? (Its module, and the SDK, are loaded only if the store was made by it.)"""
    azure = sys.modules.get("s3task.store.azure")
    return azure is not None and isinstance(store, azure.AzureStore)


def _on_gcs(store: object) -> TypeGuard[GcsStore]:
    """A Google Cloud Storage store? (Loaded only if the store was made by it, as Azure's.)"""
    gcs = sys.modules.get("s3task.store.gcs")
    return gcs is not None and isinstance(store, gcs.GcsStore)


def _doctor_cors(args: argparse.Namespace, store: ObjectStore) -> int:
    """Browsers upload and download directly: the bucket's (Azure: the account's) CORS rule must let them."""
    from .store.s3 import S3Store

    origins = _origins(args.origin, default=())
    if _on_azure(store):
        from .store import azure_account

        problems, whose = azure_account.browser_problems(store, origins), "storage account's"
    elif _on_gcs(store):
        from .store import gcs_bucket

        problems, whose = gcs_bucket.browser_problems(store, origins), "bucket's"
    elif isinstance(store, S3Store):
        from .store import bucket

        problems, whose = bucket.cors_problems(bucket.get_cors(store), origins), "bucket's"
    else:
        print("ok: no CORS rule needed: browsers upload through the app's signed /transfer routes")
        return 0
    if not problems:
        where = ", ".join(origins) if origins else "any origin"
        print(f"ok: the {whose} CORS rule lets browsers at {where} upload (PUT) and download (GET, HEAD)")
        return 0
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    print(
        "fix: python -m s3task init --origin <the app's origin>   (without it, the app falls back to "
        "uploading through itself)",
        file=sys.stderr,
    )
    return EXIT_ERROR


def cmd_init(args: argparse.Namespace, store: ObjectStore, layout: Layout) -> int:
    from .store.s3 import S3Store

    if _on_azure(store):
        return _init_azure(args, store)
    if _on_gcs(store):
        return _init_gcs(args, store)
    if not isinstance(store, S3Store):
        store.list_keys(layout.active_root, limit=1)
        print(f"{store.description}: nothing to set up (no CORS rule needed: browsers upload through the app)")
        return 0
    from .store import bucket

    if args.retain_days is not None and args.retain_days < 0:
        raise InvalidInput("--retain-days must be 0 (no expiry rule) or more")
    origins = _origins(args.origin, default=DEV_ORIGINS)
    changes = [bucket.ensure_bucket(store), bucket.apply_cors(store, origins)]
    changes += bucket.apply_lifecycle(store, layout.prefix, args.retain_days)
    for change in changes:
        print(change)
    return 0


def _init_azure(args: argparse.Namespace, store: AzureStore) -> int:
    """The container, and the account's CORS rule for the app's origin (no lifecycle rule: see docs/STORES.md)."""
    from .store import azure_account

    if args.retain_days is not None:
        raise InvalidInput("--retain-days sets an S3 lifecycle rule; on Azure, set a lifecycle management policy")
    origins = _origins(args.origin, default=DEV_ORIGINS)
    for change in (azure_account.ensure_container(store), azure_account.apply_cors(store, origins)):
        print(change)
    return 0


def _init_gcs(args: argparse.Namespace, store: GcsStore) -> int:
    """The bucket's CORS rule for the app's origin, and the rule that deletes what uploads in parts left after a
    week (the bucket itself is made in the project, outside s3task)."""
    from .store import gcs_bucket

    if args.retain_days is not None:
        raise InvalidInput("--retain-days sets an S3 lifecycle rule; on GCS, set the bucket's lifecycle rules")
    print(gcs_bucket.apply_cors(store, _origins(args.origin, default=DEV_ORIGINS)))
    print(gcs_bucket.apply_parts_rule(store))
    return 0


def _origins(given: Sequence[str], default: Sequence[str]) -> list[str]:
    """--origin flags, else S3TASK_APP_ORIGIN, else ``default``; each an origin (scheme://host[:port])."""
    raw = list(given) or [Settings.load().app_origin]
    origins = [o.strip().rstrip("/") for item in raw for o in item.split(",") if o.strip()] or list(default)
    for origin in origins:
        if origin != "*" and not re.fullmatch(r"https?://[^/\s?#]+", origin):
            raise InvalidInput(
                f"{origin!r} is not an origin; write it as scheme://host[:port], e.g. https://tasks.example.org"
            )
    return origins


STORE_COMMANDS: dict[str, Callable[[argparse.Namespace, ObjectStore, Layout], int]] = {
    "repair": cmd_repair,
    "doctor": cmd_doctor,
    "init": cmd_init,
}
