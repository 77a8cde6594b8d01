"""s3task: a batch task queue whose only infrastructure is an object store."""

from __future__ import annotations

__version__ = "0.1.0"
