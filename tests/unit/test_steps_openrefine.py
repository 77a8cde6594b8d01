"""Importing an OpenRefine operation history (Undo/Redo → Extract…) as a step list: each operation imported
one to one when the step does exactly what OpenRefine does, else refused by its place, op and description,
and then nothing is imported.

The operations below are written in the shapes OpenRefine itself writes. Where each comes from (in
OpenRefine/OpenRefine, main branch): the serialization tests under
main/tests/server/src/com/google/refine/operations/ (named at each), the operations under
main/src/com/google/refine/operations/, the descriptions in
main/resources/com/google/refine/operations/OperationDescription.properties, the expressions the menus
send in main/webapp/modules/core/scripts/views/data-table/menu-edit-cells.js, and the facet a text
facet sends (modules/core/.../browsing/facets/ListFacet.java, ListFacetConfig). Histories people have
published (found by code search) have the same shapes, e.g. a mass edit of blank cells written
``"from": [""], "fromBlank": true``.
"""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from s3task.steps import StepError, parse
from s3task.steps.engine import Runner, check_columns, require_columns
from s3task.steps.openrefine import ARROW_SPACE, from_openrefine

ROWS = {"mode": "row-based", "facets": []}
RECORDS = {"mode": "record-based", "facets": []}

# ColumnRenameOperationTests.serializeColumnRenameOperation
RENAME = {
    "op": "core/column-rename",
    "description": "Rename column old name to new name",
    "oldColumnName": "old name",
    "newColumnName": "new name",
}
# ColumnRemovalOperationTests.serializeColumnRemovalOperation
REMOVAL = {"op": "core/column-removal", "description": "Remove column my column", "columnName": "my column"}
# ColumnMultiRemovalOperationTests (PR #7194, 2025: the Reorder / remove columns dialog when it only removes)
MULTI_REMOVAL = {
    "op": "core/column-multi-removal",
    "description": "Remove 2 columns",
    "columnNames": ["my column", "some other column"],
}
# ColumnReorderOperationTests.serialize (isPureReorder: PR #7227, 2026; older histories have no such field)
REORDER = {
    "op": "core/column-reorder",
    "description": "Reorder columns",
    "isPureReorder": False,
    "columnNames": ["b", "c", "a"],
}
# ColumnMoveOperationTests.serializeColumnMoveOperation
MOVE = {
    "op": "core/column-move",
    "description": "Move column my column to position 3",
    "columnName": "my column",
    "index": 3,
}
# ColumnMoveFirstOperationTests / ColumnMoveLeftOperationTests (the column menu's Move column since PR #7174, 2025)
MOVE_FIRST = {
    "op": "core/column-move-first",
    "description": "Move column my column to the beginning",
    "columnName": "my column",
}
# MassOperationTests.serializeMassEditOperation (its engine is record-based: without facets it is every row)
MASS_EDIT = {
    "op": "core/mass-edit",
    "description": "Mass edit cells in column my column",
    "engineConfig": RECORDS,
    "columnName": "my column",
    "expression": "value",
    "edits": [{"fromBlank": False, "fromError": False, "from": ["String"], "to": "newString"}],
}
# TextTransformOperationTests.serializeTextTransformOperation, with the expression and onError the Edit cells →
# Common transforms → Trim leading and trailing whitespace menu sends (menu-edit-cells.js: doTextTransform)
TEXT_TRANSFORM = {
    "op": "core/text-transform",
    "description": "Text transform on cells in column my column using expression grel:value.trim()",
    "engineConfig": ROWS,
    "columnName": "my column",
    "expression": "grel:value.trim()",
    "onError": "keep-original",
    "repeat": False,
    "repeatCount": 10,
}
# RowRemovalOperationTests (the renamed operation's JSON): a text facet on a column's value, two values chosen
TEXT_FACET = {
    "type": "list",
    "name": "hello",
    "columnName": "hello",
    "expression": "grel:value",
    "invert": False,
    "omitBlank": False,
    "omitError": False,
    "selection": [{"v": {"v": "h", "l": "h"}}, {"v": {"v": "i", "l": "i"}}],
    "selectBlank": False,
    "selectError": False,
}
ROW_REMOVAL = {
    "op": "core/row-removal",
    "description": "Remove rows",
    "engineConfig": {"facets": [TEXT_FACET], "mode": "row-based"},
}
# FillDownTests.serializeFillDownOperation (there record-based; the menu sends the engine's mode)
FILL_DOWN = {
    "op": "core/fill-down",
    "description": "Fill down cells in column my key",
    "engineConfig": ROWS,
    "columnName": "my key",
}
# ColumnSplitOperationTests.serializeColumnSplitOperationBySeparator
COLUMN_SPLIT = {
    "op": "core/column-split",
    "description": "Split column ticker by separator",
    "engineConfig": ROWS,
    "columnName": "ticker",
    "guessCellType": True,
    "removeOriginalColumn": True,
    "mode": "separator",
    "separator": "e",
    "regex": False,
    "maxColumns": 0,
}


