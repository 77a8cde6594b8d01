"""Inboxes: each of your recipes' inboxes, where another system drops files that become tasks
(docs/INBOXES.md). Layout only: the parts are ui/inbox_view.py's."""

from __future__ import annotations

import streamlit as st

from s3task.errors import S3TaskError
from ui import context, inbox_view
from ui import format as fmt

ctx = context.get()
st.title("Inboxes")
st.caption(
    "Every recipe has an inbox: a folder in the task store. Each file dropped there becomes a task with the "
    "recipe's settings, made as the recipe's owner, and leaves the inbox. A worker looks every "
    f"{fmt.duration(ctx.settings.inbox_interval)}."
)
try:
    inboxes = ctx.service.inboxes.list(ctx.actor)
except S3TaskError as e:
    st.error("The inboxes could not be read: " + fmt.plain(e), icon=":material/error:")
    st.stop()
if not inboxes:
    st.info(
        "No recipes yet, so no inboxes. On a task's page, *Keep these settings as a recipe* makes one.",
        icon=":material/inbox:",
    )
for inbox in inboxes:
    inbox_view.show(ctx, inbox)
