"""The app's pages, defined once: app.py navigates with them, and so does the v1 fallback in context.

Imports nothing else of ``ui``: :mod:`ui.context` imports this module, and tells it who the user is
through :data:`OPERATOR` when it puts the run's context.
"""

from __future__ import annotations

from typing import Literal

import streamlit as st
from streamlit.navigation.page import Page

# url_path = the file's name, so a page's id (a hash of its URL path) is the
# same whether Streamlit finds the file in pages/ or through these definitions.
TASKS = "pages/tasks.py"
NEW_TASK = "pages/new_task.py"
TASK = "pages/task.py"
WORKERS = "pages/workers.py"
INBOXES = "pages/inboxes.py"
#: Session key: whether this run's user is an operator (set by ``ui.context.put``; unset: not known yet).
OPERATOR = "_s3task_operator"


def pages() -> list[Page]:
    # Workers is in the menu for operators only. It is registered for everyone, so that anyone else
    # who opens its URL gets the page's own plain refusal rather than being sent elsewhere unexplained.
    # app.py puts the context (and so this key) before it navigates; the v1 fallback has none yet.
    workers: Literal["visible", "hidden"] = "visible" if st.session_state.get(OPERATOR) is True else "hidden"
    # No ":material/…:" page icons: Streamlit makes a page's icon the tab's icon when the page opens, and
    # fetches a material one from fonts.gstatic.com; the app must work on a network with no internet
    # (tests/browser/test_browser.py fails on any request that leaves 127.0.0.1).
    return [
        st.Page(TASKS, title="Tasks", url_path="tasks", default=True),
        st.Page(NEW_TASK, title="New task", url_path="new_task"),
        st.Page(TASK, title="Task", url_path="task", visibility="hidden"),
        st.Page(INBOXES, title="Inboxes", url_path="inboxes"),
        st.Page(WORKERS, title="Workers", url_path="workers", visibility=workers),
    ]
