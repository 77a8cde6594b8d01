"""What every page needs for this run: settings, who the user is, the task service.

``app.py`` builds it once per run (before the page runs) and pages read it
with :func:`get`, so pages never repeat identity or store setup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

import streamlit as st

from s3task.config import Settings
from s3task.tasks import Actor, TaskService

from . import nav
from .appsettings import AppSettings
from .identity import Identity
from .services import WorkerStatus

_KEY = "_s3task_context"


@dataclass(frozen=True)
class Context:
    settings: Settings
    app: AppSettings
    identity: Identity
    service: TaskService
    worker: WorkerStatus

    @property
    def actor(self) -> Actor:
        assert self.identity.actor is not None, "pages run only for an identified user"
        return self.identity.actor


def put(context: Context) -> None:
    st.session_state[_KEY] = context
    st.session_state[nav.OPERATOR] = context.identity.actor is not None and context.actor.operator


def get() -> Context:
    context = st.session_state.get(_KEY)
    if not isinstance(context, Context):
        _start_over_through_app()
    return context


def _start_over_through_app() -> NoReturn:
    """Go through app.py when a page file was started without it.

    Until some session has called ``st.navigation``, Streamlit treats a
    ``pages/`` folder the old (v1) way: the first request of a fresh server
    that goes straight to a page URL (a shared ``/task?id=…`` link) runs that
    page file without app.py, so there is no user and no store. Calling
    ``st.navigation`` with the app's pages switches the process to app-defined
    navigation and resolves the requested URL to one of them; switching to it
    then runs app.py and that page, with the same query. The server built by ``streamlit run app.py`` switches
    the process to app-defined navigation before it answers (app.py's lifespan), so this is the way back for
    whatever runs a page without that: a Streamlit that routes otherwise, a server started some other way.
    """
    requested = st.navigation(nav.pages(), position="hidden")
    st.switch_page(requested, query_params=st.query_params.to_dict())
    raise AssertionError("st.switch_page returns only by raising")  # pragma: no cover
