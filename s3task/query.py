"""A question asked of a whole completed output: search every row, filter, sort, one page of the answer.

The engine was chosen by measuring (``bench/explore.py``, BENCHMARKS.md "Searching the whole
result"): the stored CSV is streamed block by block through the project's reader
(:func:`s3task.exports.source.exact_tables`, the values exactly as the task produced them) and
each block is filtered with ``pyarrow.compute``. Nothing is copied or kept between questions, so
an answer is always the output's, and a question costs one read of the file.

Memory does not grow with the output's length: one block of the reader (about 4 MB of CSV) plus
the rows kept for the page, at most :data:`WINDOW` (``offset + limit``) of them, twice over while
sorting by a column that may still turn out to be all numbers; rows as wide as the output's (a
sorted view download keeps up to :data:`SORTED_DOWNLOAD_MAX`: 1.2 GB for rows of 2 KB). A page further down than
:data:`WINDOW` rows is refused with the reason; so is a sorted download of more than
:data:`SORTED_DOWNLOAD_MAX` rows (in file order any size streams).

Values stay text. The search and the filters are case-insensitive substring tests. Sorting
compares numbers when every filled cell of the column (in the whole output, not only the
matching rows) is a number such as ``-12``, ``3.5`` or ``1e6``; otherwise it compares text,
ignoring case. Empty cells sort last either way, and equal keys keep the file's order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import AlreadyExists, InvalidInput
from .store.base import PutMode

if TYPE_CHECKING:
    import pyarrow as pa

    from .record import TaskRecord
    from .store.base import ObjectMeta, ObjectStore

#: The deepest row a page may reach (offset + limit): the rows kept while the file streams by.
WINDOW = 10_000
#: The most rows a sorted "download this view" holds (in file order, a download has no limit).
SORTED_DOWNLOAD_MAX = 100_000
#: The longest search or filter text, in characters: a question, not a file (a 1 MB search of a wide
#: result took 110 s before this bound and the one kernel call per block below).
MAX_SEARCH = 1_000
#: A number as a cell may hold it: optional sign, digits with an optional fraction, optional exponent.
NUMBER = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"
#: Columns of s3task's own, added while scanning: a NUL starts them, which no column name of a CSV or a
#: workbook can hold (both readers refuse it), so no output's own column is ever taken for one.
_ROW = "\x00row"
_KEY = "\x00key"


@dataclass(frozen=True)
class Query:
    """What to show: rows containing ``search`` in any column and each ``filters`` value in its column
    (both case-insensitive), sorted by ``sort`` if given, the ``limit`` rows from ``offset`` on."""

    search: str = ""
    filters: tuple[tuple[str, str], ...] = ()
    sort: str | None = None
    descending: bool = False
    offset: int = 0
    limit: int = 50


@dataclass
class Answer:
    """One page of a query's answer, the number of matching rows, the number of rows in the output."""

    columns: list[str]
    rows: list[dict[str, str]]
    matching: int
    total: int
    #: How the sort compared: "numbers", "text", or "" when not sorted.
    sort_order: str = ""


def check_lengths(query: Query) -> None:
    """Refuse a search or filter text longer than :data:`MAX_SEARCH` characters, in words."""
    for label, text in [("the search", query.search)] + [(f"the filter of {n!r}", v) for n, v in query.filters]:
        if len(text) > MAX_SEARCH:
            raise InvalidInput(
                f"{label} is {len(text):,} characters long; a search or a filter holds at most {MAX_SEARCH:,}"
            )


def check(query: Query, columns: list[str], window: int = WINDOW) -> None:
    """Refuse, with the reason, a query that names no column of the output, reaches past ``window``, or
    searches for more than :data:`MAX_SEARCH` characters."""
    check_lengths(query)
    for name in [n for n, _ in query.filters] + ([query.sort] if query.sort else []):
        if name not in columns:
            raise InvalidInput(f"the result has no column {name!r}")
    if query.offset < 0 or query.limit < 1:
        raise InvalidInput("a page starts at row 0 or later and holds at least one row")
    if query.offset + query.limit > window:
        raise InvalidInput(
            f"pages reach at most row {window:,} of a view; narrow the search, or download this view for every row"
        )


