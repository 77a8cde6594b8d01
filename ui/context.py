"""What every page needs for this run: settings, who the user is, the task service.

``app.py`` builds it once per run (before the page runs) and pages read it
with :func:`get`, so pages never repeat identity or store setup.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from s3task.config import Settings
from s3task.tasks import Actor, TaskService

from .appsettings import AppSettings
from .identity import Identity
from .services import Worker

_KEY = "_s3task_context"


@dataclass(frozen=True)
class Context:
    settings: Settings
    app: AppSettings
    identity: Identity
    service: TaskService
    worker: Worker

    @property
    def actor(self) -> Actor:
        assert self.identity.actor is not None, "pages run only for an identified user"
        return self.identity.actor


def put(context: Context) -> None:
    st.session_state[_KEY] = context


def get() -> Context:
    context = st.session_state.get(_KEY)
    if context is None:  # a page file was run on its own, not through app.py
        st.error("Open the app through app.py (./run.sh), not a page file directly.")
        st.stop()
    return context
