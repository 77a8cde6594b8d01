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
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from . import StepError, parse

Importer = Callable[[Mapping[str, Any], "_Table"], list[dict[str, Any]]]

#: Arrow's ``utf8_trim_whitespace`` (and Python's ``str.strip``): what s3task's trim and "empty" take as space.
ARROW_SPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

#: The GREL functions that change case, and why none is imported (see the module's description).
_CASES = {
    "toUppercase": (
        "OpenRefine upper-cases as Java does (ß → SS, ﬁ → FI); s3task's Change case writes ß as ẞ and leaves ﬁ"
    ),
    "toLowercase": (
        "OpenRefine lower-cases as Java does (a capital sigma that ends a word → ς, İ → i̇); "
        "s3task's Change case writes σ and i"
    ),
    "toTitlecase": (
        "OpenRefine's title case starts a word only after a space, tab, line break or full stop "
        "(o'neil → O'neil, jean-luc → Jean-luc, 1st → 1st); s3task's Change case starts one after any "
        "character that is not a letter (O'Neil, Jean-Luc, 1St)"
    ),
}


class _Refused(Exception):
    """This operation cannot be imported exactly (``reason``: why, in words; may be empty)."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


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


# --- the operations ---------------------------------------------------------------------------


def _import(operation: Any, table: _Table) -> list[dict[str, Any]]:
    if not isinstance(operation, Mapping) or not isinstance(operation.get("op"), str):
        raise _Refused('it is not an operation (a JSON object with "op")')
    importer = _IMPORTERS.get(operation["op"])
    if importer is None:
        raise _Refused()
    return importer(operation, table)


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


# --- engine configurations and facets ---------------------------------------------------------


def _engine(operation: Mapping[str, Any]) -> tuple[str, list[Mapping[str, Any]]]:
    """The mode and the text facets that select rows (EngineConfig: {"facets", "mode"}).

    A list facet that selects nothing filters nothing (ListFacet.getRowFilter gives no filter); any other
    kind of facet is refused, as OpenRefine's browser sends only facets that select something.
    """
    config = operation.get("engineConfig")
    if not isinstance(config, Mapping):
        raise _Refused('it has no "engineConfig"')
    _fields(config, {"facets", "mode"})
    mode = config.get("mode") or "row-based"
    if mode not in ("row-based", "record-based"):
        raise _Refused(f"its engine mode {mode!r} is not rows or records")
    facets = config.get("facets") or []
    if not isinstance(facets, list):
        raise _Refused('its "facets" is not a list')
    active = []
    for facet in facets:
        if not isinstance(facet, Mapping) or facet.get("type") != "list":
            kind = facet.get("type") if isinstance(facet, Mapping) else None
            raise _Refused(
                f"it applies only to the rows a {kind or 'facet'} facet selects; an s3task step applies to every row"
            )
        _fields(facet, {"type", "name", "columnName", "expression", "invert", "omitBlank", "omitError", "selection",
                        "selectBlank", "selectError"})  # fmt: skip
        selection = facet.get("selection") or []
        if not isinstance(selection, list):
            raise _Refused('a facet\'s "selection" is not a list')
        if selection or _flag(facet, "selectBlank") or _flag(facet, "selectError"):
            active.append(facet)
    return mode, active


def _every_row(operation: Mapping[str, Any]) -> str:
    mode, facets = _engine(operation)
    if facets:
        raise _Refused("it applies only to the rows its facets select; an s3task step applies to every row")
    return mode


def _text_facet(facet: Mapping[str, Any]) -> tuple[str, list[str], bool, bool]:
    """A text facet on a column's value (ListFacetConfig): its column, the values it selects, (blank), invert."""
    column = facet.get("columnName")
    if not isinstance(column, str) or not column:
        raise _Refused("its facet is not on a column")
    expression = facet.get("expression")
    if not isinstance(expression, str) or _tokens(expression) != [("name", "value")]:
        raise _Refused(f"its facet is on the expression {expression!r}, not on the cells' value")
    if _flag(facet, "selectError"):
        raise _Refused("its facet selects (error), and s3task's cells are never errors")
    values: list[str] = []
    for item in facet.get("selection") or []:
        decorated = item.get("v") if isinstance(item, Mapping) else None
        value = decorated.get("v") if isinstance(decorated, Mapping) else None
        if not isinstance(value, str):
            raise _Refused(f"its facet selects {value!r}, which is not text (OpenRefine compares it as a number or "
                           "true/false, s3task's cells are text)")  # fmt: skip
        if value:  # "" is a blank: only (blank) selects it (ExpressionEqualRowFilter.testValue)
            values.append(value)
    return column, list(dict.fromkeys(values)), _flag(facet, "selectBlank"), _flag(facet, "invert")


