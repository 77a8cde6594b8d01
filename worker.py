"""``python worker.py --help``: run an s3task worker."""

from __future__ import annotations

import sys

from s3task.worker.cli import main

if __name__ == "__main__":
    sys.exit(main())
