"""Engine configurations and text facets: which rows an operation applies to (every row, or those its
facets select), and a text facet on a column's value read as its column, values, (blank) and invert.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .grel import _tokens
from .table import _fields, _flag, _Refused


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
