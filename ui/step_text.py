"""The step builder's words and the text forms of its fields, as plain functions (no Streamlit here).

A step is kept as the JSON the task's ``steps`` parameter takes (:mod:`s3task.steps.spec`); the widgets
of ``ui/step_builder.py`` show some fields as text — "old = new" lines for renames, "find = replace with"
lines for replacements, one value a line for a list — and these functions turn that text into the JSON
and back. What a step did to the preview's rows (:class:`s3task.steps.engine.Count`) is said in words
here too: "removes 3 of these 10 rows", "changes 31 cells", "adds 2 columns (First, Last)".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from s3task.steps import Kind
from s3task.steps.engine import Count
from s3task.steps.kinds import TESTS

#: Fields that name columns the table does not have yet (new ones), or a reference table's: typed, not picked.
TYPED_COLUMNS = frozenset({("split_column", "into"), ("join_columns", "into"), ("lookup", "reference_on"),
                           ("lookup", "take")})  # fmt: skip
#: A condition's tests, as the box of tests shows them.
TEST_WORDS = {
    "equals": "is",
    "not_equals": "is not",
    "contains": "contains",
    "starts_with": "starts with",
    "ends_with": "ends with",
    "is_empty": "is empty",
    "is_not_empty": "is not empty",
    "one_of": "is one of (one a line)",
    "matches": "matches the pattern",
    "greater_than": "is more than (a number)",
    "less_than": "is less than (a number)",
    "before": "is before (a date, YYYY-MM-DD)",
    "after": "is after (a date, YYYY-MM-DD)",
}
assert set(TEST_WORDS) == set(TESTS), "every test of s3task.steps.kinds has its words"
#: Tests without a value, and the one with a list of values.
NO_VALUE = ("is_empty", "is_not_empty")
LIST_TEST = "one_of"
#: The choices of the kinds' choice fields, in words (a choice not here is shown as it is).
CHOICE_WORDS = {
    "all": "all the conditions",
    "any": "any of the conditions",
    "first": "the first",
    "last": "the last",
    "upper": "UPPER CASE",
    "lower": "lower case",
    "title": "Title Case",
    "above": "the filled cell above",
    "value": "a value",
    ",": "a comma (1.234,5)",
    ".": "a point (1,234.5)",
    "number": "numbers",
    "date": "dates (YYYY-MM-DD)",
    "refuse": "refuse the step",
    "error": "give the row an error",
    "leave empty": "leave its new cells empty",
}
#: The formats a check knows (s3task.steps.checks), in words; "phone:XX" and "postcode:XX" are made below.
FORMATS = ("email", "url", "phone", "iban", "phone:GB", "phone:US", "phone:DE", "phone:NL", "phone:FR",
           "postcode:GB", "postcode:US", "postcode:DE", "postcode:NL")  # fmt: skip
_FORMAT_WORDS = {"": "— none —", "email": "an email address", "url": "a web address", "iban": "an IBAN",
                 "phone": "a phone number (+ and digits)"}  # fmt: skip
_LABEL = re.compile(r"^Step \d+ \([^)]*\): ")
_WHOLE_NUMBER = re.compile(r"^[+-]?\d+$")


def format_words(value: str) -> str:
    if value in _FORMAT_WORDS:
        return _FORMAT_WORDS[value]
    kind, _, region = value.partition(":")
    if kind in ("phone", "postcode") and region:
        return f"a {region} {'phone number' if kind == 'phone' else 'postcode'}"
    return value


def blank(kind: Kind) -> dict[str, Any]:
    """A new step of ``kind``: its defaults, a required choice on its first choice, one empty condition."""
    out: dict[str, Any] = {"step": kind.name}
    for f in kind.fields:
        if f.kind == "conditions":
            out[f.name] = [{"column": "", "is": "equals", "value": ""}]
        elif f.default is not None:
            out[f.name] = f.default
        elif f.kind == "choice" and f.required and f.choices:
            out[f.name] = f.choices[0]
    return out


def filled(kind: Kind, step: Mapping[str, Any]) -> dict[str, Any]:
    """A step as a list keeps it (its fields left out where they hold what leaving them out gives: a recipe's,
    a task's), with every field's value in it, as its widgets show them."""
    return {**{f.name: f.empty for f in kind.fields}, **step}


def is_empty(value: Any) -> bool:
    return value is None or (not isinstance(value, bool) and value in ("", [], {}))


def payload(kind: Kind, step: Mapping[str, Any]) -> dict[str, Any]:
    """The step as the task's parameter takes it: a field that holds what leaving it out gives is left out
    (a text field's "" is a value where its default is not: join with no separator), an empty list or
    column too; ``off`` only when it is off."""
    left_out = {f.name: f.empty for f in kind.fields}
    out = {
        k: v
        for k, v in step.items()
        if k != "off" and not (k in left_out and (v == left_out[k] or v is None or (is_empty(v) and v != "")))
    }
    if step.get("off"):
        out["off"] = True
    return out


def unfilled(kind: Kind, step: Mapping[str, Any], waiting: Sequence[str] = ()) -> list[str]:
    """What a step still needs filled in before it can run, in words (empty: nothing); the fields named in
    ``waiting`` are being filled in by the app (a reference file being prepared) and are not asked for."""
    out = [f"Fill in “{f.title}”." for f in kind.fields if f.required and f.kind != "conditions" and
           f.name not in waiting and is_empty(step.get(f.name))]  # fmt: skip
    for f in kind.fields:
        if f.kind == "conditions":
            conditions = step.get(f.name) or []
            out += [f"Choose the column of condition {i}." for i, c in enumerate(conditions, 1) if not c.get("column")]
    return out


def without_label(message: str) -> str:
    """A problem's words without the "Step 3 (Keep rows): " they start with (said by the step's own box)."""
    rest = _LABEL.sub("", message, count=1)
    return rest[:1].upper() + rest[1:]


# --- fields as text --------------------------------------------------------------------------------------


def lines(text: str) -> list[str]:
    """One value a line; empty lines left out."""
    return [line for line in text.splitlines() if line.strip()]


def number(text: str) -> int | str:
    """A number field: a whole number as a number (lengths must be), anything else as written."""
    text = text.strip()
    return int(text) if _WHOLE_NUMBER.match(text) else text


def _halves(line: str) -> tuple[str, str] | None:
    """``left = right`` → (left, right): one space either side of the first "=" belongs to it."""
    if "=" not in line:
        return None
    left, right = line.split("=", 1)
    return left.removesuffix(" "), right.removeprefix(" ")


def pairs(text: str) -> tuple[list[list[str]], list[str]]:
    """ "find = replace with" lines → the pairs, and what is wrong with the lines that are not one."""
    out, bad = [], []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        halves = _halves(line)
        if halves is None or not halves[0]:
            bad.append(f"Replacements, line {i}: write it as “find = replace with”.")
            continue
        out.append([halves[0], halves[1]])
    return out, bad


def pairs_text(value: Sequence[Sequence[str]]) -> str:
    return "\n".join(f"{find} = {put}" for find, put in value)


def renames(text: str) -> tuple[dict[str, str], list[str]]:
    """ "old name = new name" lines → the renames, and what is wrong with the lines that are not one."""
    out: dict[str, str] = {}
    bad = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        halves = _halves(line)
        old, new = (halves[0].strip(), halves[1].strip()) if halves else ("", "")
        if not old or not new:
            bad.append(f"Line {i}: write it as “old name = new name”.")
            continue
        out[old] = new
    return out, bad


def renames_text(value: Mapping[str, str]) -> str:
    return "\n".join(f"{old} = {new}" for old, new in value.items())


# --- what a step did, in words ----------------------------------------------------------------------------


def _some(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def these(rows: int) -> str:
    """The preview's rows: "these 10 rows", "this 1 row"."""
    return f"these {rows:,} rows" if rows != 1 else "this 1 row"


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
    return f"({shown})"


def effect(count: Count, before: Sequence[str], after: Sequence[str], rows: int, *, whole_file: bool,
           marked: int = 0, renaming: bool = False) -> str:  # fmt: skip
    """One step's effect on the preview's rows (``rows`` of them), in a sentence.

    ``before``/``after``: the columns around the step; ``marked``: the rows it gave a problem to;
    ``whole_file``: the step looks at the whole file, so only these rows' share of it is known here.
    """
    parts = []
    removed = count.rows_in - count.rows_out
    if removed:
        if removed == count.rows_in:
            parts.append(f"removes all {count.rows_in:,} rows" if removed != 1 else "removes the only row")
        else:
            of = these(rows) if count.rows_in == rows else f"the {count.rows_in:,} rows left"
            parts.append(f"removes {removed:,} of {of}")
    added, gone = [n for n in after if n not in before], [n for n in before if n not in after]
    if renaming and added:
        pairs_ = [f"{old} → {new}" for old, new in zip(gone, added, strict=False)]
        parts.append(f"renames {_some(len(added), 'column')} {_names(pairs_)}")
    else:
        parts += [f"adds {_some(len(added), 'column')} {_names(added)}"] if added else []
        parts += [f"removes {_some(len(gone), 'column')} {_names(gone)}"] if gone else []
    if not added and not gone and list(before) != list(after):
        parts.append("moves columns")
    if count.cells_changed:
        parts.append(f"changes {_some(count.cells_changed, 'cell')}")
    if marked:
        parts.append(f"gives {_some(marked, 'row')} a problem")
    said = (", ".join(parts[:-1]) + " and " + parts[-1]) if len(parts) > 1 else (parts[0] if parts else "")
    if whole_file:
        body = said or "changes nothing"
        return f"In {these(rows)}: {body}. The task applies it to the whole file."
    if not said:
        return "Changes nothing in these rows."
    return said[:1].upper() + said[1:] + "."


def marked(step: Mapping[str, Any], errors: Sequence[str]) -> int:
    """How many of the preview's rows (``errors``: its error column) carry a problem this step gives."""
    kind = step.get("step")
    if kind == "check":
        prefixes: tuple[str, ...] = (f"{step.get('column')}: ",)
        unless: tuple[str, ...] = ("not a date written ", "not a number written with ")
    elif kind in ("format_dates", "format_numbers"):
        words = "not a date written " if kind == "format_dates" else "not a number written with "
        prefixes, unless = tuple(f"{c}: {words}" for c in step.get("columns") or []), ()
    else:
        return 0

    def ours(part: str) -> bool:
        return part.startswith(prefixes) and not any(part.startswith(p + u) for p in prefixes for u in unless)

    return sum(1 for text in errors if text and any(ours(part) for part in text.split("; ")))
