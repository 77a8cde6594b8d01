"""``python -m s3task.web``: the API server's command line (:mod:`s3task.web.cli`)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
