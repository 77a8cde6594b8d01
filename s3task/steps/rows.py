"""Conditions on a row's cells, for Keep rows and Remove rows (and nowhere else).

A condition is ``{"column", "is", "value" | "values", "ignore_case"}``. Text tests compare the cell as
written; ``greater_than``/``less_than`` compare numbers (a cell that is not a plain number, e.g.
``1.234,5``, never meets them: Plain numbers first); ``before``/``after`` compare ISO dates
(YYYY-MM-DD; Change date format first). Conditions are combined with all (and) or any (or).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .kinds import TESTS
from .spec import MAX_ITEMS, MAX_TEXT, StepError

if TYPE_CHECKING:
    import pyarrow as pa

    from .block import Block
    from .spec import Step

NO_VALUE = ("is_empty", "is_not_empty")
NUMBER_TESTS = ("greater_than", "less_than")
DATE_TESTS = ("before", "after")
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"  # ASCII digits: Python's \d takes others


def read_condition(where: str, raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise StepError(f'{where} is an object with "column" and "is"')
    unknown = sorted(set(raw) - {"column", "is", "value", "values", "ignore_case"})
    if unknown:
        raise StepError(f"{where} has no field {', '.join(map(repr, unknown))}")
    column, test = raw.get("column"), raw.get("is")
    if not isinstance(column, str) or not column or len(column) > MAX_TEXT:
        raise StepError(f'{where}: "column" names a column')
    if test not in TESTS:
        raise StepError(f'{where}: "is" is one of {", ".join(TESTS)}; not {test!r}')
    ignore_case = raw.get("ignore_case", False)
    if not isinstance(ignore_case, bool):
        raise StepError(f'{where}: "ignore_case" is true or false')
    out: dict[str, Any] = {"column": column, "is": test, "ignore_case": ignore_case}
    if test == "one_of":
        values = raw.get("values")
        if not isinstance(values, list) or not values or len(values) > MAX_ITEMS:
            raise StepError(f'{where}: "values" lists the values (1 to {MAX_ITEMS:,})')
        if not all(isinstance(v, str) and len(v) <= MAX_TEXT for v in values):
            raise StepError(f'{where}: each of "values" is text')
        out["values"] = list(values)
    elif test not in NO_VALUE:
        value = raw.get("value")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise StepError(f'{where}: "value" is required for {test}')
        value = value if isinstance(value, str) else repr(value)
        if len(value) > MAX_TEXT:
            raise StepError(f'{where}: "value" is longer than {MAX_TEXT} characters')
        if test in NUMBER_TESTS and not re.match(NUMBER, value.strip()):
            raise StepError(f"{where}: {test} compares numbers; {value!r} is not a number")
        if test in DATE_TESTS and not ISO_DATE.match(value.strip()):
            raise StepError(f"{where}: {test} compares dates written YYYY-MM-DD; {value!r} is not one")
        if test == "matches":
            check_pattern(f"{where}: the pattern", value)
        out["value"] = value
    return out


def check_pattern(where: str, pattern: str) -> None:
    """Refuse a regular expression Arrow's engine (RE2) cannot use, in words."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        pc.match_substring_regex(pa.array([""], pa.large_string()), pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise StepError(f"{where} {pattern!r} is not a regular expression this can use: {e}") from e


def columns_of(step: Step) -> list[str]:
    return [c["column"] for c in step["conditions"]]


def meets(step: Step, block: Block) -> pa.Array:
    """Which rows meet the step's conditions (all, or any)."""
    import pyarrow.compute as pc

    masks = [_test(c, block.table.column(c["column"])) for c in step["conditions"]]
    out = masks[0]
    for mask in masks[1:]:
        out = pc.and_(out, mask) if step["match"] == "all" else pc.or_(out, mask)
    return pc.fill_null(out, False)


def _test(c: Mapping[str, Any], column: pa.ChunkedArray) -> pa.ChunkedArray:
    import pyarrow as pa
    import pyarrow.compute as pc

    test, fold = c["is"], c["ignore_case"]
    if test == "is_empty":
        return pc.equal(pc.utf8_trim_whitespace(column), "")
    if test == "is_not_empty":
        return pc.not_equal(pc.utf8_trim_whitespace(column), "")
    if test in NUMBER_TESTS:
        text = pc.utf8_trim_whitespace(column)
        numeric = pc.match_substring_regex(text, NUMBER)
        values = pc.cast(pc.if_else(numeric, text, "0"), pa.float64())
        limit = float(c["value"])
        compare = pc.greater(values, limit) if test == "greater_than" else pc.less(values, limit)
        return pc.and_(numeric, compare)
    if test in DATE_TESTS:
        text = pc.utf8_trim_whitespace(column)
        dated = pc.match_substring_regex(text, r"^\d{4}-\d{2}-\d{2}$")
        value = c["value"].strip()
        compare = pc.less(text, value) if test == "before" else pc.greater(text, value)
        return pc.and_(dated, compare)
    if test == "one_of":
        values = c["values"]
        if fold:
            return pc.is_in(pc.utf8_lower(column), value_set=pa.array([v.lower() for v in values], pa.large_string()))
        return pc.is_in(column, value_set=pa.array(values, pa.large_string()))
    value = c["value"]
    if test == "matches":
        return pc.match_substring_regex(column, value, ignore_case=fold)
    if test in ("equals", "not_equals"):
        same = pc.equal(pc.utf8_lower(column), value.lower()) if fold else pc.equal(column, value)
        return same if test == "equals" else pc.invert(same)
    kernel = {"contains": pc.match_substring, "starts_with": pc.starts_with, "ends_with": pc.ends_with}[test]
    return kernel(column, value, ignore_case=fold)
