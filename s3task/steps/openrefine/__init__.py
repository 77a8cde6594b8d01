"""OpenRefine's operation history (Undo/Redo → Extract…) as a step list, or why not.

:func:`from_openrefine` reads the JSON array OpenRefine extracts and gives the step list that does the
same to a file, operation by operation. An operation it cannot import exactly is refused with a
:class:`~s3task.steps.StepError` that names it (its place in the history, its ``op``, its
``description``) and says why, and then nothing is imported: a list that does almost what the history
did would be worse than none. "Exactly" means the same cells on every file, as OpenRefine's own code
(read in OpenRefine/OpenRefine, cited below) computes them; in s3task every cell is text and an
OpenRefine blank cell (null or "") is "".

What is imported (the rest is refused):

- ``core/column-rename`` → ``rename_columns``; ``core/column-removal`` and ``core/column-multi-removal``
  (OpenRefine PR #7194, 2025) → ``drop_columns``.
- ``core/column-reorder`` → ``keep_columns`` (it drops the columns it does not list), or, with
  ``"isPureReorder": true`` (PR #7227, 2026: the unlisted columns are kept, after the listed ones),
  ``reorder_columns``.
- ``core/column-move`` (to an index) and ``core/column-move-first/-last/-left/-right`` (PR #7174, 2025)
  → ``reorder_columns`` with the columns before and up to the moved one. Only moving first needs no
  more; the others need the table's columns (``columns=``), followed through the history.
- ``core/mass-edit`` on ``value`` → ``replace`` of whole cells (OpenRefine makes every edit at once;
  the pairs are ordered so that one after another does the same, and a swap is refused), and its
  edit of blank cells → ``fill_empty`` with the value.
- ``core/text-transform`` with ``value.trim()`` (or ``strip``) → ``trim``; with
  ``value.replace("find", "with")`` (text, not a /regex/) → ``replace`` of a part of the cell.
- ``core/row-removal`` through one text facet on ``value`` → ``remove_rows`` (``keep_rows`` when the
  facet is inverted) with ``one_of`` its values, and ``is_empty`` when it selects (blank).
- ``core/fill-down`` in rows mode → ``fill_empty`` from ``above``.

Why some things are refused though they look alike:

- A cell of only spaces is filled for OpenRefine and empty for s3task (``fill_empty``, ``is_empty``).
  So fill-down, a mass edit of blank cells and a facet's (blank) are imported only for a column the
  history trimmed before (and did not change since in a way that can leave a cell of only spaces).
- Change case is not OpenRefine's: Java upper-cases ß as SS and ﬁ as FI and lower-cases a word-final
  Σ as ς and İ as i̇ (s3task: ẞ, ﬁ, σ, i), and OpenRefine's title case starts words only after a space,
  tab, line break or full stop (O'neil, Jean-luc; s3task: O'Neil, Jean-Luc).
- ``core/column-split`` makes as many new columns as the file's longest cell needs (at most
  ``maxColumns``): the number depends on the file, and a step names its new columns in advance.
- An operation with facets in its ``engineConfig`` changes only the rows they select; a step changes
  every row.

Without ``columns=`` a reorder or a removal naming a column the file does not have is imported as it is:
OpenRefine passes over that name, and s3task's check of the list against the file refuses it (loudly,
never a different table).

One difference is accepted: OpenRefine's trim (Guava's ``CharMatcher.whitespace()``) keeps the four
ASCII information separators U+001C–U+001F at the ends of a cell and s3task's trim (Arrow's) removes
them; they are control characters, not text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .. import StepError, parse
from .cells import ARROW_SPACE, _fill_down, _mass_edit, _row_removal, _split, _text_transform
from .columns import _move, _multi_removal, _removal, _rename, _reorder
from .table import Importer, _Refused, _Table

__all__ = ["ARROW_SPACE", "from_openrefine"]


def from_openrefine(raw: str | bytes | list[Any], columns: list[str] | None = None) -> list[dict[str, Any]]:
    """The step list that does what an OpenRefine operation history does, or a :class:`StepError` naming
    the first operation it cannot import exactly (and then nothing is imported).

    ``columns``: the table's column names before the history, when known. The names are followed through
    the operations, so a move to an index can be imported and an operation on a column that is not there
    at that point is refused (OpenRefine would stop there).
    """
    operations = _history(raw)
    table = _Table(columns)
    out: list[dict[str, Any]] = []
    for number, operation in enumerate(operations, 1):
        where = _label(number, operation)
        try:
            steps = _import(operation, table)
            _check_steps(steps)
        except _Refused as e:
            why = f": {e.reason}" if e.reason else ""
            raise StepError(f"{where}: s3task cannot import this{why}; nothing was imported") from None
        out.extend(steps)
    try:
        parse(out)
    except StepError as e:
        raise StepError(f"the history makes a step list s3task cannot keep: {e}; nothing was imported") from None
    return out


def _history(raw: str | bytes | list[Any]) -> list[Any]:
    if isinstance(raw, bytes | str):
        try:
            raw = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise StepError(f"the OpenRefine history is not valid JSON: {e}") from None
    if not isinstance(raw, list):
        raise StepError(
            "an OpenRefine history is the JSON array OpenRefine gives under Undo/Redo → Extract…, "
            'e.g. [{"op": "core/column-rename", "oldColumnName": "a", "newColumnName": "b"}]'
        )
    return raw


def _label(number: int, operation: Any) -> str:
    if not isinstance(operation, Mapping) or not isinstance(operation.get("op"), str):
        return f"Operation {number}"
    description = operation.get("description")
    if isinstance(description, str) and description:
        return f"Operation {number} ({operation['op']}, {json.dumps(description, ensure_ascii=False)})"
    return f"Operation {number} ({operation['op']})"


def _check_steps(steps: list[dict[str, Any]]) -> None:
    """Each step as s3task reads it (a name too long, too many values): refused in the operation's words."""
    try:
        parse(steps)
    except StepError as e:
        raise _Refused(re.sub(r"^Step \d+ \([^)]*\): ", "", str(e))) from None


# --- the operations ---------------------------------------------------------------------------


def _import(operation: Any, table: _Table) -> list[dict[str, Any]]:
    if not isinstance(operation, Mapping) or not isinstance(operation.get("op"), str):
        raise _Refused('it is not an operation (a JSON object with "op")')
    importer = _IMPORTERS.get(operation["op"])
    if importer is None:
        raise _Refused()
    return importer(operation, table)


_IMPORTERS: dict[str, Importer] = {
    "core/column-rename": _rename,
    "core/column-removal": _removal,
    "core/column-multi-removal": _multi_removal,
    "core/column-reorder": _reorder,
    "core/column-move": _move("index"),
    "core/column-move-first": _move("first"),
    "core/column-move-last": _move("last"),
    "core/column-move-left": _move("left"),
    "core/column-move-right": _move("right"),
    "core/mass-edit": _mass_edit,
    "core/text-transform": _text_transform,
    "core/row-removal": _row_removal,
    "core/fill-down": _fill_down,
    "core/column-split": _split,
}
