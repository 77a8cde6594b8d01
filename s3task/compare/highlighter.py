"""daff's "highlighter" CSV of a comparison, written batch by batch as DuckDB gives the rows.

The first column says what a row is: ``@@`` the header, ``+++`` a row added, ``---`` a row removed, ``->``
a row changed, whose changed cells read ``old->new`` (``-->`` when either value holds ``->``, and so on);
unchanged rows are left out. When columns were added or removed, a ``!`` row above the header marks them
``+++`` and ``---``. Changed and added rows come in the new result's order, then the removed rows in the old
one's. As in every CSV s3task writes, it starts with a UTF-8 BOM, and a value a spreadsheet would run as a
formula starts with ``'`` (s3task.csvio.writing's protection).
"""

from __future__ import annotations

import csv
from typing import Any, TextIO

from .diff import changed_expr
from .sides import Side

#: Rows a batch holds as it leaves DuckDB.
BATCH_ROWS = 16_384


def layout(old: Side, new: Side) -> list[tuple[str, str]]:
    """The highlighter's columns: (name, "" / "+++" added / "---" removed), the new side's first."""
    cols = [(n, "" if old.has(n) else "+++") for n in new.names]
    return cols + [(n, "---") for n in old.names if not new.has(n)]


def arrow(old: str, new: str) -> str:
    """``old->new``, the arrow lengthened until neither value holds it (daff's rule)."""
    sep = "->"
    while sep in old or sep in new:
        sep = "-" + sep
    return f"{old}{sep}{new}"


def write(con: Any, old: Side, new: Side, columns: list[str], out: TextIO) -> int:
    """The highlighter of table ``d`` (see :mod:`.diff`) to ``out``; returns the rows written under the header."""
    cols = layout(old, new)
    writer = csv.writer(out, lineterminator="\r\n")
    out.write("\ufeff")
    if any(mark for _n, mark in cols):
        writer.writerow(["!", *(mark for _n, mark in cols)])
    # The column names too: a header cell a spreadsheet would run as a formula gets its ' as values do.
    [header] = _protected([["@@", *(n for n, _m in cols)]])
    writer.writerow(header)
    flag = {name: f"x{i}" for i, name in enumerate(columns)}
    picks = [(f"d.{flag[n]}" if n in flag else "NULL") + f" AS f{i}" for i, (n, _m) in enumerate(cols)]
    olds = [(f"o.{old.col(n)}" if old.has(n) else "NULL") + f" AS o{i}" for i, (n, _m) in enumerate(cols)]
    news = [(f"n.{new.col(n)}" if new.has(n) else "NULL") + f" AS n{i}" for i, (n, _m) in enumerate(cols)]
    cells = "".join(", " + c for c in picks + olds + news)
    reader = con.sql(
        f"SELECT d.orow IS NULL AS added, d.nrow IS NULL AS removed{cells} FROM d "
        f"LEFT JOIN {old.table} o ON o.r = d.orow LEFT JOIN {new.table} n ON n.r = d.nrow "
        f"WHERE d.orow IS NULL OR d.nrow IS NULL OR {changed_expr(columns)} "
        "ORDER BY d.nrow NULLS LAST, d.orow"
    ).to_arrow_reader(BATCH_ROWS)
    written = 0
    for batch in reader:
        rows = _rows(batch.to_pylist(), len(cols))
        writer.writerows(_protected(rows))
        written += len(rows)
    return written


def _rows(records: list[dict[str, Any]], width: int) -> list[list[str]]:
    """Each record (added?, removed?, flags, old cells, new cells) as a highlighter row."""
    rows = []
    for record in records:
        values = list(record.values())
        added, removed = values[0], values[1]
        flags, olds, news = values[2 : 2 + width], values[2 + width : 2 + 2 * width], values[2 + 2 * width :]
        if added:
            rows.append(["+++", *(v or "" for v in news)])
        elif removed:
            rows.append(["---", *(v or "" for v in olds)])
        else:
            cells = [
                arrow(o, n) if f else (n if n is not None else o or "")
                for f, o, n in zip(flags, olds, news, strict=True)
            ]
            rows.append(["->", *cells])
    return rows


def _protected(rows: list[list[str]]) -> list[list[str]]:
    """The value cells (not the first column, the marks) protected as every s3task CSV's are."""
    if not rows:
        return rows
    import pyarrow as pa

    from ..csvio.common import TEXT
    from ..csvio.writing import neutralise

    columns = [neutralise(pa.array([r[i] for r in rows], TEXT)).to_pylist() for i in range(1, len(rows[0]))]
    return [[row[0], *(col[j] for col in columns)] for j, row in enumerate(rows)]
