"""The operations on columns: rename, removal (one or several), reorder and the moves, each imported as
the step that changes the table's columns the same way, following the column names through the history.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .table import Importer, _fields, _flag, _names, _Refused, _Table, _text


def _rename(operation: Mapping[str, Any], table: _Table) -> list[dict[str, Any]]:
    # ColumnRenameOperation: {"oldColumnName", "newColumnName"}; no such old column, or a new name taken: it stops.
    _fields(operation, {"oldColumnName", "newColumnName"})
    old, new = _text(operation, "oldColumnName"), _text(operation, "newColumnName")
    table.require(old)
    if old == new or (table.names is not None and new in table.names):
        raise _Refused(f"the table already has a column named {new!r} (OpenRefine stops here)")
    table.rename(old, new)
    return [{"step": "rename_columns", "names": {old: new}}]


def _removal(operation: Mapping[str, Any], table: _Table) -> list[dict[str, Any]]:
    # ColumnRemovalOperation: {"columnName"}; no such column: it stops.
    _fields(operation, {"columnName"})
    name = _text(operation, "columnName")
    table.require(name)
    table.drop([name])
    return [{"step": "drop_columns", "columns": [name]}]


def _multi_removal(operation: Mapping[str, Any], table: _Table) -> list[dict[str, Any]]:
    # ColumnMultiRemovalOperation: {"columnNames"}; it keeps the columns not named (a name not there: nothing).
    _fields(operation, {"columnNames"})
    names = list(dict.fromkeys(_names(operation, "columnNames")))
    if table.names is not None:
        names = [n for n in names if n in table.names]
    if not names:
        return []
    table.drop(names)
    return [{"step": "drop_columns", "columns": names}]


def _reorder(operation: Mapping[str, Any], table: _Table) -> list[dict[str, Any]]:
    # ColumnReorderOperation + ColumnReorderChange: the columns named, in that order (a name not there is passed
    # over); the others are removed, or with isPureReorder (PR #7227) put after them in their order.
    _fields(operation, {"columnNames", "isPureReorder"})
    names = operation.get("columnNames")
    if not isinstance(names, list) or not all(isinstance(v, str) and v for v in names):
        raise _Refused('its "columnNames" is not a list of column names')
    if len(set(names)) != len(names):
        raise _Refused("it names a column twice")
    pure = _flag(operation, "isPureReorder")
    if table.names is not None:
        names = [n for n in names if n in table.names]
    if pure:
        if not names:
            return []
        if table.names is not None:
            table.names = names + [n for n in table.names if n not in names]
        return [{"step": "reorder_columns", "columns": names}]
    if not names:
        raise _Refused("it removes every column")
    if table.names is not None:
        table.names = list(names)
    table.keep(names)
    return [{"step": "keep_columns", "columns": names}]


def _move(where: str) -> Importer:
    """core/column-move-first, -last, -left, -right (AbstractColumnMoveOperation: {"columnName"}) and
    core/column-move ({"columnName", "index"}): the column taken out and put back at the index
    (ColumnMoveChange)."""

    def importer(operation: Mapping[str, Any], table: _Table) -> list[dict[str, Any]]:
        _fields(operation, {"columnName", "index"} if where == "index" else {"columnName"})
        name = _text(operation, "columnName")
        table.require(name)
        if where == "first" and table.names is None:
            return [{"step": "reorder_columns", "columns": [name]}]
        names = table.known("OpenRefine moves the column to a place counted in the table's columns at that point")
        at, count = names.index(name), len(names)
        if where == "index":
            index = operation.get("index")
            if isinstance(index, bool) or not isinstance(index, int):
                raise _Refused('its "index" is not a whole number')
            if not 0 <= index < count:
                raise _Refused(f"the table has {count} columns, so there is no place {index} (OpenRefine stops here)")
        else:
            index = {"first": 0, "last": count - 1, "left": max(0, at - 1), "right": min(count - 1, at + 1)}[where]
        rest = [n for n in names if n != name]
        after = [*rest[:index], name, *rest[index:]]
        if after == names:
            return []
        table.names = after
        return [{"step": "reorder_columns", "columns": after[: index + 1]}]

    return importer
