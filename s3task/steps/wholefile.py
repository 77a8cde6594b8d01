"""The steps that need the whole file — remove duplicates, a unique check, a lookup — in DuckDB.

The rows arrive as Arrow blocks from the project's own reader (so dialects, encodings and workbooks stay
the project's); DuckDB never reads the file itself. These steps never change a cell the file had, so
DuckDB gets only the columns they read, with each row's number (:class:`_Keys`: a Parquet file in the
attempt's scratch folder), while the rows wait in a spool on disk (:mod:`s3task.steps.spool`). Each step is
a view over the one before (what it finds out, a list of row numbers or keys, is a table of its own); one
query gives back, in the file's order, each kept row's number with its new errors and the columns the
lookups added, which are merged with the spooled rows block by block. DuckDB is told the memory it may
use and a scratch folder, so it writes to disk rather than grow past the attempt's cap.

Pinned meanings: remove duplicates keeps the first (or last) row of each key and the kept rows stay in
the file's order; a unique check marks every row whose value an earlier row already had; a lookup never
adds rows: a key repeated in the reference refuses the step (naming the first ten) unless the step says
to use the first or last, and a reference over :data:`MAX_REFERENCE_ROWS` rows is refused.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .block import ERRORS, JOIN, ROW, Block
from .checks import unique_words
from .spec import StepError
from .spool import Spool, merge

if TYPE_CHECKING:
    import pyarrow as pa

    from .spec import Step

#: A lookup's reference table may have at most this many rows (it is held while the file streams past).
MAX_REFERENCE_ROWS = 2_000_000
#: Rows a result batch holds as it leaves DuckDB (at 65,536 an attempt peaked 60 MB higher, for no speed).
BATCH_ROWS = 16_384
#: The rows of the tables one chain of views may join (see :meth:`FileSteps._over`).
JOIN_ROWS = 1_000_000
#: The compression of the Parquet file of the columns the steps read (:class:`_Keys`).
KEYS_COMPRESSION = "snappy"
#: DuckDB's memory, in MB, for an attempt without a cap, and at most for any (see :func:`memory_for`).
MEMORY_MB = 128
#: The most of it the whole-file steps give DuckDB (see :func:`steps_memory`).
STEPS_MEMORY_MB = 96


def memory_for(cap_mb: int) -> int:
    """The memory DuckDB may use in an attempt capped at ``cap_mb`` MB (0: no cap): a sixteenth of the cap,
    at least 64 MB and at most :data:`MEMORY_MB`. Beyond it DuckDB spills to the attempt's scratch folder.
    A comparison takes all of it; the whole-file steps at most :data:`STEPS_MEMORY_MB` (:func:`steps_memory`)."""
    return min(max(cap_mb // 16, 64), MEMORY_MB) if cap_mb else MEMORY_MB


def steps_memory(memory_mb: int) -> int:
    """What the whole-file steps give DuckDB of the ``memory_mb`` an attempt allows it: at most
    :data:`STEPS_MEMORY_MB`, and at least DuckDB's floor here, 64 MB.

    DuckDB's own resident memory runs up to 1.6 times its limit once a large file fills it (what it
    allocates outside the limit's accounting), and the rest of the attempt (Python, pandas, Arrow and
    DuckDB loaded, the reader's, the spool's and the writer's blocks) about 220 MB: at 128 MB a 5 GB file's
    six-step list peaked at 414 MB (1 GB: 382), at 96 MB at 380-387 MB. Less is not safe: at 64 MB that
    file's dedupe (28 million keys) ran out of memory. More buys little speed: the steps hold only the columns
    they read (:class:`_Keys`) and sort only row numbers."""
    return max(64, min(memory_mb, STEPS_MEMORY_MB))


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

        config: dict[str, Any] = {"memory_limit": f"{steps_memory(self.context.memory_mb)}MB", **SETTINGS}
        # A folder of this run's own: the next run of whole-file steps (after a row-by-row step) loads while
        # this one still gives its rows back.
        folder = tempfile.mkdtemp(prefix="run-", dir=self.context.scratch) if self.context.scratch else None
        if folder:
            config["temp_directory"] = folder
        con = duckdb.connect(":memory:", config=config)
        spool = Spool(folder)
        try:
            loaded = self._load(con, blocks, spool, folder)
            if loaded is None:  # no blocks at all (not even a header's empty one): nothing to give back
                return
            every, held = loaded
            current, rows, names = "t0", self._count(con, "t"), held
            for step in self.steps:
                current, rows = self._step(con, step, current, names, rows, every)
                names = self._names_of(con, current)
                every = every + [n for n in names if n not in every]
            added = [n for n in names if n not in held]  # the columns the lookups added
            wanted = ", ".join(q(n) for n in [ROW, ERRORS, *added])
            answers = con.sql(f"SELECT {wanted} FROM {current} ORDER BY {q(ROW)}").to_arrow_reader(BATCH_ROWS)
            none = True
            for block in merge(spool.blocks(), answers, added):
                none = False
                yield block
            if none:  # no rows (a header-only file, every row removed): the columns still go on
                yield self._empty(spool, answers.schema, added)
        finally:
            spool.close()
            con.close()
            if folder:
                shutil.rmtree(folder, ignore_errors=True)

    def _load(
        self, con: Any, blocks: Iterator[Block], spool: Spool, folder: str | None
    ) -> tuple[list[str], list[str]] | None:
        """Every block into the spool, and the columns the steps read (with each row's number) into DuckDB's
        table ``t``; ``t0`` is its view with an empty ``errors`` (the rows' own errors wait in the spool).
        The table's columns, and those of them DuckDB holds; None without a block."""
        first = next(blocks, None)
        if first is None:
            return None
        names = first.names
        _distinct(self.steps[0], names, "the table")
        held = self._read(names)
        with _Keys(con, folder) as keys:
            for block in itertools.chain([first], blocks):
                spool.add(block)
                keys.add(block.table.select(held).append_column(ROW, block.row))
        con.execute(f"CREATE VIEW t0 AS SELECT *, CAST('' AS VARCHAR) AS {q(ERRORS)} FROM t")
        return names, held

    def _read(self, names: list[str]) -> list[str]:
        """The columns of ``names`` the steps read: the keys of a dedupe (every column for a whole row's), a
        unique check's column, a lookup's keys (a column a lookup adds is made in DuckDB)."""
        read: set[str] = set()
        for step in self.steps:
            if step.kind.name == "remove_duplicates":
                if not step["columns"]:
                    return list(names)
                read.update(step["columns"])
            elif step.kind.name == "check":
                read.add(step["column"])
            else:  # lookup
                read.update(step["on"])
        return [n for n in names if n in read]

    @staticmethod
    def _empty(spool: Spool, answers: pa.Schema, added: list[str]) -> Block:
        import pyarrow as pa

        own = [f for f in spool.schema or [] if f.name not in (ROW, ERRORS)]
        fields = [*own, *(pa.field(n, pa.large_string()) for n in added)]
        table = pa.schema(fields).empty_table()
        return Block(table, pa.array([], pa.int64()), pa.array([], pa.large_string()))

    @staticmethod
    def _names_of(con: Any, table: str) -> list[str]:
        result = con.execute(f"SELECT * FROM {table} LIMIT 0")
        described = result.description
        result.fetchall()  # DuckDB 2 wants every result finished before the next statement
        return [d[0] for d in described if d[0] not in (ROW, ERRORS)]

    def _count(self, con: Any, table: str) -> int:
        return int(con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])

    def _step(
        self, con: Any, step: Step, current: str, names: list[str], rows_in: int, every: list[str]
    ) -> tuple[str, int]:
        """The view of the rows after ``step`` (over ``current``, the view before it) and its row count.

        A step's own result is a view, not a copy: only what it found out is a table (the row numbers a
        dedupe keeps, the first row of each value, the reference's keys), so the rows themselves are read
        once more, by the query that gives them back, and each step reads only the columns it needs.
        ``names``: the columns in DuckDB (those the steps read, those added); ``every``: all the table's."""
        out = f"s{step.number}"
        if not every:
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
            _distinct(step, every + list(step["take"]), "the table with the columns it adds")
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
        the query that gives the rows back then joins against the smaller list (a join's list is held while
        the rows stream through it)."""
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


class _Keys:
    """DuckDB's table ``t`` of the columns the steps read: a Parquet file in the scratch folder, which DuckDB
    reads from disk each time a step or the last query needs it (so that holding it takes none of DuckDB's
    memory, and loading it none at all); without a scratch folder (a preview), a table in DuckDB's memory."""

    def __init__(self, con: Any, scratch: str | None) -> None:
        self.con, self.path = con, os.path.join(scratch, "keys.parquet") if scratch else None
        self.writer: Any = None
        self.made = False

    def __enter__(self) -> _Keys:
        return self

    def add(self, table: pa.Table) -> None:
        if self.path is None:
            self.con.register("incoming", table)
            self.con.execute(f"{'INSERT INTO t' if self.made else 'CREATE TABLE t AS'} SELECT * FROM incoming")
            self.con.unregister("incoming")
        else:
            if self.writer is None:
                import pyarrow.parquet as pq

                self.writer = pq.ParquetWriter(self.path, table.schema, compression=KEYS_COMPRESSION)
            self.writer.write_table(table)
        self.made = True

    def __exit__(self, *exc: object) -> None:
        if self.writer is not None:
            self.writer.close()
            if exc[0] is None:
                self.con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet({_lit(self.path or '')})")


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