# --- operations on cells ----------------------------------------------------------------------


def _row_removal(operation: Mapping[str, Any], table: _Table) -> list[dict[str, Any]]:
    # RowRemovalOperation: {"engineConfig"}; it removes the rows the engine selects.
    _fields(operation, {"engineConfig"})
    mode, facets = _engine(operation)
    if mode != "row-based":
        raise _Refused("in records mode OpenRefine removes whole records (a row and the rows under it)")
    if not facets:
        raise _Refused("no facet selects rows, so OpenRefine removes every row")
    if len(facets) > 1:
        raise _Refused("it removes the rows several facets select together; s3task imports one text facet")
    column, values, blank, invert = _text_facet(facets[0])
    if table.names is not None and column not in table.names:
        raise _Refused(f"its facet is on {column!r}, which the table does not have at this point")
    conditions: list[dict[str, Any]] = []
    if values:
        conditions.append({"column": column, "is": "one_of", "values": values})
    if blank:
        table.require_clean(column, "is_empty condition")
        conditions.append({"column": column, "is": "is_empty"})
    if not conditions:  # it selects only "", which no cell is
        if invert:
            raise _Refused("its inverted facet selects every row, so OpenRefine removes every row")
        return []
    return [{"step": "keep_rows" if invert else "remove_rows", "conditions": conditions, "match": "any"}]


def _fill_down(operation: Mapping[str, Any], table: _Table) -> list[dict[str, Any]]:
    # FillDownOperation: {"engineConfig", "columnName"}; a blank cell takes the last non-blank cell above it
    # (ExpressionUtils.isNonBlankData: not null, not ""); in records mode not across records.
    _fields(operation, {"engineConfig", "columnName"})
    if _every_row(operation) != "row-based":
        raise _Refused("in records mode OpenRefine fills down only within each record")
    column = _text(operation, "columnName")
    table.require(column)
    table.require_clean(column, "Fill empty cells")
    return [{"step": "fill_empty", "columns": [column], "with": "above"}]


def _mass_edit(operation: Mapping[str, Any], table: _Table) -> list[dict[str, Any]]:
    # MassEditOperation: {"engineConfig", "columnName", "expression", "edits": [{"from", "fromBlank", "fromError",
    # "to", "type"}]}: each cell's value is looked up once among the "from" values (the last edit naming a value
    # wins); a blank cell takes the "to" of the edit with fromBlank (or "from": [""]).
    _fields(operation, {"engineConfig", "columnName", "expression", "edits"})
    _every_row(operation)
    column = _text(operation, "columnName")
    table.require(column)
    expression = operation.get("expression")
    if not isinstance(expression, str) or _tokens(expression) != [("name", "value")]:
        raise _Refused(f"it edits the values of the expression {expression!r}, not the cells' value")
    edits = operation.get("edits")
    if not isinstance(edits, list):
        raise _Refused('its "edits" is not a list')
    mapping: dict[str, str] = {}
    blank_to: str | None = None
    for edit in edits:
        if not isinstance(edit, Mapping):
            raise _Refused("an edit is not a JSON object")
        _fields(edit, {"from", "fromBlank", "fromError", "to", "type"})
        sources = edit.get("from") or []
        to = edit.get("to")
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise _Refused('an edit\'s "from" is not a list of text')
        if not isinstance(to, str) or edit.get("type", "text") != "text":
            raise _Refused(f"an edit writes {to!r}, which is not text")
        if _flag(edit, "fromError"):
            raise _Refused("an edit changes error cells, and s3task's cells are never errors")
        if _flag(edit, "fromBlank") or sources == [""]:
            blank_to = to
        for source in sources:
            if source:  # "" is a blank, never looked up
                mapping[source] = to
    pairs = _at_once(mapping)
    steps: list[dict[str, Any]] = []
    if pairs:
        steps.append({"step": "replace", "columns": [column], "pairs": pairs, "whole_cell": True})
    if blank_to:  # "" for a blank cell changes nothing
        table.require_clean(column, "Fill empty cells")
        fill = {"step": "fill_empty", "columns": [column], "with": "value", "value": blank_to}
        if not any(_empty(to) for _, to in pairs):
            steps.append(fill)  # no replacement makes an empty cell, so filling after changes only the blanks
        elif not any(find == blank_to for find, _ in pairs):
            steps.insert(0, fill)  # no replacement takes the filled cells, so filling first is the same
        else:
            raise _Refused(
                f"it fills blank cells with {blank_to!r}, which it also replaces, and empties other cells, all at "
                "once; s3task's steps run one after another"
            )
    if any(_spaces_only(to) for to in [*(to for _, to in pairs), blank_to or ""]):
        table.clean.discard(column)
    return steps


