"""The steps that need the whole file — remove duplicates, a unique check, a lookup — in DuckDB.

The rows arrive as Arrow blocks from the project's own reader (so dialects, encodings and workbooks stay
the project's); DuckDB never reads the file itself. Each step makes a table from the one before, and the
rows come out in the file's order (by the row number that rides with every row). DuckDB is told the
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
#: Rows a result batch holds as it leaves DuckDB.
BATCH_ROWS = 65_536


@dataclass
class Context:
    """What whole-file steps need from where they run."""

    #: The memory DuckDB may use, in MB (it spills to ``scratch`` beyond it).
    memory_mb: int = 256
    #: A folder DuckDB may spill into; None: memory only (a preview).
    scratch: str | None = None
    #: The rows of a reference table: a completed task's result, by the task's id.
    open_reference: Callable[[str], Iterable[pa.Table]] | None = None
    references: dict[str, Any] = field(default_factory=dict)


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class FileSteps:
    """One run of consecutive whole-file steps over all the blocks before them."""

    def __init__(self, steps: list[Step], context: Context) -> None:
        self.steps, self.context = steps, context
        self.counts: dict[int, tuple[int, int, int]] = {}  # step number: rows in, rows out, cells changed

    def run(self, blocks: Iterator[Block]) -> Iterator[Block]:
        import duckdb

        config: dict[str, Any] = {"memory_limit": f"{max(64, self.context.memory_mb)}MB", "threads": "2",
                  "preserve_insertion_order": "false"}  # fmt: skip
        if self.context.scratch:
            config["temp_directory"] = self.context.scratch
        con = duckdb.connect(":memory:", config=config)
        try:
            names = self._load(con, blocks)
            if names is None:  # no blocks at all (not even a header's empty one): nothing to give back
                return
            _distinct(self.steps[0], names, "the table")
            current = "t"
            for step in self.steps:
                current = self._step(con, step, current, names)
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

    def _step(self, con: Any, step: Step, current: str, names: list[str]) -> str:
        out = f"s{step.number}"
        if not names:
            raise step.fail("the table has no columns left (the steps above removed them all)")
        rows_in = self._count(con, current)
        changed = 0
        if step.kind.name == "remove_duplicates":
            keys = ", ".join(q(n) for n in (step["columns"] or names))
            pick = "min" if step["keep"] == "first" else "max"
            con.execute(
                f"CREATE TABLE {out} AS SELECT * FROM {current} WHERE {q(ROW)} IN "
                f"(SELECT {pick}({q(ROW)}) FROM {current} GROUP BY {keys})"
            )
        elif step.kind.name == "check":  # the unique part of a check (the rest ran row by row)
            column = q(step["column"])
            cell = _trimmed(f"c.{column}")  # as the row-by-row checks read it: a cell of spaces is empty
            repeat = _add_error(f"{cell} <> '' AND c.{q(ROW)} <> f.first", _lit(unique_words(step["column"])), "c.")
            con.execute(
                f"CREATE TABLE {out} AS SELECT c.* REPLACE ({repeat}) FROM {current} c LEFT JOIN "
                f"(SELECT {_trimmed(column)} AS k, min({q(ROW)}) AS first FROM {current} GROUP BY 1) f "
                f"ON {cell} = f.k"
            )
            changed = 0
        else:  # lookup
            changed = self._lookup(con, step, current, out, names)
        self.counts[step.number] = (rows_in, self._count(con, out), changed)
        con.execute(f"DROP TABLE {current}")
        return out

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
        con.execute(
            f"CREATE TABLE {out} AS SELECT {', '.join(own + added)}, c.{q(ROW)}, {error} "
            f"FROM {current} c LEFT JOIN {ref}_one r ON {join}"
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
