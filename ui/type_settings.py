"""The chosen task type's settings on the New task page, one widget a declared parameter: a column the
type needs (``needs``) is a box of the file's columns on the one found by its header or values; the rest
by their type. Each widget starts on its own value, else the one filled in (from a task or a recipe),
else the declared default — given to the widget, never written into its key (see ui/task_form.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from s3task.handlers import Param, TaskType
from s3task.handlers.columns import Need

from . import format as fmt
from . import step_builder
from . import task_form as tf
from .context import Context
from .csvfile import Inspection


@dataclass
class ChosenSettings:
    """What the settings say: the task's parameters, and the needed columns no column of the file is chosen for."""

    payload: dict[str, Any] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)
    #: What else the settings need before Submit, as words after "To submit, add" (a step list's fixes).
    wanting: list[str] = field(default_factory=list)


def settings(
    task_type: type[TaskType],
    keys: tf.FormKeys,
    prefilled: tf.Prefill | None,
    inspection: Inspection | None,
    file_key: str,
    ctx: Context,
) -> ChosenSettings:
    """The widgets of ``task_type``'s parameters, in a box headed with its title (nothing for a type without).
    A step list (a parameter of type "steps") is the step builder, whose steps have boxes of their own."""
    got = ChosenSettings()
    if not task_type.params:
        return got
    with st.container(border=not any(p.type == "steps" for p in task_type.params)):
        st.caption(f"Settings for “{fmt.plain(task_type.title)}”")
        for param in task_type.params:
            if param.type == "steps":
                key = keys.param(task_type.name, param.name)
                start = (prefilled.params if prefilled else {}).get(key, param.default)
                built = step_builder.builder(ctx, key, start, inspection, file_key)
                got.payload[param.name], got.wanting = built.steps, got.wanting + built.wanting
                continue
            got.payload[param.name] = _widget(param, task_type, keys, prefilled, inspection, file_key, got)
    return got


def _widget(
    param: Param,
    task_type: type[TaskType],
    keys: tf.FormKeys,
    prefilled: tf.Prefill | None,
    inspection: Inspection | None,
    file_key: str,
    got: ChosenSettings,
) -> Any:
    label = param.name.replace("_", " ").capitalize() + (" *" if param.required else "")
    key = keys.param(task_type.name, param.name)
    help_ = param.help or None
    start = st.session_state.get(key, (prefilled.params if prefilled else {}).get(key, param.default))
    needs = {need.param: need for need in task_type.needs}
    if param.name in needs and inspection is not None and inspection.ok and inspection.columns:
        box = keys.column(task_type.name, param.name, file_key)
        value = _column(needs[param.name], label, str(start or ""), inspection, box)
        if value == tf.NO_COLUMN:
            got.unmatched.append(needs[param.name].label)
        return value
    if param.type == "bool":
        return st.checkbox(label, value=bool(start), help=help_, key=key)
    if param.type == "choice":
        options = list(param.choices)
        return st.selectbox(label, options, index=options.index(start) if start in options else 0, help=help_, key=key)
    if param.type == "int":
        return st.number_input(label, value=start, step=1, help=help_, key=key)
    if param.type == "float":
        return st.number_input(label, value=start, help=help_, key=key, format="%g")
    return st.text_input(label, value=start or "", help=help_, key=key)


def _column(need: Need, label: str, start: str, inspection: Inspection, box: str) -> str:
    """A box of the file's columns for a column the task type needs, on the one matched (or chosen)."""
    choice = tf.column_choice(need, inspection, start)
    value: str = st.selectbox(
        label,
        choice.options,
        index=choice.index,
        format_func=lambda c: c or "— choose a column —",
        help=f"The column of this file that holds the {need.label}: found by its header or its values.",
        key=box,
    )
    picked = value != choice.options[choice.index]
    st.caption(fmt.plain(f"{need.label.capitalize()}: column “{value}” (as chosen)." if picked else choice.line))
    return value
