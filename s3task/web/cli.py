"""The API server's command line: make and hash tokens, or serve the API with uvicorn.

``python -m s3task.web`` (and, as before, ``python -m s3task.http_api``)::

    new-token --user alice [--role operator]   # a random token and its tokens-file entry
    hash-token [TOKEN]                         # the hash of a token (from stdin if omitted)
    serve [--host 127.0.0.1] [--port 8000]     # the API on its own (settings from S3TASK_*)
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from collections.abc import Sequence

from ..config import Settings
from ..errors import S3TaskError, SettingsError
from ..tasks import Actor
from .api import create_app, one_line
from .tokens import ROLES, hash_token


def build_parser() -> argparse.ArgumentParser:
    started_as = os.path.basename(sys.argv[0])
    prog = "python -m s3task.web" if started_as == "__main__.py" else None  # else s3task-api
    parser = argparse.ArgumentParser(prog=prog, description="s3task HTTP API helpers")
    sub = parser.add_subparsers(dest="command", required=True)
    h = sub.add_parser("hash-token", help="print the hash of a token for the tokens file (token from stdin if omitted)")
    h.add_argument("token", nargs="?")
    n = sub.add_parser("new-token", help="make a random token and print it with its tokens-file entry")
    n.add_argument("--user", required=True)
    n.add_argument("--role", choices=ROLES, default="user")
    s = sub.add_parser("serve", help="run the API on its own with uvicorn")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "hash-token":
        token = args.token if args.token not in (None, "-") else sys.stdin.readline()
        token = token.strip()
        if not token:
            parser.error("no token given")
        print(hash_token(token))
    elif args.command == "new-token":
        Actor(args.user)  # validates the name
        token = secrets.token_urlsafe(32)
        print(f"token: {token}")
        print("tokens-file entry (JSON):")
        print(json.dumps({hash_token(token): {"user": args.user, "role": args.role}}, indent=2))
    elif not 0 <= args.port <= 65535:  # uvicorn would end in a traceback (OverflowError from bind)
        print(
            f"error: --port {args.port} is not allowed: use a port number up to 65535 (0: any free one)",
            file=sys.stderr,
        )
        return 2
    else:
        return serve(args.host, args.port)
    return 0


def serve(host: str, port: int) -> int:
    """Serve the API with uvicorn until stopped; a bad setting is one line and exit status 2."""
    try:
        # Settings, then the tokens file they name, before the store is touched: one line and 2.
        served = create_app(Settings.load())
    except SettingsError as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 2
    except (S3TaskError, ValueError, OSError) as e:  # the store cannot be opened, a handler module is missing
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 1
    import uvicorn

    uvicorn.run(served, host=host, port=port)
    return 0
