"""Reading a step list from JSON: each step's kind and fields checked, a problem in plain words.

A problem names the step by its number (1 = the first) and its title, in words a person who built
the list in the browser understands: "Step 3 (Keep rows): Conditions (conditions) is required".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .kinds import KINDS
from .rows import read_condition
from .spec import MAX_ITEMS, MAX_LIST_BYTES, MAX_STEPS, MAX_TEXT, Field, Kind, Step, StepError, StepList


def all_kinds() -> dict[str, Kind]:
    """Every kind of step, by its name in JSON."""
    return KINDS


def parse(raw: Any) -> StepList:
    """Read a step list from JSON (text, bytes, or the parsed value): a :class:`StepError` if it is not one."""
    if isinstance(raw, bytes | str):
        if len(raw) > MAX_LIST_BYTES:
            raise StepError(f"the step list is {len(raw):,} bytes; at most {MAX_LIST_BYTES // 1024} KiB")
        try:
            raw = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise StepError(f"the step list is not valid JSON: {e}") from e
    if isinstance(raw, Mapping) and "steps" in raw:
        raw = raw["steps"]  # {"steps": [...]}: the form the task's parameters and a recipe keep
    if not isinstance(raw, list):
        raise StepError('a step list is a JSON array of steps, e.g. [{"step": "trim", "columns": []}]')
    if len(raw) > MAX_STEPS:
        raise StepError(f"the list has {len(raw)} steps; at most {MAX_STEPS}")
    if len(json.dumps(raw, ensure_ascii=False).encode()) > MAX_LIST_BYTES:
        raise StepError(f"the step list takes more than {MAX_LIST_BYTES // 1024} KiB")
    known = all_kinds()
    steps = []
    for number, item in enumerate(raw, 1):
        if not isinstance(item, Mapping):
            raise StepError(f'Step {number}: a step is a JSON object with a "step" field')
        name = item.get("step")
        if name not in known:
            names = ", ".join(sorted(known))
            raise StepError(f"Step {number}: there is no step {name!r} (the steps are: {names})")
        steps.append(_read_step(number, known[name], item))
    return StepList(tuple(steps))


def _read_step(number: int, kind: Kind, item: Mapping[str, Any]) -> Step:
    label = f"Step {number} ({kind.title})"
    allowed = {f.name for f in kind.fields} | {"step", "off", "note"}
    unknown = sorted(set(item) - allowed)
    if unknown:
        fields = ", ".join(f.name for f in kind.fields) or "none"
        raise StepError(f"{label}: it has no field {', '.join(map(repr, unknown))} (its fields: {fields})")
    off = item.get("off", False)
    if not isinstance(off, bool):
        raise StepError(f'{label}: "off" is true or false')
    note = item.get("note", "")
    if not isinstance(note, str) or len(note) > MAX_TEXT:
        raise StepError(f'{label}: "note" is text of at most {MAX_TEXT} characters')
    values = {f.name: _read_field(label, f, item.get(f.name)) for f in kind.fields}
    return Step(number, kind, values, off, note)


def _read_field(label: str, spec: Field, value: Any) -> Any:
    where = f"{label}: {spec.title} ({spec.name})"
    # "" is a text field's value (join with no separator); for every other kind it means left empty.
    if value is None or value == [] or value == {} or (value == "" and spec.kind != "text"):
        if spec.required:
            raise StepError(f"{where} is required")
        return _empty(spec)
    reader = _READERS[spec.kind]
    return reader(where, spec, value)


def _empty(spec: Field) -> Any:
    return spec.empty


def _text(where: str, value: Any, *, empty_ok: bool = True) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise StepError(f"{where} is text, not {type(value).__name__}")
    text = value if isinstance(value, str) else json.dumps(value)
    if len(text) > MAX_TEXT:
        raise StepError(f"{where} is longer than {MAX_TEXT} characters")
    if not empty_ok and not text:
        raise StepError(f"{where} is empty")
    return text


def _texts(where: str, value: Any, *, empty_ok: bool = True) -> list[str]:
    if not isinstance(value, list):
        raise StepError(f"{where} is a list")
    if len(value) > MAX_ITEMS:
        raise StepError(f"{where} has {len(value):,} items; at most {MAX_ITEMS:,}")
    return [_text(f"{where}, item {i}", v, empty_ok=empty_ok) for i, v in enumerate(value, 1)]


def _column(where: str, spec: Field, value: Any) -> str:
    return _text(where, value, empty_ok=False)


def _columns(where: str, spec: Field, value: Any) -> list[str]:
    names = _texts(where, value, empty_ok=False)
    seen = set()
    for name in names:
        if name in seen:
            raise StepError(f"{where} names the column {name!r} twice")
        seen.add(name)
    return names


def _bool(where: str, spec: Field, value: Any) -> bool:
    if not isinstance(value, bool):
        raise StepError(f"{where} is true or false")
    return value


def _choice(where: str, spec: Field, value: Any) -> str:
    if value not in spec.choices:
        raise StepError(f"{where} is one of {', '.join(spec.choices)}; not {value!r}")
    return str(value)


def _number(where: str, spec: Field, value: Any) -> float | int | str:
    if isinstance(value, bool):
        raise StepError(f"{where} is a number")
    if isinstance(value, int | float):
        return value
    text = _text(where, value, empty_ok=False)
    return text  # a number or a date written as text; the kind's own check reads it


def _renames(where: str, spec: Field, value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not value:
        raise StepError(f'{where} is an object of old name to new name, e.g. {{"Cust No": "customer_id"}}')
    if len(value) > MAX_ITEMS:
        raise StepError(f"{where} has {len(value):,} names; at most {MAX_ITEMS:,}")
    return {_text(where, k, empty_ok=False): _text(where, v, empty_ok=False) for k, v in value.items()}


def _pairs(where: str, spec: Field, value: Any) -> list[list[str]]:
    if not isinstance(value, list):
        raise StepError(f"{where} is a list of [find, replace with] pairs")
    if len(value) > MAX_ITEMS:
        raise StepError(f"{where} has {len(value):,} pairs; at most {MAX_ITEMS:,}")
    out = []
    for i, pair in enumerate(value, 1):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise StepError(f"{where}, item {i} is a pair [find, replace with]")
        out.append([_text(f"{where}, item {i}", pair[0], empty_ok=False), _text(f"{where}, item {i}", pair[1])])
    return out


def _conditions(where: str, spec: Field, value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        example = '[{"column": "Region", "is": "equals", "value": "North"}]'
        raise StepError(f"{where} is a list of conditions, e.g. {example}")
    if len(value) > 100:
        raise StepError(f"{where} has {len(value)} conditions; at most 100")
    return [read_condition(f"{where}, condition {i}", c) for i, c in enumerate(value, 1)]


_READERS: dict[str, Any] = {
    "column": _column,
    "columns": _columns,
    "text": lambda where, spec, v: _text(where, v),
    "texts": lambda where, spec, v: _texts(where, v),
    "bool": _bool,
    "choice": _choice,
    "number": _number,
    "renames": _renames,
    "pairs": _pairs,
    "conditions": _conditions,
}


def as_text(steps: StepList | Sequence[Mapping[str, Any]]) -> str:
    """The list as the JSON a person keeps in a file (one step a line)."""
    items = steps.to_json() if isinstance(steps, StepList) else list(steps)
    return "[\n" + ",\n".join("  " + json.dumps(s, ensure_ascii=False) for s in items) + "\n]\n"
