"""Steps and checks: a list of small changes and checks that staff build in the browser and run on any file.

- :mod:`~s3task.steps.spec`: what a list is; :mod:`~s3task.steps.reading` reads one from JSON, a plain-words
  error per step.
- :mod:`~s3task.steps.kinds`: every kind of step and check, declared once.
- :mod:`~s3task.steps.engine`: the list checked against a header, then run block by block.
- :mod:`~s3task.steps.cells`, :mod:`~s3task.steps.rows`, :mod:`~s3task.steps.dates`,
  :mod:`~s3task.steps.checks`: the row-by-row steps, on Arrow.
- :mod:`~s3task.steps.wholefile`: remove duplicates, unique, lookup, in DuckDB.
- :mod:`~s3task.steps.preview`: the builder's preview of the first rows, with each step's effect.
"""

from __future__ import annotations

from .reading import all_kinds, as_text, parse
from .spec import Kind, Step, StepError, StepList

__all__ = ["Kind", "Step", "StepError", "StepList", "all_kinds", "as_text", "parse"]
