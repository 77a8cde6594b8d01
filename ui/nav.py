"""The app's pages, defined once: app.py navigates with them, and so does the v1 fallback in context."""

from __future__ import annotations

import streamlit as st
from streamlit.navigation.page import Page

# url_path = the file's name, so a page's id (a hash of its URL path) is the
# same whether Streamlit finds the file in pages/ or through these definitions.
TASKS = "pages/tasks.py"
NEW_TASK = "pages/new_task.py"
TASK = "pages/task.py"


def pages() -> list[Page]:
    return [
        st.Page(TASKS, title="Tasks", icon=":material/list_alt:", url_path="tasks", default=True),
        st.Page(NEW_TASK, title="New task", icon=":material/upload_file:", url_path="new_task"),
        st.Page(TASK, title="Task", icon=":material/description:", url_path="task", visibility="hidden"),
    ]
