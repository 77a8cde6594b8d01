"""Compatibility: the HTTP control API now lives in :mod:`s3task.web`.

Kept so that ``python -m s3task.http_api``, ``uvicorn s3task.http_api:app --factory``,
the ``s3task-api`` console script and ``from s3task.http_api import routes`` go on working.
"""

from __future__ import annotations

import sys

from .web.api import Api, app, create_app, routes
from .web.cli import main
from .web.openapi import openapi_document
from .web.tokens import TOKENS_FILE_ENV, TokenTable, hash_token, parse_tokens

__all__ = [
    "TOKENS_FILE_ENV",
    "Api",
    "TokenTable",
    "app",
    "create_app",
    "hash_token",
    "main",
    "openapi_document",
    "parse_tokens",
    "routes",
]

if __name__ == "__main__":
    sys.exit(main())
