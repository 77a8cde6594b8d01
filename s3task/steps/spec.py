"""What a step list is: kinds of step, their fields, steps, lists (read from JSON by :mod:`.reading`).

A step list is a JSON array of objects. Each object names its kind in ``"step"`` and carries that
kind's fields; ``"off": true`` keeps a step in the list without running it, and ``"note"`` is free
text for the person who keeps the list. Every kind is declared once, here and in
:mod:`s3task.steps.kinds`: the check of a list, the published JSON Schema, the New task page's
form and the CLI's help all read the same declaration, so they cannot drift apart.

"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import InvalidInput

#: At most this many steps in one list, and this many bytes of JSON (a list is kept in the task's parameters).
MAX_STEPS = 200
MAX_LIST_BYTES = 48 * 1024
#: A column name, a value, a pattern: at most this many characters.
MAX_TEXT = 1000
#: A list of values ("is one of", replacements): at most this many.
MAX_ITEMS = 5000

FieldKind = Literal["column", "columns", "text", "texts", "bool", "choice", "number", "renames", "pairs", "conditions"]


class StepError(InvalidInput):
    """A step list that cannot run: the message names the step and says what is wrong (``step``: its number)."""

    def __init__(self, message: str | None = None, step: int | None = None) -> None:
        super().__init__(message)
        self.step = step


@dataclass(frozen=True)
class Field:
    """One field of a kind of step."""

    name: str
    kind: FieldKind
    title: str
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] = ()
    help: str = ""

    @property
    def empty(self) -> Any:
        """The value when the field is left out: its default, else an empty one of its kind."""
        if self.default is not None:
            return self.default
        return {"columns": [], "texts": [], "pairs": [], "conditions": [], "renames": {}}.get(self.kind, "")


@dataclass(frozen=True)
class Kind:
    """A kind of step: its name in JSON, its title in the menu, what it does, its fields."""

    name: str
    title: str
    help: str
    fields: tuple[Field, ...]
    #: Needs the whole file (remove duplicates, unique, lookup): runs in DuckDB on the worker.
    whole_file: bool = False
    #: A check: it adds words to the error column and never changes a cell.
    check: bool = False


@dataclass(frozen=True)
class Step:
    """One step of a list, read and checked: its kind and the values of its fields."""

    number: int  # 1 = the first in the list, counting steps that are off
    kind: Kind
    values: Mapping[str, Any]
    off: bool = False
    note: str = ""

    @property
    def label(self) -> str:
        return f"Step {self.number} ({self.kind.title})"

    def fail(self, problem: str) -> StepError:
        return StepError(f"{self.label}: {problem}", self.number)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def to_json(self) -> dict[str, Any]:
        """The step as JSON, without the fields that hold what leaving them out gives (read back, the same)."""
        empty = {f.name: f.empty for f in self.kind.fields}
        kept = {k: v for k, v in self.values.items() if k not in empty or v != empty[k]}
        out: dict[str, Any] = {"step": self.kind.name, **kept}
        if self.off:
            out["off"] = True
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class StepList:
    steps: tuple[Step, ...] = field(default_factory=tuple)

    @property
    def active(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if not s.off)

    def to_json(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.steps]
