"""On a task's page: keep its settings as a recipe, for the file that comes back next month.

A small form under the task: a name, and for an operator "share with everyone". It saves the
task's type, settings (the columns it was given among them), input format and its file's header
(s3task.tasks.recipes); the New task page then offers the recipe for a file with the same header.
"""

from __future__ import annotations

import streamlit as st

from s3task.errors import S3TaskError
from s3task.record import TaskRecord

from . import format as fmt
from .context import Context


def offer(ctx: Context, record: TaskRecord) -> None:
    """The form, for a submitted task the person may act on (only then are its format and columns settled)."""
    if record.input_etag is None or not ctx.service.may_act(ctx.actor, record) or record.task_type == "compare":
        return  # a comparison is made from two results, not a file that comes back
    _form(ctx, record)


@st.fragment
def _form(ctx: Context, record: TaskRecord) -> None:
    """A fragment of its own: saving reruns only the form, not the whole page. A queued or running task's page
    also re-runs its live part every few seconds; once, beside two CPU hogs, a browser test saw this section
    gone after a save on such a page, with neither the form nor its answer shown."""
    with st.expander("Keep these settings as a recipe", icon=":material/menu_book:"):
        st.caption(
            "A recipe keeps this task's type, settings and how its file is read. When you upload a file with "
            "the same columns, the New task page offers it."
        )
        with st.form(f"recipe_{record.task_id}", border=False):
            name = st.text_input("Recipe name", placeholder="For example: CRM monthly export", max_chars=80)
            shared = st.checkbox("Share with everyone") if ctx.actor.operator else False
            replace = st.checkbox("Replace a recipe of this name")
            saved = st.form_submit_button("Save recipe", icon=":material/save:")
        if saved:
            try:
                recipe = ctx.service.recipes.save(ctx.actor, name, record.task_id, shared=shared, replace=replace)
            except S3TaskError as e:
                st.error("The recipe was not saved: " + fmt.plain(e), icon=":material/error:")
            else:
                st.success(f"Saved the recipe “{fmt.plain(recipe.name)}”.", icon=":material/check:")
