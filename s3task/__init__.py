"""s3task: a batch task queue whose only infrastructure is an object store."""

from __future__ import annotations

# The one place the version is written: pyproject.toml reads it from here
# (dynamic = ["version"]), and workers write it into their presence records.
__version__ = "0.1.0"
