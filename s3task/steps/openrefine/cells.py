"""The operations on cells and rows: row removal through a text facet, fill down, mass edit, text
transform (trim and replace; change case refused) and the refusal of a column split, with what s3task
takes as space and empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .facets import _engine, _every_row, _text_facet
from .grel import _call, _tokens
from .table import _fields, _flag, _Refused, _Table, _text

#: Arrow's ``utf8_trim_whitespace`` (and Python's ``str.strip``): what s3task's trim and "empty" take as space.
ARROW_SPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

#: The GREL functions that change case, and why none is imported (see the package's description).
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