def _at_once(mapping: dict[str, str]) -> list[list[str]]:
    """Whole-cell replacements that, made one after another, do what ``mapping`` does at once: a pair whose
    result another pair replaces comes after that pair. A cycle (a → b, b → a) cannot be ordered."""
    pairs = {find: to for find, to in mapping.items() if find != to}
    order: list[list[str]] = []
    placed: set[str] = set()
    for start in pairs:
        chain: list[str] = []
        seen: set[str] = set()
        find = start
        while find in pairs and find not in placed:
            if find in seen:
                raise _Refused(
                    f"it swaps values ({find!r} → {pairs[find]!r} → … → {find!r}) at once; s3task's replacements are "
                    "made one after another"
                )
            chain.append(find)
            seen.add(find)
            find = pairs[find]
        for find in reversed(chain):
            order.append([find, pairs[find]])
            placed.add(find)
    return order


def _empty(text: str) -> bool:
    return not text.strip(ARROW_SPACE)


def _spaces_only(text: str) -> bool:
    return bool(text) and _empty(text)


def _text_transform(operation: Mapping[str, Any], table: _Table) -> list[dict[str, Any]]:
    # TextTransformOperation: {"engineConfig", "columnName", "expression", "onError", "repeat", "repeatCount"}.
    _fields(operation, {"engineConfig", "columnName", "expression", "onError", "repeat", "repeatCount"})
    _every_row(operation)
    column = _text(operation, "columnName")
    table.require(column)
    if operation.get("onError") != "keep-original":  # none: OnError null, which stores the error in the cell
        raise _Refused(f"on error it does {operation.get('onError')!r}; s3task imports keep-original")
    if _flag(operation, "repeat"):
        raise _Refused("it repeats the expression until the cell stops changing")
    expression = operation.get("expression")
    if not isinstance(expression, str):
        raise _Refused('its "expression" is not text')
    function, arguments = _call(expression)
    if function in ("trim", "strip") and not arguments:  # Trim: Guava's CharMatcher.whitespace().trimFrom
        table.clean.add(column)
        return [{"step": "trim", "columns": [column]}]
    if function in _CASES and not arguments:
        raise _Refused(_CASES[function])
    if function == "replace" and len(arguments) == 2:  # Replace: Java's String.replace, every match, as text
        kinds = [kind for kind, _ in arguments]
        if "regex" in kinds[:1]:
            raise _Refused("it finds a regular expression (/…/); s3task imports a replace of text")
        if kinds != ["string", "string"]:
            raise _Refused("its find and replace are not both texts in quotes")
        find, put = (text for _, text in arguments)
        if not find:
            raise _Refused('it finds "", which OpenRefine matches between every two characters')
        if any(0xD800 <= ord(c) <= 0xDFFF for c in find + put):
            raise _Refused("its text has half a character (a lone surrogate)")
        table.clean.discard(column)
        return [{"step": "replace", "columns": [column], "find": find, "replace_with": put}]
    raise _Refused(f's3task imports the expressions value.trim() and value.replace("…", "…"), not {expression!r}')


