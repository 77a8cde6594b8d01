"""``python -m s3task.notify missed``: the notifications that may not have reached every receiver."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from ..config import Settings, SettingsError
from ..errors import S3TaskError
from ..store import open_store
from . import outbox


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m s3task.notify", description=__doc__)
    p.add_argument(
        "--store",
        help="s3://bucket/prefix, az://container/prefix, gs://bucket/prefix or a local directory (env S3TASK_STORE)",
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("missed", help="list notifications given up on, or left by a dead sender and not checkable")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    args = p.parse_args(argv)
    try:
        settings = Settings.load({"store": args.store})
        store, layout = open_store(settings.store, clock=settings.clock)
        found = outbox.missed(store, layout)
    except (SettingsError, S3TaskError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for item in found:
        if args.json:
            print(json.dumps(item, ensure_ascii=False))
            continue
        event = item.get("event") or {}
        print(f"{event.get('id')}  {event.get('type')}  {event.get('occurred_at')}  {item.get('reason', '')}")
    if not args.json:
        print(f"{len(found)} notification(s) possibly missed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
