"""The New task page's offer of a recipe for the chosen file: "Looks like *CRM monthly* — use that recipe?"
when the file's header is a recipe's (looked up once per file), and the form filled in from it on a click."""

from __future__ import annotations

import streamlit as st

from s3task import handlers
from s3task.errors import S3TaskError
from s3task.tasks.recipes import Recipe

from . import format as fmt
from . import task_form as tf
from .csvfile import Inspection
from .new_task_form import NewTaskForm


def offer(page: NewTaskForm, inspection: Inspection, file_key: str) -> None:
    """The offer, where this user has a recipe for the file's header (recipes are a help: none when the store
    cannot list them now)."""
    ctx = page.ctx

    def lookup() -> Recipe | None:
        try:
            return ctx.service.recipes.matching(ctx.actor, inspection.columns)
        except S3TaskError:
            return None

    offered = tf.remembered(page.state, page.keys.recipe_offer, (file_key, tuple(inspection.columns)), lookup)
    if offered is None:
        return
    with st.container(border=True):
        st.markdown(f"Looks like **{fmt.plain(offered.name)}** — use that recipe?")
        st.caption(
            fmt.plain(f"{whose(offered, ctx.actor.name)}: {handlers.title_of(offered.task_type)}, read as ")
            + fmt.plain(tf.describe_format(offered.input_format))
        )
        st.button("Use this recipe", icon=":material/menu_book:", on_click=_use, args=(page, offered))


def whose(recipe: Recipe, user: str) -> str:
    """Whose recipe it is, in words: "Your recipe", "Shared recipe (saved by boss)", "ann's recipe"."""
    if recipe.shared:
        return f"Shared recipe (saved by {recipe.owner})" if recipe.owner else "Shared recipe"
    return "Your recipe" if recipe.owner == user else f"{recipe.owner}'s recipe"


def _use(page: NewTaskForm, recipe: Recipe) -> None:
    """Fill the form in from ``recipe``: the widgets it sets get keys of their own, drawn on its values."""
    page.state[page.keys.recipe] = tf.from_recipe(tf.recipe_keys(page.number, recipe), recipe)
