"""Which columns the Excel copy writes as numbers and dates, so that amounts can be summed and dates sorted.

The rule is the Parquet copy's (:func:`.parquet.infer_types`: a column is typed when every filled cell of
the whole output fits), narrowed to what Excel holds exactly:

- **numbers** (the Parquet copy's ``int64`` and ``float64``): never a leading ``+`` (a phone number), never a
  leading zero (``007``, a code: the Parquet rule already keeps those text), at most 15 significant digits
  (Excel keeps 15: a 16-digit id would come back changed); written as numbers;
- **dates** (``date32``) and **date-times** (``timestamp``) from 1900-03-01 on (Excel's own calendar is wrong
  before it): written as Excel dates shown ``yyyy-mm-dd`` (``yyyy-mm-dd hh:mm:ss``);
- everything else is text, as before: a column where any value is not such a number or date, ``TRUE``/
  ``FALSE``, and text starting with ``=``, ``+``, ``-`` or ``@`` (a text cell: never a formula, read back
  exactly). Empty cells stay empty.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .parquet import infer_types

if TYPE_CHECKING:
    import pyarrow as pa

NUMBER, DATE, DATETIME, TEXT = "number", "date", "datetime", "text"
#: The significant digits Excel keeps.
EXCEL_DIGITS = 15
_FROM = {"date32": DATE, "timestamp": DATETIME, "int64": NUMBER, "float64": NUMBER}
#: Excel's first right day (its calendar counts a 1900-02-29 that never was).
_FIRST_DAY = "1900-03-01"


def excel_kinds(tables: Iterator[pa.Table], names: list[str]) -> list[str]:
    """The first pass over the output's rows (``tables``): each column's kind in the Excel copy."""
    fits = dict.fromkeys(names, True)
    kinds = infer_types(_checked(tables, names, fits), names)  # reads every table: ``fits`` is whole after
    return [_FROM.get(kind, TEXT) if fits[name] else TEXT for name, kind in zip(names, kinds, strict=True)]


def values_of(col: Any, kind: str) -> list[Any]:
    """A column's cells as the Excel copy writes them: floats, dates, date-times, or text ("" stays empty)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind == TEXT:
        return col.to_pylist()  # type: ignore[no-any-return]
    text = pc.if_else(pc.equal(pc.binary_length(col), 0), None, col)
    if kind == NUMBER:
        return pc.cast(text, pa.float64()).to_pylist()  # type: ignore[no-any-return]
    stamps = pc.cast(pc.replace_substring(text, "T", " "), pa.timestamp("us"))
    return (pc.cast(stamps, pa.date32()) if kind == DATE else stamps).to_pylist()  # type: ignore[no-any-return]


def _checked(tables: Iterator[pa.Table], names: list[str], fits: dict[str, bool]) -> Iterator[pa.Table]:
    """The tables as they go by, noting the columns with a value Excel would not keep exactly."""
    for table in tables:
        for name, col in zip(names, table.columns, strict=True):
            if fits[name] and not _excel_keeps(col):
                fits[name] = False
        yield table


def _excel_keeps(col: Any) -> bool:
    """No value with a leading ``+``, none with more significant digits than Excel keeps, no date before
    1900-03-01 (a value of another kind is for the Parquet rule to judge)."""
    import pyarrow.compute as pc

    if pc.any(pc.starts_with(col, "+")).as_py():
        return False
    mantissa = pc.replace_substring_regex(col, r"[eE].*$", "")
    digits = pc.replace_substring_regex(pc.replace_substring_regex(mantissa, r"[^0-9]", ""), r"^0+", "")
    numeric = pc.match_substring_regex(col, r"^-?[0-9.]+([eE][-+]?[0-9]+)?$")
    if pc.any(pc.and_(numeric, pc.greater(pc.utf8_length(digits), EXCEL_DIGITS))).as_py():
        return False
    dated = pc.match_substring_regex(col, r"^[0-9]{4}-[0-9]{2}-[0-9]{2}")
    return not pc.any(pc.and_(dated, pc.less(pc.utf8_slice_codeunits(col, 0, 10), _FIRST_DAY))).as_py()
