"""The table as the history goes (its column names, when given, and the columns known to hold no cell of
only spaces), the reading of an operation's fields, and :class:`_Refused`, which every importer raises when
an operation cannot be imported exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .. import StepError

Importer = Callable[[Mapping[str, Any], "_Table"], list[dict[str, Any]]]


class _Refused(Exception):
    """This operation cannot be imported exactly (``reason``: why, in words; may be empty)."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


# --- the table as the history goes ------------------------------------------------------------


class _Table:
    """The column names (when given) and the columns known to hold no cell of only spaces."""

    def __init__(self, columns: list[str] | None) -> None:
        if columns is not None:
            if not isinstance(columns, list) or not all(isinstance(c, str) and c for c in columns):
                raise StepError("columns: the table's column names, a list of text")
            if len(set(columns)) != len(columns):
                raise StepError("columns: a column name is there twice")
        self.names = None if columns is None else list(columns)
        #: Trimmed earlier in the history, and since then changed only in ways that leave no cell of only spaces.
        self.clean: set[str] = set()

    def require(self, name: str) -> None:
        if self.names is not None and name not in self.names:
            raise _Refused(f"the table has no column {name!r} at this point (OpenRefine stops here)")

    def known(self, why: str) -> list[str]:
        if self.names is None:
            raise _Refused(f"{why}; give the table's columns to import it")
        return self.names

    def rename(self, old: str, new: str) -> None:
        if self.names is not None:
            self.names = [new if n == old else n for n in self.names]
        if old in self.clean:
            self.clean = (self.clean - {old}) | {new}
        else:
            self.clean.discard(new)

    def keep(self, kept: list[str]) -> None:
        self.clean &= set(kept)

    def drop(self, dropped: list[str]) -> None:
        if self.names is not None:
            self.names = [n for n in self.names if n not in dropped]
        self.clean -= set(dropped)

    def require_clean(self, column: str, what: str) -> None:
        if column not in self.clean:
            raise _Refused(
                f"OpenRefine takes a cell of only spaces as filled and s3task's {what} takes it as empty; they agree "
                f"only on a column the history trimmed before (value.trim()), and {column!r} is not one"
            )


# --- reading an operation's fields ------------------------------------------------------------


def _fields(operation: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(operation) - allowed - {"op", "description"})
    if unknown:
        raise _Refused(f"it has a field s3task does not know ({', '.join(map(repr, unknown))})")


def _text(operation: Mapping[str, Any], key: str) -> str:
    value = operation.get(key)
    if not isinstance(value, str) or not value:
        raise _Refused(f'its "{key}" is not a name or text')
    return value


def _flag(operation: Mapping[str, Any], key: str) -> bool:
    value = operation.get(key, False)
    if not isinstance(value, bool):
        raise _Refused(f'its "{key}" is not true or false')
    return value


def _names(operation: Mapping[str, Any], key: str) -> list[str]:
    value = operation.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _Refused(f'its "{key}" is not a list of column names')
    return value
