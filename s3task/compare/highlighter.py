"""daff's "highlighter" CSV of a comparison, written batch by batch as DuckDB gives the rows (:func:`.diff.changes`).

The first column says what a row is: ``@@`` the header, ``+++`` a row added, ``---`` a row removed, ``->``
a row changed, whose changed cells read ``old->new`` (``-->`` when either value holds ``->``, and so on);
unchanged rows are left out. When columns were added or removed, a ``!`` row above the header marks them
``+++`` and ``---``. Changed and added rows come in the new result's order, then the removed rows in the old
one's. As in every CSV s3task writes, it starts with a UTF-8 BOM, and a value a spreadsheet would run as a
formula starts with ``'`` (s3task.csvio.writing's protection).

Each batch is made a column at a time with Arrow, its cells and then its CSV text, quoted as Python's ``csv``
writer quotes (which writes the two header rows); only a changed cell whose values hold ``->`` goes through
Python, for its longer arrow.
"""

from __future__ import annotations

import csv
from typing import TYPE_CHECKING, Any, TextIO

from .sides import Side

if TYPE_CHECKING:
    import pyarrow as pa


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


class Writer:
    """The highlighter of the columns ``cols`` (:func:`layout`) to ``out``, a batch of :func:`.diff.changes` at
    a time (its cells ``o{j}``/``n{j}`` in the order of ``cols``, flags ``x{i}`` for ``columns``)."""

    def __init__(self, out: TextIO, cols: list[tuple[str, str]], columns: list[str]) -> None:
        self._out = out
        self._writer = csv.writer(out, lineterminator="\r\n")
        self._width = len(cols)
        flag = {name: f"x{i}" for i, name in enumerate(columns)}
        self._flags = [flag.get(n) for n, _m in cols]
        #: Rows written under the header.
        self.written = 0
        out.write("\ufeff")
        if any(mark for _n, mark in cols):
            self._writer.writerow(["!", *(mark for _n, mark in cols)])
        # The column names too: a header cell a spreadsheet would run as a formula gets its ' as values do.
        self._writer.writerow(["@@", *(_protected(_text([n for n, _m in cols])).to_pylist())])

    def write(self, batch: pa.RecordBatch) -> None:
        """The rows of one batch."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from ..csvio.common import TEXT

        if not batch.num_rows:
            return
        added, removed = batch.column("added"), batch.column("removed")
        marks = pc.if_else(added, pa.scalar("+++", TEXT), pc.if_else(removed, pa.scalar("---", TEXT), "->"))
        cells = [_field(_protected(self._cells(batch, j, added, removed))) for j in range(self._width)]
        self._out.write(_lines([marks, *cells]))
        self.written += batch.num_rows

    def _cells(self, batch: pa.RecordBatch, j: int, added: pa.Array, removed: pa.Array) -> pa.Array:
        """Column ``j``'s cells: the new value on a row added, the old on a row removed, ``old->new`` where the
        cell changed, else the new value (the old one in a column removed)."""
        import pyarrow.compute as pc

        old, new = _text(batch.column(f"o{j}")), _text(batch.column(f"n{j}"))
        kept = pc.coalesce(new, old, "")
        flag = self._flags[j]
        if flag is not None:
            changed = pc.fill_null(batch.column(flag), False)
            kept = pc.if_else(changed, _arrowed(old, new, changed), kept)
        return pc.if_else(added, pc.coalesce(new, ""), pc.if_else(removed, pc.coalesce(old, ""), kept))


def _arrowed(old: pa.Array, new: pa.Array, changed: pa.Array) -> pa.Array:
    """``old->new`` on each row; where ``changed`` and either value holds ``->``, :func:`arrow`'s longer one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    plain = pc.binary_join_element_wise(old, new, pa.scalar("->", old.type))
    holds = pc.or_(pc.match_substring(old, "->"), pc.match_substring(new, "->"))
    longer = pc.and_(changed, pc.fill_null(holds, True))
    if not pc.any(longer).as_py():
        return plain
    rows = pc.indices_nonzero(longer).to_pylist()
    olds, news = old.take(rows).to_pylist(), new.take(rows).to_pylist()
    return pc.replace_with_mask(
        plain, longer, pa.array([arrow(o, n) for o, n in zip(olds, news, strict=True)], plain.type)
    )


def _field(values: pa.Array) -> pa.Array:
    """Each value as Python's ``csv`` writer writes a field of a row of several (QUOTE_MINIMAL): in quotes, its
    quotes doubled, when it holds a comma, a quote or a line end; else as it is."""
    import pyarrow as pa
    import pyarrow.compute as pc

    special = pc.match_substring_regex(values, r'[,"\r\n]')
    if not pc.any(special).as_py():
        return values
    quote, none = pa.scalar('"', values.type), pa.scalar("", values.type)
    quoted = pc.binary_join_element_wise(quote, pc.replace_substring(values, '"', '""'), quote, none)
    return pc.if_else(special, quoted, values)


def _lines(fields: list[pa.Array]) -> str:
    """The rows whose fields (written already, :func:`_field`) are ``fields``, as CSV text: commas between
    fields, CRLF after each row."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    text = fields[0].type
    rows = pc.binary_join_element_wise(*fields, pa.scalar(",", text))
    lines = pc.binary_join_element_wise(rows, pa.scalar("", text), pa.scalar("\r\n", text))
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset : lines.offset + len(lines) + 1]
    return memoryview(lines.buffers()[2])[offsets[0] : offsets[-1]].tobytes().decode("utf-8")


def _text(values: Any) -> pa.Array:
    """``values`` (a list, or DuckDB's text or NULL column) as Arrow text."""
    import pyarrow as pa

    from ..csvio.common import TEXT

    return pa.array(values, TEXT) if isinstance(values, list) else values.cast(TEXT)


def _protected(values: pa.Array) -> pa.Array:
    """Values protected as every s3task CSV's are (a formula gets a leading ')."""
    from ..csvio.writing import neutralise

    return neutralise(values)
