"""The widgets of a step's fields in the step builder (``ui/step_builder.py``), one a field kind.

Each widget starts on the step's value (given to the widget, never written into its key: see
ui/task_form.py) and returns the value the step then keeps. A field that names columns of the table
offers those the table has at that step; a name typed that the table lacks is kept, shown as missing,
and the step says so. Text forms of fields ("old = new" lines and the like) are ``ui/step_text.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from s3task.steps import Kind
from s3task.steps.spec import Field

from . import step_text as words

_NO_COLUMN = ""


def _missing(names: list[str] | None, options: list[str]) -> Callable[[str], str]:
    """How a box shows a column: as it is, or marked when the table has no such column at that step.

    Only an option is marked: a name just typed comes back through the same function before it is one
    of the options, and Streamlit reads the words shown back as the value (a mark would stick to it)."""

    def shown(name: str) -> str:
        if names is not None and name and name in options and name not in names:
            return f"{name} (not in the table here)"
        return name

    return shown


def column_box(f: Field, current: str, key: str, names: list[str] | None, label: str | None = None) -> str:
    """A box of the table's columns at this step (a name may be typed too); "" for none chosen."""
    options = [_NO_COLUMN, *(names or [])]
    if current and current not in options:
        options.append(current)
    mark = _missing(names, options)
    value = st.selectbox(
        label or f.title,
        options,
        index=options.index(current),
        format_func=lambda c: mark(c) if c else ("— choose a column —" if f.required else "— none —"),
        accept_new_options=True,
        help=f.help or None,
        key=key,
    )
    return str(value or "")


def _columns_box(f: Field, current: list[str], key: str, names: list[str] | None) -> list[str]:
    options = list(names or [])
    options += [c for c in current if c not in options]
    value = st.multiselect(
        f.title,
        options,
        default=current,
        format_func=_missing(names, options),
        accept_new_options=True,
        placeholder="Choose columns" if f.required else "None: every column",
        help=f.help or None,
        key=key,
    )
    return [str(v) for v in value]


def _lines_box(f: Field, current: str, key: str, help_: str, placeholder: str = "") -> str:
    return str(st.text_area(f.title, value=current, height=90, help=help_, placeholder=placeholder, key=key) or "")


def field_widget(kind: Kind, f: Field, value: Any, key: str, names: list[str] | None) -> tuple[Any, list[str]]:
    """The widget of field ``f`` (any kind but a column of the table, and conditions): (its value, what is
    wrong with the text typed)."""
    help_ = f.help or None
    typed_names = (kind.name, f.name) in words.TYPED_COLUMNS
    if f.kind == "bool":
        return st.checkbox(f.title, value=bool(value), help=help_, key=key), []
    if f.kind == "choice":
        options = list(f.choices)
        index = options.index(value) if value in options else 0
        chosen = st.selectbox(f.title, options, index=index, format_func=lambda c: words.CHOICE_WORDS.get(c, c),
                              help=help_, key=key)  # fmt: skip
        return chosen, []
    if f.kind == "columns" and not typed_names:
        return _columns_box(f, list(value or []), key, names), []
    if f.kind in ("columns", "texts"):
        text = _lines_box(f, "\n".join(value or []), key, (f.help + " " if f.help else "") + "One a line.")
        return words.lines(text), []
    if f.kind == "renames":
        example = f"{names[0]} = new name" if names else "Old name = New name"
        text = _lines_box(f, words.renames_text(value or {}), key, "One a line: old name = new name.", example)
        return words.renames(text)
    if f.kind == "pairs":
        text = _lines_box(f, words.pairs_text(value or []), key, "One a line: find = replace with.", "N/A = ")
        return words.pairs(text)
    if kind.check and f.name == "format":
        return _format_box(f, str(value or ""), key), []
    text = st.text_input(f.title, value="" if value is None else str(value), help=help_, key=key)
    return (words.number(text) if f.kind == "number" else text), []


def _format_box(f: Field, current: str, key: str) -> str:
    """A check's format: the formats it knows, in words (another, such as phone:IE, may be typed)."""
    options = ["", *words.FORMATS]
    if current and current not in options:
        options.append(current)
    value = st.selectbox(
        f.title,
        options,
        index=options.index(current),
        format_func=lambda v: words.format_words(v) if v in options else v,  # a format typed: as typed
        accept_new_options=True,
        help=f.help or None,
        key=key,
    )
    return str(value or "")


# --- conditions (Keep rows, Remove rows) -------------------------------------------------------------------


def conditions(item: dict[str, Any], f: Field, key: str, names: list[str] | None, new_id: Callable[[], int]) -> list:
    """A step's conditions, one row each (column, test, value, ignore case), with Add and Remove buttons.
    Each condition has an id of its own (``item["conds"]``), so removing one keeps the others' widgets."""
    rows = list(item["json"].get(f.name) or [])
    ids = item.setdefault("conds", [])
    while len(ids) < len(rows):
        ids.append(new_id())
    out = []
    for i, (cid, row) in enumerate(zip(ids, rows, strict=False), 1):
        out.append(_condition(row, i, f"{key}-{cid}", names))
        if len(rows) > 1:
            st.button(f"Remove condition {i}", key=f"{key}-{cid}-remove", on_click=_drop_condition,
                      args=(item, f.name, cid), icon=":material/remove:")  # fmt: skip
    st.button("Add a condition", key=f"{key}-add", on_click=_add_condition, args=(item, f.name, new_id),
              icon=":material/add:")  # fmt: skip
    return out


def _condition(row: dict[str, Any], i: int, key: str, names: list[str] | None) -> dict[str, Any]:
    column_field = Field("column", "column", f"Condition {i}: column")
    left, middle, right = st.columns(3)
    with left:
        column = column_box(column_field, str(row.get("column") or ""), f"{key}-column", names)
    tests = list(words.TEST_WORDS)
    with middle:
        test = st.selectbox("Test", tests, index=tests.index(row["is"]) if row.get("is") in tests else 0,
                            format_func=words.TEST_WORDS.__getitem__, key=f"{key}-is")  # fmt: skip
    out: dict[str, Any] = {"column": column, "is": test}
    values = list(row.get("values") or ([row["value"]] if row.get("value") else []))
    with right:
        if test == words.LIST_TEST:
            text = st.text_area("Values", value="\n".join(values), height=90, key=f"{key}-values",
                                help="One value a line.")  # fmt: skip
            out["values"] = words.lines(str(text or ""))
        elif test not in words.NO_VALUE:
            value = str(row.get("value") if row.get("value") is not None else (values[0] if values else ""))
            out["value"] = st.text_input("Value", value=value, key=f"{key}-value")
    out["ignore_case"] = st.checkbox("Ignore case", value=bool(row.get("ignore_case")), key=f"{key}-case")
    return out


def _add_condition(item: dict[str, Any], name: str, new_id: Callable[[], int]) -> None:
    item["json"].setdefault(name, []).append({"column": "", "is": "equals", "value": ""})
    item.setdefault("conds", []).append(new_id())


def _drop_condition(item: dict[str, Any], name: str, cid: int) -> None:
    at = item["conds"].index(cid)
    item["conds"].pop(at)
    item["json"][name].pop(at)
