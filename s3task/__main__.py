"""``python -m s3task``: the operator CLI (installed as the ``s3task`` command)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
