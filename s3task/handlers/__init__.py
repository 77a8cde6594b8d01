"""Task types: what a worker does to the rows.

A task type is a :class:`TaskType` subclass registered by name. It declares a
title, a description for non-technical users and its parameters, so a UI can
render a form. For each attempt the worker makes a fresh instance with the
task's parameters and feeds it the input as pandas DataFrames (every cell a
string; a header-only file gives one empty frame with the columns). ``process``
returns output rows for a chunk (or None: nothing yet), with an ``error``
column that is empty for good rows; ``finish`` may return final rows. Every
frame returned must have the same columns; values are written as text
(booleans as true/false, missing values as empty cells). Row errors are
data; raising :class:`~s3task.errors.InvalidInput` fails the task for good
(bad input), any other exception fails the attempt (retried). A task type
whose output has no error column sets ``error_column = None``.

Extra task types load from a module named with ``--handlers``: importing it
is enough if it calls :func:`register`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ..errors import InvalidInput, UnknownTaskType
from .columns import Need

if TYPE_CHECKING:  # only in annotations: task types are read (names, parameters) without pandas
    import pandas as pd

ERROR_COLUMN = "error"

#: What a parameter holds; the app renders each as its own kind of input.
ParamType = Literal["str", "int", "float", "bool", "choice", "steps"]


@dataclass(frozen=True)
class Param:
    """One declared parameter of a task type."""

    name: str
    type: ParamType = "str"
    default: Any = None
    help: str = ""
    choices: tuple[str, ...] = ()
    required: bool = False

    def coerce(self, value: Any) -> Any:
        if value is None or value == "":
            if self.required:
                raise InvalidInput(f"parameter {self.name!r} is required")
            return self.default
        try:
            if self.type == "int":
                return int(value)
            if self.type == "float":
                return float(value)
            if self.type == "bool":
                if isinstance(value, bool):
                    return value
                text = str(value).strip().lower()
                if text not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(value)
                return text in ("1", "true", "yes", "on")
        except (TypeError, ValueError) as e:
            raise InvalidInput(
                f"parameter {self.name!r} must be {_KIND_WORDS.get(self.type, self.type)}, not {value!r}"
            ) from e
        if self.type == "steps":
            return value  # a step list: its task type reads and checks it (s3task.handlers.steps)
        text = str(value)
        if self.type == "choice" and text not in self.choices:
            raise InvalidInput(f"parameter {self.name!r} must be one of {', '.join(self.choices)}")
        return text


#: What a parameter of each type must be, in words (a refusal says it).
_KIND_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false"}


class TaskType:
    """Base class of task types. Subclasses set the class attributes and ``process``."""

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    #: Seconds an attempt may run before it is killed (None = no limit).
    max_runtime: ClassVar[float | None] = None
    #: The output column that marks row errors (empty = fine); None when the output has none.
    error_column: ClassVar[str | None] = ERROR_COLUMN
    #: What the output's rows are: ``"rows"`` (rows of the input, changed or not) or ``"summary"``
    #: (rows that describe the input, e.g. one per column). Decides the counts shown (s3task.counts).
    output_rows: ClassVar[Literal["rows", "summary"]] = "rows"
    #: Whether the output may have fewer rows than the input (rows left out on purpose, e.g. duplicates).
    leaves_out_rows: ClassVar[bool] = False
    #: The columns it needs from the file (:mod:`s3task.handlers.columns`): found at submit, the file
    #: refused without them, the column found written into the parameter each names.
    needs: ClassVar[tuple[Need, ...]] = ()
    #: Whether ``stream`` takes the input as Arrow tables (all columns text) instead of ``process`` taking
    #: pandas frames: ``stream(tables)`` yields the output tables (s3task.handlers.steps).
    takes_arrow: ClassVar[bool] = False
    #: Whether the worker keeps, beside the output, which input row each output row came from
    #: (``output-attempt-N.rows``): then the errors workbook and the combined result work although rows
    #: are left out. Such a type's ``stream`` yields tables whose last column is those row numbers (int64).
    numbers_rows: ClassVar[bool] = False
    #: Whether the type reads its input and writes its output itself (``run_file``), the engine's reader and
    #: writer left out: a comparison, whose input names the two results it reads (s3task.handlers.compare).
    reads_itself: ClassVar[bool] = False
    #: Whether its tasks are made from other tasks' results, not from a file: the New task page leaves it out.
    made_from_results: ClassVar[bool] = False

    def __init__(self, params: Mapping[str, Any]) -> None:
        #: The values of this task's parameters (``params`` declares them).
        self.values: dict[str, Any] = dict(params)

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame | None:
        """The output rows for one chunk of input rows (None: nothing to write for this chunk)."""
        raise NotImplementedError

    def finish(self) -> pd.DataFrame | None:
        return None

    def run_file(self, source: Any, sink: Any, on_progress: Any) -> Any:
        """A type that ``reads_itself``: the whole attempt, ``source`` to ``sink``; returns the final Progress."""
        raise NotImplementedError

    def step_counts(self) -> list[dict[str, int]]:
        """Per step of a step list, once the input is done: its rows in and out and cells changed (else [])."""
        return []

    @classmethod
    def check_header(cls, params: Mapping[str, Any], names: list[str]) -> None:
        """Refuse (InvalidInput) a file whose header the parameters cannot work with; called before queueing."""

    @classmethod
    def references(cls, params: Mapping[str, Any]) -> list[tuple[str, str]]:
        """Other tasks whose results the task reads, as (what reads it, task id): checked when it is made."""
        return []

    @classmethod
    def validate(cls, payload: Mapping[str, Any] | None) -> dict[str, Any]:
        """Coerce ``payload`` to the declared parameters; unknown names are refused."""
        payload = dict(payload or {})
        known = {p.name for p in cls.params}
        unknown = sorted(set(payload) - known)
        if unknown:
            raise InvalidInput(f"the type {cls.name} ({cls.title}) has no parameter {', '.join(map(repr, unknown))}")
        return {p.name: p.coerce(payload.get(p.name)) for p in cls.params}


_REGISTRY: dict[str, type[TaskType]] = {}


def register(task_type: type[TaskType]) -> type[TaskType]:
    """Register a task type (usable as a class decorator)."""
    _REGISTRY[task_type.name] = task_type
    return task_type


def get(name: str) -> type[TaskType]:
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError as e:
        known = ", ".join(f"{n} ({t.title})" for n, t in sorted(_REGISTRY.items()))
        raise UnknownTaskType(f"no task type named {name!r}; the types are {known}") from e


def title_of(name: str) -> str:
    """The title of the task type ``name`` (what staff read), or the name where this process does not know it."""
    try:
        return get(name).title
    except UnknownTaskType:
        return name


def all_types() -> list[type[TaskType]]:
    _load_builtins()
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def load_module(module: str) -> None:
    """Import a module that registers more task types."""
    try:
        importlib.import_module(module)
    except Exception as e:  # not only ImportError: a module that fails while it runs says so in one line
        raise UnknownTaskType(f"cannot import handler module {module!r}: {type(e).__name__}: {e}") from e


def _load_builtins() -> None:
    from . import builtin  # noqa: F401  (registers on import)