def op(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def transform(column: str, expression: str, **changes: Any) -> dict[str, Any]:
    description = f"Text transform on cells in column {column} using expression {expression}"
    return op(TEXT_TRANSFORM, description=description, columnName=column, expression=expression, **changes)


def trim(column: str) -> dict[str, Any]:
    return transform(column, "grel:value.trim()")


def text_facet(column: str, values: list[Any], **changes: Any) -> dict[str, Any]:
    selection = [{"v": {"v": v, "l": str(v)}} for v in values]
    return op(TEXT_FACET, name=column, columnName=column, selection=selection, **changes)


def removal(*facets: dict[str, Any], mode: str = "row-based") -> dict[str, Any]:
    return op(ROW_REMOVAL, engineConfig={"facets": list(facets), "mode": mode})


def mass_edit(column: str, edits: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
    full = [{"fromBlank": False, "fromError": False, **e} for e in edits]
    return op(MASS_EDIT, description=f"Mass edit cells in column {column}", engineConfig=ROWS, columnName=column,
              edits=full, **changes)  # fmt: skip


def goes_round(mapping: dict[str, str]) -> bool:
    """Some value comes back to itself through the mapping (a → b → a, a → b → c → a)."""
    for start in mapping:
        seen, value = set(), start
        while value in mapping and mapping[value] != value and value not in seen:
            seen.add(value)
            value = mapping[value]
            if value == start:
                return True
    return False


def text_table(columns: dict[str, list[str]]) -> pa.Table:
    return pa.table({name: pa.array(cells, pa.large_string()) for name, cells in columns.items()})


def run(steps: list[dict[str, Any]], table: pa.Table, block: int | None = None) -> dict[str, list[str]]:
    """The imported list run as the worker runs it (checked against the header first), in blocks of ``block``
    rows; the output's columns without the error column, which an imported list never writes to."""
    parsed = parse(steps)
    assert check_columns(parsed, table.column_names)[1] == {}
    size = block or max(table.num_rows, 1)
    blocks = [table.slice(at, size) for at in range(0, max(table.num_rows, 1), size)]
    out: dict[str, list[str]] = pa.concat_tables(Runner(parsed).run(iter(blocks))).to_pydict()
    assert set(out.pop("error")) <= {""}
    return out


def refusal(history: list[Any], columns: list[str] | None = None) -> str:
    with pytest.raises(StepError) as caught:
        from_openrefine(history, columns)
    message = str(caught.value)
    assert message.endswith("; nothing was imported")
    return message


# --- one to one ----------------------------------------------------------------------------------


def test_each_operation_is_imported_as_its_step() -> None:
    keep = [{"step": "keep_columns", "columns": ["b", "c", "a"]}]
    h_or_i = [{"column": "hello", "is": "one_of", "values": ["h", "i"]}]
    cases: list[tuple[dict[str, Any], list[dict[str, Any]]]] = [
        (RENAME, [{"step": "rename_columns", "names": {"old name": "new name"}}]),
        (REMOVAL, [{"step": "drop_columns", "columns": ["my column"]}]),
        (MULTI_REMOVAL, [{"step": "drop_columns", "columns": ["my column", "some other column"]}]),
        (REORDER, keep),
        ({k: v for k, v in REORDER.items() if k != "isPureReorder"}, keep),
        (op(REORDER, isPureReorder=True), [{"step": "reorder_columns", "columns": ["b", "c", "a"]}]),
        (MOVE_FIRST, [{"step": "reorder_columns", "columns": ["my column"]}]),
        (
            MASS_EDIT,
            [{"step": "replace", "columns": ["my column"], "pairs": [["String", "newString"]], "whole_cell": True}],
        ),
        (TEXT_TRANSFORM, [{"step": "trim", "columns": ["my column"]}]),
        (ROW_REMOVAL, [{"step": "remove_rows", "conditions": h_or_i, "match": "any"}]),
        (removal(op(TEXT_FACET, invert=True)), [{"step": "keep_rows", "conditions": h_or_i, "match": "any"}]),
    ]
    for operation, steps in cases:
        assert from_openrefine([operation]) == steps, operation
        parse(steps)  # a list s3task reads as it is
    # Fill down reads only a column trimmed before it (a cell of only spaces: see the refusals).
    assert from_openrefine([trim("my key"), FILL_DOWN])[1] == {
        "step": "fill_empty",
        "columns": ["my key"],
        "with": "above",
    }
    assert (
        from_openrefine(json.dumps([RENAME]))
        == from_openrefine(json.dumps([RENAME]).encode())
        == from_openrefine([RENAME])
    )
    assert from_openrefine([]) == []


def test_the_expressions_are_read_as_grel_reads_them() -> None:
    """Both quotes; \\t \\n \\r \\\\ are escapes and a backslash before anything else is that character (no \\u);
    "grel:" or "gel:" or no prefix; value.f(…) or f(value, …); spaces between tokens; strip is trim."""
    cases = {
        'grel:value.replace("a", "b")': ("a", "b"),
        "value.replace('it\\'s', \"it is\")": ("it's", "it is"),
        'grel:value.replace("\\t", "\\\\n")': ("\t", "\\n"),
        "value.replace('\\u0041', '\\q')": ("u0041", "q"),
        "GREL: replace( value , ';' , ', ' )": (";", ", "),
        "gel:value.replace(':', ' – ')": (":", " – "),
        'value.replace("x", "")': ("x", ""),
    }
    for expression, (find, put) in cases.items():
        steps = from_openrefine([transform("c", expression)])
        assert steps == [{"step": "replace", "columns": ["c"], "find": find, "replace_with": put}], expression
    for expression in ("value.trim()", "grel:trim(value)", " value . strip ( ) "):
        assert from_openrefine([transform("c", expression)]) == [{"step": "trim", "columns": ["c"]}]


def test_a_mass_edit_made_at_once_is_ordered_so_one_replacement_after_another_does_the_same() -> None:
    """OpenRefine looks each cell up once among the edits' "from" values (the last edit naming a value wins);
    s3task's replacements run one after another. Every mapping of a, b, c to a, b, c, d is tried."""
    cells = ["a", "b", "c", "d", "", "ab"]
    table = text_table({"k": cells})
    for targets in itertools.product("abcd", repeat=3):
        mapping = dict(zip("abc", targets, strict=True))
        history = [mass_edit("k", [{"from": [find], "to": to} for find, to in mapping.items()])]
        try:
            steps = from_openrefine(history)
        except StepError as e:
            assert "swaps values" in str(e)
            assert goes_round(mapping), mapping  # refused only when the values go round
            continue
        assert run(steps, table)["k"] == [mapping.get(c, c) for c in cells], mapping
    # The last edit naming a value wins, and an edit of a value to itself changes nothing.
    history = [
        mass_edit("k", [{"from": ["a", "b"], "to": "x"}, {"from": ["a"], "to": "y"}, {"from": ["c"], "to": "c"}])
    ]
    assert run(from_openrefine(history), table)["k"] == ["y", "x", "c", "d", "", "ab"]


def test_a_mass_edit_of_blank_cells_fills_them_in_the_order_that_gives_the_same() -> None:
    table = text_table({"k": ["  ", "a", "", "b", "n/a"]})
    head = [trim("k")]  # "  " → ""
    cases: list[tuple[list[dict[str, Any]], list[str]]] = [
        # Blank cells → "none" and "n/a" → "": the fill first, so the emptied "n/a" stays empty.
        (
            [{"from": [""], "fromBlank": True, "to": "none"}, {"from": ["n/a"], "to": ""}],
            ["none", "a", "none", "b", ""],
        ),
        # Blank cells → "a" and "a" → "b": the replacement first, so the filled cells stay "a".
        ([{"from": [""], "fromBlank": True, "to": "a"}, {"from": ["a"], "to": "b"}], ["a", "b", "a", "b", "n/a"]),
        # "from": [""] alone is an edit of blank cells (MassEditOperation.Edit); "" among others is not.
        ([{"from": [""], "to": "z"}], ["z", "a", "z", "b", "n/a"]),
        ([{"from": ["", "b"], "to": "z"}], ["", "a", "", "z", "n/a"]),
    ]
    for edits, expected in cases:
        assert run(from_openrefine([*head, mass_edit("k", edits)]), table)["k"] == expected, edits


def test_column_moves_put_the_column_where_openrefine_does() -> None:
    """ColumnMoveChange takes the column out and puts it back at the index; -first/-last/-left/-right compute
    the index from the table at that point. Every column of a five-column table to every place."""
    names = ["A", "B", "C", "D", "E"]
    table = text_table({n: [n.lower()] for n in names})
    for name, at in itertools.product(names, range(len(names))):
        rest = [n for n in names if n != name]
        expected = [*rest[:at], name, *rest[at:]]
        steps = from_openrefine([op(MOVE, columnName=name, index=at)], names)
        assert list(run(steps, table)) == expected
        assert require_columns(parse(steps), names) == expected
    for name in names:
        i = names.index(name)
        for where, at in (("first", 0), ("last", 4), ("left", max(0, i - 1)), ("right", min(4, i + 1))):
            rest = [n for n in names if n != name]
            steps = from_openrefine([op(MOVE_FIRST, op=f"core/column-move-{where}", columnName=name)], names)
            assert list(run(steps, table)) == [*rest[:at], name, *rest[at:]], (name, where)


def test_the_columns_are_followed_through_the_history_as_openrefine_changes_them() -> None:
    columns = ["id", "a", "b", "c", "d", "e"]
    history = [
        op(RENAME, oldColumnName="a", newColumnName="A"),
        op(MULTI_REMOVAL, columnNames=["e", "gone", "e"]),  # a name not there is passed over; twice is once
        op(REORDER, isPureReorder=True, columnNames=["d", "nope", "A"]),  # the others after, in their order
        op(MOVE, columnName="id", index=0),
        op(REMOVAL, columnName="c"),
        op(REORDER, columnNames=["b", "A", "id", "missing"]),  # the unlisted d is removed
        op(MOVE_FIRST, op="core/column-move-right", columnName="b"),
    ]
    steps = from_openrefine(history, columns)
    assert require_columns(parse(steps), columns) == ["A", "b", "id"]
    table = text_table({n: [n] for n in columns})
    assert run(steps, table) == {"A": ["a"], "b": ["b"], "id": ["id"]}


def test_a_text_facet_with_blank_removes_or_keeps_the_rows_openrefine_does() -> None:
    table = text_table({"k": ["x", " ", "", "y", "z", "x "]})
    head = [trim("k")]  # " " → "", "x " → "x"
    # Selected: x and (blank); removed, or with invert kept.
    facet = text_facet("k", ["x", ""], selectBlank=True)  # "" among the values selects nothing of itself
    steps = from_openrefine([*head, removal(facet)])
    assert steps[1] == {
        "step": "remove_rows",
        "conditions": [{"column": "k", "is": "one_of", "values": ["x"]}, {"column": "k", "is": "is_empty"}],
        "match": "any",
    }
    assert run(steps, table)["k"] == ["y", "z"]
    assert run(from_openrefine([*head, removal(op(facet, invert=True))]), table)["k"] == ["x", "", "", "x"]
    # Facets that select nothing (OpenRefine's browser does not send them, but a history may have them) filter nothing.
    idle = text_facet("other", [])
    assert from_openrefine([*head, removal(facet, idle)])[1] == steps[1]
    assert from_openrefine([op(TEXT_TRANSFORM, engineConfig={"mode": "row-based", "facets": [idle]})])


# --- refused, and nothing imported -----------------------------------------------------------------


def test_an_operation_it_does_not_import_is_named_and_nothing_is_imported() -> None:
    addition = {
        "op": "core/column-addition",
        "description": "Create column foo",
        "engineConfig": ROWS,
        "newColumnName": "foo",
        "columnInsertIndex": 1,
        "baseColumnName": "bar",
        "expression": "grel:value",
        "onError": "set-to-blank",
    }
    message = refusal([RENAME, MASS_EDIT, TEXT_TRANSFORM, addition])
    assert (
        message
        == 'Operation 4 (core/column-addition, "Create column foo"): s3task cannot import this; nothing was imported'
    )
    assert refusal([{"op": "core/row-reorder", "mode": "row-based", "sorting": {"criteria": []}}]) == (
        "Operation 1 (core/row-reorder): s3task cannot import this; nothing was imported"
    )
    assert refusal([RENAME, "core/column-rename"]).startswith(
        "Operation 2: s3task cannot import this: it is not an operation"
    )
    for raw in ("[", '{"op": "core/column-rename"}', b"\xff"):
        with pytest.raises(StepError, match="OpenRefine history"):
            from_openrefine(raw)


REFUSALS: list[tuple[str, list[dict[str, Any]], list[str] | None, str]] = [
    # text transforms
    ("upper case", [transform("c", "grel:value.toUppercase()")], None, "ß → SS"),
    ("lower case", [transform("c", "value.toLowercase()")], None, "ς"),
    ("title case", [transform("c", "grel:value.toTitlecase()")], None, "O'neil"),
    ("a regex", [transform("c", "grel:value.replace(/\\s+/,' ')")], None, "regular expression"),
    ("an empty find", [transform("c", "value.replace('', '-')")], None, "between every two characters"),
    ("a number to find", [transform("c", "value.replace(1, 'x')")], None, "texts in quotes"),
    ("two functions", [transform("c", "value.trim().toUppercase()")], None, "not 'value.trim().toUppercase()'"),
    ("another language", [transform("c", "jython:return value.strip()")], None, "value.trim()"),
    ("an unclosed text", [transform("c", "value.replace('a, 'b')")], None, "not closed"),
    ("set to blank", [op(trim("c"), onError="set-to-blank")], None, "keep-original"),
    ("no onError", [{k: v for k, v in trim("c").items() if k != "onError"}], None, "keep-original"),
    ("repeat", [op(trim("c"), repeat=True)], None, "repeats"),
    (
        "a facet",
        [op(trim("c"), engineConfig={"mode": "row-based", "facets": [text_facet("c", ["x"])]})],
        None,
        "only to the rows its facets select",
    ),
    (
        "a range facet",
        [
            op(
                trim("c"),
                engineConfig={
                    "mode": "row-based",
                    "facets": [
                        {
                            "type": "range",
                            "name": "n",
                            "expression": "value",
                            "columnName": "n",
                            "from": 0,
                            "to": 5,
                            "selectNumeric": True,
                            "selectNonNumeric": True,
                            "selectBlank": True,
                            "selectError": True,
                        }
                    ],
                },
            )
        ],
        None,
        "a range facet selects",
    ),
    ("an unknown field", [op(trim("c"), language="grel")], None, "'language'"),
    ("no engine", [{k: v for k, v in trim("c").items() if k != "engineConfig"}], None, "engineConfig"),
    # row removal
    ("records", [removal(text_facet("c", ["x"]), mode="record-based")], None, "whole records"),
    ("no facet", [removal()], None, "removes every row"),
    ("two facets", [removal(text_facet("c", ["x"]), text_facet("d", ["y"]))], None, "several facets"),
    ("(error)", [removal(text_facet("c", ["x"], selectError=True))], None, "(error)"),
    (
        "an expression",
        [removal(text_facet("c", ["x"], expression="grel:value.toLowercase()"))],
        None,
        "not on the cells' value",
    ),
    ("a number in a facet", [removal(text_facet("c", [3]))], None, "not text"),
    ("untrimmed (blank)", [removal(text_facet("c", [], selectBlank=True))], None, "trimmed before"),
    ("a facet's column not there", [removal(text_facet("zz", ["x"]))], ["c"], "'zz'"),
    # fill down
    ("untrimmed fill down", [op(FILL_DOWN, columnName="c")], None, "a cell of only spaces"),
    (
        "fill down by records",
        [trim("c"), op(FILL_DOWN, columnName="c", engineConfig=RECORDS)],
        None,
        "within each record",
    ),
    (
        "replaced since trimmed",
        [trim("c"), transform("c", "value.replace('-', ' ')"), op(FILL_DOWN, columnName="c")],
        None,
        "trimmed before",
    ),
    # mass edit
    ("untrimmed blank", [mass_edit("c", [{"from": [""], "fromBlank": True, "to": "none"}])], None, "trimmed before"),
    ("errors", [mass_edit("c", [{"from": [], "fromError": True, "to": "none"}])], None, "error cells"),
    ("a swap", [mass_edit("c", [{"from": ["a"], "to": "b"}, {"from": ["b"], "to": "a"}])], None, "swaps"),
    ("a facet expression", [op(MASS_EDIT, expression="grel:value.toLowercase()")], None, "expression"),
    ("a date", [mass_edit("c", [{"from": ["x"], "to": "2024-01-01T00:00:00Z", "type": "date"}])], None, "not text"),
    ("a number to write", [mass_edit("c", [{"from": ["x"], "to": 3}])], None, "not text"),
    (
        "fill and empty at once",
        [trim("c"), mass_edit("c", [{"from": [""], "fromBlank": True, "to": "a"}, {"from": ["a"], "to": ""}])],
        None,
        "at once",
    ),
    # column split: every case, with its reason
    ("guess cell type", [op(COLUMN_SPLIT, maxColumns=2)], None, "guesses cell types"),
    ("no most columns", [op(COLUMN_SPLIT, guessCellType=False)], None, "as many columns as the file's longest cell"),
    (
        "most columns",
        [op(COLUMN_SPLIT, guessCellType=False, maxColumns=2)],
        None,
        "up to 2, so how many depends on the file",
    ),
    ("regex", [op(COLUMN_SPLIT, regex=True, guessCellType=False, maxColumns=2)], None, "regular expression"),
    (
        "lengths",
        [
            {
                **{k: v for k, v in COLUMN_SPLIT.items() if k not in ("separator", "regex", "maxColumns")},
                "mode": "lengths",
                "fieldLengths": [1, 2],
            }
        ],
        None,
        "field lengths",
    ),
    # columns
    ("a move without the columns", [MOVE], None, "give the table's columns"),
    ("a move past the end", [MOVE], ["my column", "b"], "no place 3"),
    ("a rename onto a column", [RENAME], ["old name", "new name"], "already has a column named 'new name'"),
    ("a column not there", [REMOVAL], ["a"], "no column 'my column'"),
    ("every column removed", [op(REORDER, columnNames=["x"])], ["a"], "removes every column"),
    ("a column twice", [op(REORDER, columnNames=["a", "a"])], None, "twice"),
    ("a name too long", [op(RENAME, newColumnName="n" * 1001)], None, "longer than 1000 characters"),
    ("columnNames in column-removal", [{"op": "core/column-removal", "columnNames": ["a"]}], None, "'columnNames'"),
]


@pytest.mark.parametrize(("case", "history", "columns", "reason"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_what_it_cannot_import_exactly_is_refused_naming_the_operation(
    case: str, history: list[dict[str, Any]], columns: list[str] | None, reason: str
) -> None:
    first = op(RENAME, description="Rename column p to q", oldColumnName="p", newColumnName="q")
    message = refusal([first, *history], columns and ["p", *columns])  # one imported before: nothing is
    last = history[-1]
    described = f", {json.dumps(last['description'], ensure_ascii=False)}" if "description" in last else ""
    assert message.startswith(f"Operation {len(history) + 1} ({last['op']}{described}): s3task cannot import this: ")
    assert reason in message


def test_the_reasons_for_refusing_hold() -> None:
    """What s3task's own steps do where OpenRefine differs (the day they agree, import these instead)."""
    table = text_table({"k": ["straße", "ΟΔΟΣ", "o'neil jean-luc 1st", "  ", "\x1c"]})

    def case(to: str) -> list[str]:
        return run([{"step": "change_case", "columns": ["k"], "to": to}], table)["k"]

    assert case("upper")[0] != "STRASSE"  # Java: "straße".toUpperCase() == "STRASSE"
    assert case("lower")[1] != "οδος"  # Java: final sigma
    assert case("title")[2] != "O'neil Jean-luc 1st"  # commons-text WordUtils.capitalizeFully, delimiters " \t\r\n."
    # A cell of only spaces is empty to s3task (it is filled to OpenRefine: ExpressionUtils.isNonBlankData).
    filled = run([{"step": "fill_empty", "columns": ["k"], "with": "value", "value": "v"}], table)["k"]
    assert filled[3] == "v"
    # The one difference accepted: Arrow's trim also removes U+001C–U+001F, Guava's does not.
    assert run([{"step": "trim", "columns": ["k"]}], table)["k"][4] == ""


def test_the_spaces_s3task_trims_are_the_ones_named() -> None:
    every = [chr(c) for c in range(0x3001) if not 0xD800 <= c <= 0xDFFF]
    trimmed = pc.utf8_trim_whitespace(pa.array(["x" + c for c in every], pa.large_string())).to_pylist()
    assert {c for c, t in zip(every, trimmed, strict=True) if t == "x"} == set(ARROW_SPACE)
    assert {c for c in every if c.isspace()} == set(ARROW_SPACE)


# --- end to end ----------------------------------------------------------------------------------


def test_a_history_run_gives_the_cells_openrefine_gives() -> None:
    table = text_table({
        "id": ["1", "2", "3", "4", "5", "6"],
        "name": ["  Zoë Ålund ", "李小龍", " Ana 🙂", "", "Bob\u00a0", "Eve"],
        "city": ["Berlin", "berlin", "BERLIN ", "Köln", "Koeln", ""],
        "region": ["North", "", " ", "South", "", "\t"],
        "status": ["ok", "x-test", "ok", "drop", "ok", "x-ok"],
    })  # fmt: skip
    history = [
        trim("region"),
        op(FILL_DOWN, description="Fill down cells in column region", columnName="region"),
        trim("city"),
        mass_edit("city", [
            {"from": ["berlin", "BERLIN"], "to": "Berlin"},
            {"from": ["Koeln"], "to": "Köln"},
            {"from": [""], "fromBlank": True, "to": "unknown"},
        ]),
        transform("name", "value.trim()"),
        transform("status", 'grel:value.replace("x-", "")'),
        removal(text_facet("status", ["drop"])),
        op(RENAME, description="Rename column name to Name", oldColumnName="name", newColumnName="Name"),
        op(MOVE, description="Move column city to position 0", columnName="city", index=0),
        op(REORDER, columnNames=["city", "Name", "region", "status"]),
        op(MOVE_FIRST, op="core/column-move-last", description="Move column Name to the end", columnName="Name"),
    ]  # fmt: skip
    steps = from_openrefine(history, table.column_names)
    # What OpenRefine leaves, worked out from its code: trim (Guava whitespace, NBSP too), fill down from the last
    # non-blank cell, the mass edit's lookup, Java's String.replace, the removed "drop" row, the columns moved.
    expected = {
        "city": ["Berlin", "Berlin", "Berlin", "Köln", "unknown"],
        "region": ["North", "North", "North", "South", "South"],
        "status": ["ok", "test", "ok", "ok", "ok"],
        "Name": ["Zoë Ålund", "李小龍", "Ana 🙂", "Bob", "Eve"],
    }
    for block in (None, 2, 1):  # the fill down carries from block to block
        out = run(steps, table, block)
        assert out == expected and list(out) == list(expected)
    assert require_columns(parse(steps), table.column_names) == list(expected)