def _mask(table: pa.Table, query: Query) -> Any:
    """Which rows of ``table`` match (None: all of them)."""
    import pyarrow.compute as pc

    # Lower case then a plain substring test: measured faster than ``ignore_case=True`` (a regex), same matches.
    mask = None
    if query.search and table.num_columns and table.num_rows:
        mask = _anywhere(table, _lower(query.search))
    for name, value in query.filters:
        if value:
            hit = pc.match_substring(pc.utf8_lower(table.column(name)), _lower(value))
            mask = hit if mask is None else pc.and_(mask, hit)
    return mask


def _anywhere(table: pa.Table, word: str) -> Any:
    """Which rows hold ``word`` in any cell: every cell of the block in one array and one kernel call, so a
    result of 16,384 columns costs what one of a few columns and as many cells does (a call per column
    prepared the search text once per column: 16,384 times a block)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = table.columns
    if len({col.type for col in columns}) > 1:  # one array holds one type (the readers give text columns)
        columns = [col.cast(pa.large_string()) for col in columns]
    cells = pa.chunked_array([c for col in columns for c in col.chunks], columns[0].type).combine_chunks()
    hit = pc.fill_null(pc.match_substring(pc.utf8_lower(cells), word), False).to_numpy(zero_copy_only=False)
    return pa.array(np.asarray(hit, bool).reshape(table.num_columns, table.num_rows).any(axis=0))


def _lower(text: str) -> str:
    """``text`` in lower case as Arrow lowers the cells (Python's ``str.lower`` makes "İ" two code
    points, "i" and a combining dot, which Arrow's lower-cased "İstanbul" does not contain)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return str(pc.utf8_lower(pa.array([text], pa.string()))[0].as_py())


def _all_numbers(col: Any) -> bool:
    import pyarrow.compute as pc

    filled = pc.greater(pc.binary_length(col), 0)
    numbers = pc.match_substring_regex(col, NUMBER)
    return bool(pc.all(pc.or_(pc.invert(filled), numbers)).as_py() is not False)


def _keys(col: Any, numeric: bool) -> Any:
    """The sort key of a column: a float (empty cells null) or the text in lower case (empty null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = pc.equal(pc.binary_length(col), 0)
    if numeric:
        return pc.if_else(empty, None, pc.cast(pc.utf8_trim_whitespace(pc.if_else(empty, "0", col)), pa.float64()))
    return pc.if_else(empty, None, pc.utf8_lower(col))


class _TopRows:
    """The first ``k`` rows seen so far in one order (by key, then file order), with their keys."""

    def __init__(self, k: int, numeric: bool, descending: bool) -> None:
        self.k, self.numeric, self.descending = k, numeric, descending
        self.kept: pa.Table | None = None

    def add(self, rows: pa.Table, sort: str) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        rows = rows.append_column(_KEY, _keys(rows.column(sort), self.numeric))
        both = rows if self.kept is None else pa.concat_tables([self.kept, rows])
        order = [(_KEY, "descending" if self.descending else "ascending", "at_end"), (_ROW, "ascending")]
        self.kept = both.take(pc.sort_indices(both, sort_keys=order)[: self.k])

    def table(self) -> pa.Table | None:
        return None if self.kept is None else self.kept.drop_columns([_KEY])


def _scan(tables: Iterator[pa.Table], query: Query, keep: int) -> tuple[pa.Table | None, int, int, str]:
    """Stream ``tables`` once: the first ``keep`` matching rows in the query's order, the matching count,
    the row count, and how the sort compared."""
    import pyarrow as pa

    numeric_still = query.sort is not None
    tops = {n: _TopRows(keep, n, query.descending) for n in (True, False)} if query.sort else {}
    first: list[pa.Table] = []
    kept_first = matching = total = 0
    for table in tables:
        rows = table.append_column(_ROW, pa.array(range(total, total + table.num_rows), pa.int64()))
        total += table.num_rows
        if query.sort and numeric_still and not _all_numbers(table.column(query.sort)):
            numeric_still = False
            tops.pop(True)
        mask = _mask(table, query)
        hits = rows if mask is None else rows.filter(mask)
        matching += hits.num_rows
        if query.sort:
            try:
                for top in tops.values():
                    top.add(hits, query.sort)
            except pa.ArrowInvalid:  # a cell the pattern let through that is no float after all: text
                numeric_still = False
                tops.pop(True)
                tops[False].add(hits, query.sort)
        elif kept_first < keep and hits.num_rows:
            first.append(hits.slice(0, keep - kept_first))
            kept_first += min(hits.num_rows, keep - kept_first)
    if query.sort:
        order = "numbers" if numeric_still else "text"
        return tops[numeric_still].table(), matching, total, order
    return (pa.concat_tables(first) if first else None), matching, total, ""


def _tables(raw: Any) -> tuple[list[str], Iterator[pa.Table]]:
    from .exports.source import exact_tables, peek_bom

    legacy, stream = peek_bom(raw)
    return exact_tables(stream, legacy)


def columns_of(raw: Any) -> list[str]:
    """The output's column names as the task wrote them (its header row alone, as the exact reader reads it)."""
    from .exports.source import exact_names, peek_bom

    legacy, stream = peek_bom(raw)
    return exact_names(stream, legacy)


def answer(raw: Any, query: Query, *, window: int = WINDOW) -> Answer:
    """One page of the answer to ``query`` over the stored output read from ``raw`` (see the module)."""
    columns, tables = _tables(raw)
    check(query, columns, window)
    kept, matching, total, order = _scan(tables, query, query.offset + query.limit)
    rows: list[dict[str, str]] = []
    if kept is not None:
        rows = kept.slice(query.offset, query.limit).drop_columns([_ROW]).to_pylist()
    return Answer(columns, rows, matching, total, order)


def view_tables(raw: Any, query: Query) -> tuple[list[str], Iterator[pa.Table]]:
    """Every matching row, in the query's order, block by block (for "download this view").

    In file order the rows stream; sorted, they are gathered first, refused above
    :data:`SORTED_DOWNLOAD_MAX` matching rows.
    """
    columns, tables = _tables(raw)
    check(query, columns, window=1 << 62)
    if query.sort is None:
        return columns, (t.filter(m) if (m := _mask(t, query)) is not None else t for t in tables)
    kept, matching, _total, _order = _scan(tables, query, SORTED_DOWNLOAD_MAX + 1)
    if matching > SORTED_DOWNLOAD_MAX:
        raise InvalidInput(
            f"this view has {matching:,} rows; a sorted download holds at most {SORTED_DOWNLOAD_MAX:,}. "
            "Narrow the search, or download it without sorting"
        )
    return columns, iter([] if kept is None else [kept.drop_columns([_ROW])])


#: The files "download this view" makes, by suffix: what each is called and its content type.
VIEW_KINDS = {"csv": "CSV", "xlsx": "Excel workbook"}


def digest(question: Query) -> str:
    """A name for the rows a question selects (the page it shows does not count)."""
    import hashlib
    import json

    what = [question.search, list(question.filters), question.sort, question.descending]
    return hashlib.sha256(json.dumps(what, ensure_ascii=False).encode()).hexdigest()[:20]


def make_view(store: ObjectStore, record: TaskRecord, question: Query, suffix: str, target: str) -> ObjectMeta:
    """Write the rows of the record's output that match ``question`` to ``target`` (create-only), streamed:
    a CSV for spreadsheets like the output (a BOM, formulas protected), or a workbook of text cells."""
    from .csvio.writing import CsvWriter
    from .exports import variants, write_sheet
    from .layout import CSV_TYPE, XLSX_TYPE
    from .record import parse_iso

    source = variants.source_key(record)
    meta = store.head(source)
    content_type = XLSX_TYPE if suffix == "xlsx" else CSV_TYPE
    try:
        with (
            store.open_read(source, if_match=meta.etag) as raw,
            store.open_write(target, PutMode.CREATE, content_type=content_type) as sink,
        ):
            columns, tables = view_tables(raw, question)
            every = list(range(len(columns)))  # by place: a comparison's marks row names columns "" twice
            if suffix == "xlsx" and record.task_type == "compare":  # coloured as the whole comparison's copy
                from .exports.highlighted import highlighted_sheet

                highlighted_sheet(columns, (t.select(every) for t in tables), sink,
                                  created=parse_iso(record.finished_at))  # fmt: skip
            elif suffix == "xlsx":
                write_sheet(columns, tables, sink, created=parse_iso(record.finished_at))
            else:
                writer = CsvWriter(sink, error_column=None, protect=True)
                for table in tables:
                    writer.write(table.select(every))
                writer.close()
    except AlreadyExists:
        pass  # made by someone else meanwhile: the same rows
    return store.head(target)


def describe_sort(order: str) -> str:
    """A few words on how a sort compared, for the page."""
    return {"numbers": "as numbers", "text": "as text (ignoring case)"}.get(order, "")
