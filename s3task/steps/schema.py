"""The step list as JSON Schema (2020-12): published in the API's OpenAPI document (``StepList``) and by
``s3task steps schema``, made from the same declarations the list is read by (:mod:`s3task.steps.kinds`)."""

from __future__ import annotations

from typing import Any

from .kinds import KINDS, TESTS
from .spec import MAX_ITEMS, MAX_STEPS, MAX_TEXT, Field, Kind

_TEXT = {"type": "string", "maxLength": MAX_TEXT}
_NAMES = {"type": "array", "items": {**_TEXT, "minLength": 1}, "maxItems": MAX_ITEMS}
_CONDITION = {
    "type": "object",
    "required": ["column", "is"],
    "additionalProperties": False,
    "properties": {
        "column": {**_TEXT, "minLength": 1},
        "is": {"enum": list(TESTS)},
        "value": {"type": ["string", "number"]},
        "values": {"type": "array", "items": _TEXT, "minItems": 1, "maxItems": MAX_ITEMS},
        "ignore_case": {"type": "boolean"},
    },
}
_FIELDS: dict[str, dict[str, Any]] = {
    "column": {**_TEXT, "minLength": 1},
    "columns": _NAMES,
    "text": _TEXT,
    "texts": {"type": "array", "items": _TEXT, "maxItems": MAX_ITEMS},
    "bool": {"type": "boolean"},
    "number": {"type": ["number", "string"]},
    "renames": {"type": "object", "additionalProperties": {**_TEXT, "minLength": 1}, "minProperties": 1},
    "pairs": {
        "type": "array",
        "maxItems": MAX_ITEMS,
        "items": {"type": "array", "prefixItems": [_TEXT, _TEXT], "minItems": 2, "maxItems": 2},
    },
    "conditions": {"type": "array", "items": _CONDITION, "minItems": 1, "maxItems": 100},
}


def _field(field: Field) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": list(field.choices)} if field.kind == "choice" else dict(_FIELDS[field.kind])
    schema["title"] = field.title
    if field.help:
        schema["description"] = field.help
    if field.default is not None:
        schema["default"] = field.default
    return schema


def _kind(kind: Kind) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "step": {"const": kind.name},
        "off": {"type": "boolean", "description": "Kept in the list, not run."},
        "note": {**_TEXT, "description": "Free text for whoever keeps the list."},
    }
    properties.update({f.name: _field(f) for f in kind.fields})
    return {
        "title": kind.title,
        "description": kind.help,
        "type": "object",
        "required": ["step", *(f.name for f in kind.fields if f.required)],
        "additionalProperties": False,
        "properties": properties,
    }


def step_list_schema() -> dict[str, Any]:
    """The JSON Schema of a step list: an array of steps, each one of the kinds."""
    return {
        "title": "StepList",
        "description": "The steps and checks of a 'steps' task (\"Prepare the table\"), run in order (docs/STEPS.md).",
        "type": "array",
        "maxItems": MAX_STEPS,
        "items": {"oneOf": [_kind(k) for k in KINDS.values()]},
    }
