"""The New task form across the page's reruns: which form this is (its number, its session keys), what
it was filled in from (a task: ``new_task?from=<id>``; a recipe chosen on it), and how it ends (the
next form starts empty, and the task's page opens). The form's pure logic is ``ui/task_form.py``."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import streamlit as st

from s3task import handlers
from s3task.errors import S3TaskError

from . import format as fmt
from . import task_form as tf
from .context import Context
from .direct import Chosen


@dataclass(frozen=True)
class NewTaskForm:
    """One New task form: the page's context, its session keys and number, and what filled it in."""

    ctx: Context
    keys: tf.FormKeys
    number: int
    prefilled: tf.Prefill | None
    recipe_fill: tf.Prefill | None

    @property
    def state(self) -> Any:
        return st.session_state

    @classmethod
    def start(cls, ctx: Context) -> NewTaskForm:
        """This run's form, filled in from the task the page was opened from, then from a recipe chosen on it
        (each says so in a line)."""
        state = st.session_state
        number = state.setdefault(tf.FORM_NUMBER, 0)
        # A form filled in with a recipe has keys of its own for what the recipe sets (ui/task_form.py, FormKeys).
        recipe_fill: tf.Prefill | None = state.get(tf.FormKeys(number).recipe)
        keys = tf.FormKeys(number, recipe_fill.source_id if recipe_fill else "")
        source_id = str(st.query_params["from"]) if "from" in st.query_params else None
        if source_id is not None:
            st.info(fmt.plain(_prefill(ctx, keys, source_id).note), icon=":material/info:")
        # Kept for the form while the page is the one opened from that task; New task opened any other way
        # starts empty (Streamlit has dropped the widgets' own values when the user left the page).
        prefilled = tf.in_force(state.get(keys.prefilled), source_id)
        if prefilled is None:
            state.pop(keys.prefilled, None)
        if recipe_fill is not None:
            st.info(fmt.plain(recipe_fill.note), icon=":material/menu_book:")
        return cls(ctx, keys, number, recipe_fill or prefilled, recipe_fill)  # a recipe chosen goes on top

    def name_from(self, file_name: str) -> None:
        """The task's name from the file's, unless the person has typed one."""
        name = tf.name_from_file(self.state.get(self.keys.name, ""), file_name)
        if name is not None:
            self.state[self.keys.name] = name

    def name_from_file(self) -> None:
        """On a file chosen in Streamlit's uploader (the fallback)."""
        chosen = self.state.get(self.keys.file)
        if chosen is not None:
            self.name_from(chosen.name)

    def name_from_chosen(self) -> None:
        """On a file chosen in the browser's own picker (the direct upload)."""
        chosen = Chosen.from_state((self.state.get(self.keys.upload) or {}).get("file"))
        if chosen is not None:
            self.name_from(chosen.name)

    def note(self, kind: str, text: str) -> None:
        """A line for the next run of the page ("error" or "info")."""
        self.state[self.keys.note] = (kind, text)

    def show_note(self) -> None:
        if self.keys.note in self.state:
            kind, text = self.state.pop(self.keys.note)
            if kind == "error":
                st.error(fmt.plain(text), icon=":material/error:")
            else:
                st.info(fmt.plain(text), icon=":material/info:")

    def done(self, task_id: str) -> None:
        """The task is made: the next form starts empty (this one's preview is not needed again); its page opens."""
        self.state[tf.FORM_NUMBER] = self.number + 1
        self.state.pop(self.keys.inspected, None)
        st.switch_page("pages/task.py", query_params={"id": task_id})


def _prefill(ctx: Context, keys: tf.FormKeys, source_id: str) -> tf.Prefill:
    """The form filled in from the task ``source_id``, once per form."""
    state = st.session_state
    done: tf.Prefill | None = state.get(keys.prefilled)
    if done is not None and done.source_id == source_id:
        return done
    params = None
    try:
        source = ctx.service.get(ctx.actor, source_id)  # the service's rules for who may see a task
    except S3TaskError:
        source = None
    if source is not None:
        with contextlib.suppress(S3TaskError):  # its step list gone or changed: the form starts with none
            params = ctx.service.steps.parameters(source)  # its step list too
    filled = tf.prefill(keys, source_id, source, handlers.all_types(), params)
    for key in (keys.name, keys.type, *filled.params):  # this task's values, not an earlier form's
        state.pop(key, None)
    state[keys.prefilled] = filled
    return filled
