"""The steps that need the whole file — remove duplicates, a unique check, a lookup — in DuckDB.

The rows arrive as Arrow blocks from the project's own reader (so dialects, encodings and workbooks stay
the project's); DuckDB never reads the file itself. The rows are loaded once; each step is a view over the
one before (what it finds out, a list of row numbers or keys, is a table of its own), and one query gives
the rows back in the file's order (by the row number that rides with every row). DuckDB is told the
memory it may use and a scratch folder, so it writes to disk rather than grow past the attempt's cap.

Pinned meanings: remove duplicates keeps the first (or last) row of each key and the kept rows stay in
the file's order; a unique check marks every row whose value an earlier row already had; a lookup never
adds rows: a key repeated in the reference refuses the step (naming the first ten) unless the step says
to use the first or last, and a reference over :data:`MAX_REFERENCE_ROWS` rows is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .block import ERRORS, JOIN, ROW, Block
from .checks import unique_words
from .spec import StepError

if TYPE_CHECKING:
    import pyarrow as pa

    from .spec import Step

#: A lookup's reference table may have at most this many rows (it is held while the file streams past).
MAX_REFERENCE_ROWS = 2_000_000
#: Rows a result batch holds as it leaves DuckDB (at 65,536 an attempt peaked 60 MB higher, for no speed).
BATCH_ROWS = 16_384
#: The rows of the tables one chain of views may join (see :meth:`FileSteps._over`).
JOIN_ROWS = 1_000_000
#: DuckDB's memory, in MB, for an attempt without a cap, and at most for any (see :func:`memory_for`).
MEMORY_MB = 128


def memory_for(cap_mb: int) -> int:
    """The memory DuckDB may use in an attempt capped at ``cap_mb`` MB (0: no cap): a sixteenth of the cap,
    at least 64 MB and at most :data:`MEMORY_MB`. Beyond it DuckDB spills to the attempt's scratch folder.

    DuckDB's own resident memory runs about 1.5 times its limit (what it allocates outside the limit's
    accounting and its allocator's cache), and the rest of the attempt (Python, pandas, Arrow and DuckDB
    loaded, the reader's and the writer's blocks) about 250 MB: at 128 MB a 1 GB file's six-step list peaks
    near 400 MB. More memory buys little speed: the rows are read from the scratch folder once or twice."""
    return min(max(cap_mb // 16, 64), MEMORY_MB) if cap_mb else MEMORY_MB


@dataclass
class Context:
    """What whole-file steps need from where they run."""

    #: The memory DuckDB may use, in MB (it spills to ``scratch`` beyond it): see :func:`memory_for`.
    memory_mb: int = MEMORY_MB
    #: A folder DuckDB may spill into; None: memory only (a preview).
    scratch: str | None = None
    #: The rows of a reference table: a completed task's result, by the task's id.
    open_reference: Callable[[str], Iterable[pa.Table]] | None = None
    references: dict[str, Any] = field(default_factory=dict)


#: DuckDB's settings besides its memory. One thread: a second sorted and joined no faster on the worker's
#: two cores (the reader and the writer threads use them too) and held 45 MB more. No insertion order:
#: every result that needs one says ORDER BY. Text as large_string, as Arrow holds it here (no copy back).
SETTINGS = {"threads": "1", "preserve_insertion_order": "false", "arrow_large_buffer_size": "true"}


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class FileSteps:
    """One run of consecutive whole-file steps over all the blocks before them."""

    def __init__(self, steps: list[Step], context: Context) -> None:
        self.steps, self.context = steps, context
        self.counts: dict[int, tuple[int, int, int]] = {}  # step number: rows in, rows out, cells changed
        self._held: int | None = None  # the rows of the tables the views so far join (None: no join)

    def run(self, blocks: Iterator[Block]) -> Iterator[Block]:
        import duckdb

        config: dict[str, Any] = {"memory_limit": f"{max(64, self.context.memory_mb)}MB", **SETTINGS}
        if self.context.scratch:
            config["temp_directory"] = self.context.scratch
        con = duckdb.connect(":memory:", config=config)
        try:
            names = self._load(con, blocks)
            if names is None:  # no blocks at all (not even a header's empty one): nothing to give back
                return
            _distinct(self.steps[0], names, "the table")
            current, rows = "t", self._count(con, "t")
            for step in self.steps:
                current, rows = self._step(con, step, current, names, rows)
                names = self._names_of(con, current)
            result = con.sql(f"SELECT * FROM {current} ORDER BY {q(ROW)}").to_arrow_reader(BATCH_ROWS)
            import pyarrow as pa

            none = True
            for batch in result:
                none = False
                yield Block.split(pa.Table.from_batches([batch]))
            if none:  # no rows (a header-only file, every row removed): the columns still go on
                yield Block.split(result.schema.empty_table())
        finally:
            con.close()

    def _load(self, con: Any, blocks: Iterator[Block]) -> list[str] | None:
        first = next(blocks, None)
        if first is None:
            return None
        table = first.combined()
        con.register("incoming", table)
        con.execute("CREATE TABLE t AS SELECT * FROM incoming")
        con.unregister("incoming")
        for block in blocks:
            con.register("incoming", block.combined())
            con.execute("INSERT INTO t SELECT * FROM incoming")
            con.unregister("incoming")
        return first.names

    @staticmethod
    def _names_of(con: Any, table: str) -> list[str]:
        result = con.execute(f"SELECT * FROM {table} LIMIT 0")
        described = result.description
        result.fetchall()  # DuckDB 2 wants every result finished before the next statement
        return [d[0] for d in described if d[0] not in (ROW, ERRORS)]

    def _count(self, con: Any, table: str) -> int:
        return int(con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])

    def _step(self, con: Any, step: Step, current: str, names: list[str], rows_in: int) -> tuple[str, int]:
        """The view of the rows after ``step`` (over ``current``, the view before it) and its row count.

        A step's own result is a view, not a copy: only what it found out is a table (the row numbers a
        dedupe keeps, the first row of each value, the reference's keys), so the rows themselves are read
        once more, by the query that gives them back, and each step reads only the columns it needs."""
        out = f"s{step.number}"
        if not names:
            raise step.fail("the table has no columns left (the steps above removed them all)")
        rows_out, changed = rows_in, 0
        if step.kind.name == "remove_duplicates":
            rows_out = self._dedupe(con, step, current, out, names, rows_in)
        elif step.kind.name == "check":  # the unique part of a check (the rest ran row by row)
            column = q(step["column"])
            cell = _trimmed(f"c.{column}")  # as the row-by-row checks read it: a cell of spaces is empty
            repeat = _add_error(f"{cell} <> '' AND c.{q(ROW)} <> f.first", _lit(unique_words(step["column"])), "c.")
            con.execute(
                f"CREATE TABLE {out}_first AS SELECT {_trimmed(column)} AS k, min({q(ROW)}) AS first "
                f"FROM {current} GROUP BY 1"
            )
            base = self._over(con, current, f"{out}_first")
            con.execute(
                f"CREATE VIEW {out} AS SELECT c.* REPLACE ({repeat}) FROM {base} c LEFT JOIN {out}_first f "
                f"ON {cell} = f.k"
            )
        else:  # lookup
            changed = self._lookup(con, step, current, out, names)
        self.counts[step.number] = (rows_in, rows_out, changed)
        return out, rows_out

    def _over(self, con: Any, current: str, joined: str) -> str:
        """What a step's view that joins ``joined`` reads from: ``current``, or a table of its rows when the views
        before already join more than :data:`JOIN_ROWS` rows with this one (each join's table is held while
        the rows stream through every join at once: two large ones and the sort after them overran DuckDB's
        memory, where one alone spills)."""
        rows = self._count(con, joined)
        if self._held is not None and self._held + rows > JOIN_ROWS:
            con.execute(f"CREATE TABLE {current}_rows AS SELECT * FROM {current}")
            current, self._held = f"{current}_rows", None
        self._held = (self._held or 0) + rows
        return current

    def _dedupe(self, con: Any, step: Step, current: str, out: str, names: list[str], rows_in: int) -> int:
        """Remove duplicates as a view that names the rows it leaves out, or those it keeps when they are fewer:
        the query that gives the rows back then joins its whole rows against the smaller list (against the
        larger one DuckDB spilled every column of every row to disk, at 1 GB a six-fold slower query)."""
        keys = ", ".join(q(n) for n in (step["columns"] or names))
        pick = "min" if step["keep"] == "first" else "max"
        con.execute(f"CREATE TABLE {out}_kept AS SELECT {pick}({q(ROW)}) AS r FROM {current} GROUP BY {keys}")
        kept = self._count(con, f"{out}_kept")
        if kept * 2 <= rows_in:
            table, which = f"{out}_kept", "IN"
        else:  # most rows stay: the few that go, found by a pass over the row numbers alone
            con.execute(
                f"CREATE TABLE {out}_gone AS SELECT {q(ROW)} AS r FROM {current} "
                f"WHERE {q(ROW)} NOT IN (SELECT r FROM {out}_kept)"
            )
            con.execute(f"DROP TABLE {out}_kept")
            table, which = f"{out}_gone", "NOT IN"
        base = self._over(con, current, table)
        con.execute(f"CREATE VIEW {out} AS SELECT * FROM {base} WHERE {q(ROW)} {which} (SELECT r FROM {table})")
        return kept

    def _lookup(self, con: Any, step: Step, current: str, out: str, names: list[str]) -> int:
        _distinct(step, names + list(step["take"]), "the table with the columns it adds")
        ref = self._reference(con, step)
        on, ref_on = list(step["on"]), list(step["reference_on"] or step["on"])
        fold = step["match"] != "exactly"

        def key(expr: str) -> str:
            return f"lower(regexp_replace({expr}, '{SPACE}+', '', 'g'))" if fold else expr

        keys = [f"{key(q(r))} AS k{i}" for i, r in enumerate(ref_on)]
        taken = [f"{q(n)} AS v{i}" for i, n in enumerate(step["take"])]
        con.execute(f"CREATE TABLE {ref}_keys AS SELECT {', '.join(keys + taken)}, {q(ROW)} FROM {ref}")
        key_list = ", ".join(f"k{i}" for i in range(len(ref_on)))
        repeated = con.execute(
            f"SELECT {key_list} FROM {ref}_keys GROUP BY {key_list} HAVING count(*) > 1 ORDER BY min({q(ROW)}) LIMIT 10"
        ).fetchall()
        if repeated and step["repeated_keys"] == "refuse":
            shown = ", ".join(" + ".join(map(str, r)) for r in repeated)
            raise step.fail(
                f"keys repeat in the reference table ({shown}); say whether to use the first or the last of each"
            )
        pick = "min" if step["repeated_keys"] != "last" else "max"
        con.execute(
            f"CREATE TABLE {ref}_one AS SELECT * FROM {ref}_keys WHERE {q(ROW)} IN "
            f"(SELECT {pick}({q(ROW)}) FROM {ref}_keys GROUP BY {key_list})"
        )
        join = " AND ".join(f"{key('c.' + q(c))} = r.k{i} AND c.{q(c)} <> ''" for i, c in enumerate(on))
        added = [f"coalesce(r.v{i}, '') AS {q(n)}" for i, n in enumerate(step["take"])]
        missing = "r.k0 IS NULL"
        words = _lit(f"no match for {' + '.join(on)} in the reference table")
        error = _add_error(missing, words, "c.") if step["unmatched"] == "error" else f"c.{q(ERRORS)} AS {q(ERRORS)}"
        own = [f"c.{q(n)}" for n in names]
        base = self._over(con, current, f"{ref}_one")
        con.execute(
            f"CREATE VIEW {out} AS SELECT {', '.join(own + added)}, c.{q(ROW)}, {error} "
            f"FROM {base} c LEFT JOIN {ref}_one r ON {join}"
        )
        hits = con.execute(f"SELECT count(*) FROM {current} c JOIN {ref}_one r ON {join}").fetchall()[0][0]
        return int(hits) * len(step["take"])

    def _reference(self, con: Any, step: Step) -> str:
        name = f"ref{step.number}"
        if self.context.open_reference is None:
            raise step.fail("a lookup needs the reference table, which cannot be read here")
        count, made = 0, False
        for table in self.context.open_reference(step["reference"]):
            _distinct(step, table.column_names, "the reference table")
            reserved = [n for n in table.column_names if n in (ROW, ERRORS)]
            if reserved:
                raise step.fail(
                    f"the reference table has a column named {reserved[0]!r}, a name s3task keeps for itself"
                )
            wanted = list(step["reference_on"] or step["on"]) + list(step["take"])
            missing = [c for c in wanted if c not in table.column_names]
            if missing:
                raise step.fail(
                    f"the reference table has no column {missing[0]!r} (it has: {', '.join(table.column_names[:20])})"
                )
            count += table.num_rows
            if count > MAX_REFERENCE_ROWS:
                raise step.fail(
                    f"the reference table has more than {MAX_REFERENCE_ROWS:,} rows (the most a lookup takes)"
                )
            block = Block.start(table, count - table.num_rows).combined()
            con.register("incoming", block)
            con.execute(f"{'INSERT INTO ' + name if made else 'CREATE TABLE ' + name + ' AS'} SELECT * FROM incoming")
            con.unregister("incoming")
            made = True
        if not made:
            raise StepError(f"{step.label}: the reference table is empty")
        return name


#: Spaces in DuckDB's regular expressions (RE2's \s is ASCII only; \p{Z} adds no-break and thin spaces).
SPACE = r"[\s\p{Z}]"


def _trimmed(expr: str) -> str:
    """``expr`` without spaces at its ends (as Arrow's ``utf8_trim_whitespace``)."""
    return f"regexp_replace({expr}, '^{SPACE}+|{SPACE}+$', '', 'g')"


def _distinct(step: Step, names: list[str], what: str) -> None:
    """DuckDB tells column names apart ignoring case: refuse two that differ only so, rather than mix them."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            raise step.fail(
                f"{what} has the columns {other!r} and {name!r}, which differ only in case and which this step "
                "cannot tell apart: rename one of them first"
            )


def _add_error(condition: str, words: str, prefix: str) -> str:
    e = f"{prefix}{q(ERRORS)}"
    return (
        f"CASE WHEN {condition} THEN (CASE WHEN {e} = '' THEN {words} ELSE {e} || {_lit(JOIN)} || {words} END) "
        f"ELSE {e} END AS {q(ERRORS)}"
    )
