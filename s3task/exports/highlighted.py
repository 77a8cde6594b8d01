"""A comparison's Excel copy: its highlighter table (docs/COMPARE.md) as one worksheet whose changes are
coloured as daff colours them (its ``DiffRender.sampleCss``): a row added green, a row removed red, a changed
cell (one holding its row's arrow, ``old->new``) blue, an added or removed column green or red, the header
row blue-grey and bold. Every cell is text: a changed cell holds both values. Streamed as the other
workbooks are (xlsxwriter's constant-memory mode), so its memory does not grow with the rows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..errors import CannotExport
from . import variants
from .source import exact_tables, peek_bom
from .write_only import WriteOnly

SHEET_NAME = "Changes"
#: daff's colours (coopy/DiffRender.hx, sampleCss): add, remove, modify, spec, header.
ADDED, REMOVED, CHANGED, SPEC, HEADER = "#7FFF7F", "#FF7F7F", "#7F7FFF", "#AAAAAA", "#AAAAFF"


def write_highlighted(open_source: Any, sink: Any, *, created: datetime | None = None) -> int:
    """The highlighter ``open_source()`` opens, as a coloured worksheet into ``sink`` (the store's writer);
    returns the rows written under the header."""
    with open_source() as raw:
        legacy, stream = peek_bom(raw)
        first, tables = exact_tables(stream, legacy)
        return highlighted_sheet(first, tables, sink, created=created)


def highlighted_sheet(first: list[str], tables: Any, sink: Any, *, created: datetime | None = None) -> int:
    """Rows of a highlighter (Arrow tables of text under its first row ``first``: all of it, or a view's
    rows), as the coloured worksheet into ``sink``; returns the rows written under the first."""
    import xlsxwriter  # type: ignore[import-untyped]

    book = xlsxwriter.Workbook(
        WriteOnly(sink),
        {"constant_memory": True, "strings_to_numbers": False, "strings_to_formulas": False, "strings_to_urls": False},
    )
    book.set_properties({"created": created or datetime(2000, 1, 1, tzinfo=UTC)})  # the same bytes each time
    sheet = book.add_worksheet(SHEET_NAME)
    fill = {
        name: book.add_format({"bg_color": colour, **({"bold": True} if name == "header" else {})})
        for name, colour in (("add", ADDED), ("remove", REMOVED), ("modify", CHANGED), ("spec", SPEC),
                             ("header", HEADER))
    }  # fmt: skip
    if len(first) > variants.EXCEL_MAX_COLUMNS:
        raise CannotExport(variants.too_many_columns(len(first)))
    columns = first if first and first[0] == "!" else [""] * len(first)  # "+++"/"---" over a column
    row = 0
    _write(sheet, row, first, [fill["spec" if first[:1] == ["!"] else "header"]] * len(first))
    for table in tables:
        if row + table.num_rows + 1 > variants.EXCEL_MAX_ROWS:
            raise CannotExport(variants.too_many_rows(row + table.num_rows))
        for values in zip(*(c.to_pylist() for c in table.columns), strict=True):
            row += 1
            _write(sheet, row, list(values), _formats(list(values), columns, fill))
    sheet.freeze_panes(2 if columns[:1] == ["!"] else 1, 0)  # the header (and the columns' marks) stay in view
    book.close()
    return row


def _formats(values: list[Any], columns: list[str], fill: dict[str, Any]) -> list[Any]:
    """Each cell's colour by daff's rules: by its row's mark, then (added or removed) by its column's."""
    mark = str(values[0] or "") if values else ""
    if mark == "@@":
        return [fill["header"]] * len(values)
    out: list[Any] = []
    for value, column in zip(values, columns, strict=False):
        text = "" if value is None else str(value)
        if "---" in column or mark == "---":
            out.append(fill["remove"])
        elif "+++" in column or mark == "+++":
            out.append(fill["add"])
        elif "->" in mark and text.find(mark) >= 0:
            out.append(fill["modify"])
        else:
            out.append(None)
    return out + [None] * (len(values) - len(out))


def _write(sheet: Any, row: int, values: list[Any], formats: list[Any]) -> None:
    for col, (value, shown) in enumerate(zip(values, formats, strict=True)):
        text = "" if value is None else str(value)
        if len(text) > variants.EXCEL_MAX_CELL // 2 and variants.excel_length(text) > variants.EXCEL_MAX_CELL:
            raise CannotExport(variants.too_long(row, text))
        if text:
            sheet.write_string(row, col, text, shown)
        elif shown is not None:
            sheet.write_blank(row, col, None, shown)