def _split(operation: Mapping[str, Any], table: _Table) -> list[dict[str, Any]]:
    # ColumnSplitOperation: {"engineConfig", "columnName", "guessCellType", "removeOriginalColumn", "mode",
    # "separator", "regex", "maxColumns"} or, by lengths, "fieldLengths". Refused in every case; the most
    # particular reason is given.
    _fields(operation, {"engineConfig", "columnName", "guessCellType", "removeOriginalColumn", "mode", "separator",
                        "regex", "maxColumns", "fieldLengths"})  # fmt: skip
    _every_row(operation)
    if operation.get("mode") != "separator":
        raise _Refused("it splits by field lengths; s3task's Split a column splits at a separator")
    if operation.get("regex"):
        raise _Refused("its separator is a regular expression; s3task's Split a column splits at a text")
    if not isinstance(operation.get("separator"), str) or not operation["separator"]:
        raise _Refused("it has no separator (OpenRefine then splits at runs of spaces)")
    if operation.get("guessCellType"):
        raise _Refused(
            "it guesses cell types (a part that looks like a number or a date becomes one); s3task keeps text"
        )
    most = operation.get("maxColumns")
    if isinstance(most, bool) or not isinstance(most, int) or most <= 0:
        raise _Refused("with no most columns, OpenRefine makes as many columns as the file's longest cell needs")
    raise _Refused(
        f"OpenRefine makes as many new columns as the file's longest cell needs, up to {most}, so how many depends "
        f"on the file; s3task's Split a column always makes the {most} it names"
    )


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


# --- GREL, as much as these expressions need --------------------------------------------------


def _tokens(expression: str) -> list[tuple[str, str]]:
    """A GREL expression's tokens as OpenRefine reads them (MetaParser, then grel.Scanner): ("name", text),
    ("string", its value), ("regex", its text), ("delimiter", one of . ( ) ,) or ("other", text)."""
    colon = expression.find(":")
    if colon >= 0 and expression[:colon].lower() in ("grel", "gel"):
        expression = expression[colon + 1 :]  # any other prefix: a language GREL does not read, or part of GREL
    out: list[tuple[str, str]] = []
    i, end = 0, len(expression)
    while i < end:
        c = expression[i]
        if _java_space(c):
            i += 1
        elif c in "\"'":
            text, i = _string(expression, i)
            out.append(("string", text))
        elif c == "/":
            close = expression.find("/", i + 1)
            out.append(("regex", expression[i : close + 1] if close > 0 else expression[i:]))
            i = end if close < 0 else close + 1
        elif c.isalpha() or c == "_":
            start = i
            while i < end and (expression[i].isalnum() or expression[i] == "_"):
                i += 1
            out.append(("name", expression[start:i]))
        elif c in ".(),":
            out.append(("delimiter", c))
            i += 1
        else:
            out.append(("other", c))
            i += 1
    return out


def _java_space(c: str) -> bool:
    """Java's Character.isWhitespace, which the Scanner skips between tokens."""
    if c in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f":
        return True
    return c not in "\xa0\u2007\u202f" and unicodedata.category(c) in ("Zs", "Zl", "Zp")


def _string(expression: str, i: int) -> tuple[str, int]:
    """A string literal from its opening quote: \\t, \\n, \\r and \\\\ are escapes, a backslash before any other
    character is that character (grel.Scanner), so there are no \\u escapes."""
    quote, i = expression[i], i + 1
    text: list[str] = []
    while i < len(expression):
        c = expression[i]
        if c == quote:
            return "".join(text), i + 1
        if c == "\\":
            i += 1
            if i < len(expression):
                text.append({"t": "\t", "n": "\n", "r": "\r"}.get(expression[i], expression[i]))
        else:
            text.append(c)
        i += 1
    raise _Refused(f"its expression {expression!r} has a text that is not closed")


def _call(expression: str) -> tuple[str, list[tuple[str, str]]]:
    """``value.f(a, b)`` or ``f(value, a, b)``: f and the one-token arguments after value; else refused."""
    tokens = _tokens(expression)
    value, dot, opening, closing = ("name", "value"), ("delimiter", "."), ("delimiter", "("), ("delimiter", ")")
    refused = _Refused(f's3task imports the expressions value.trim() and value.replace("…", "…"), not {expression!r}')
    if len(tokens) >= 5 and tokens[0] == value and tokens[1] == dot and tokens[3] == opening:
        function, inside = tokens[2], tokens[4:-1]
    elif len(tokens) >= 4 and tokens[1] == opening and tokens[2] == value:
        function, inside = tokens[0], tokens[3:-1]
        if inside:
            if inside[0] != ("delimiter", ","):
                raise refused
            inside = inside[1:]
    else:
        raise refused
    if function[0] != "name" or tokens[-1] != closing:
        raise refused
    arguments: list[tuple[str, str]] = []
    if inside:
        if len(inside) % 2 != 1:
            raise refused
        for k, token in enumerate(inside):
            if k % 2 == 1:
                if token != ("delimiter", ","):
                    raise refused
            elif token[0] not in ("string", "regex", "name", "other"):
                raise refused
            else:
                arguments.append(token)
    return function[1], arguments
