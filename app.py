"""s3task in the browser: ``streamlit run app.py`` (or ``./run.sh``).

Sets up the page, works out who the user is, opens the store from the settings
(``S3TASK_*``; a local ``./s3task-data`` directory by default), starts the
embedded worker unless ``S3TASK_EMBEDDED_WORKER=0``, and hands over to the
page the user is on. Pages live in ``pages/``; Streamlit-side helpers in ``ui/``.

The same file is also the server: ``streamlit run`` finds the ``st.App`` at the
bottom, which adds the ``/api`` and ``/transfer`` routes (``ui/server.py``) next
to the pages, starts the embedded worker with the server and stops it on
shutdown.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

# Streamlit runs this file as __main__. The worker's task processes (multiprocessing
# forkserver/spawn) import the parent's main module again, as __mp_main__, for every
# attempt: there, neither the app nor its imports (Streamlit, the UI) may load, let
# alone a second embedded worker.
if __name__ == "__main__":
    import streamlit as st

    from s3task.config import Settings
    from s3task.errors import S3TaskError, SettingsError
    from ui import context, identity, nav, services, sidebar
    from ui import format as fmt
    from ui.appsettings import AppSettings

    FAVICON = Path(__file__).resolve().parent / "ui" / "favicon.png"


def _stop_with(title: str, message: str) -> NoReturn:
    """Show one explanatory page and nothing else (no navigation to other pages)."""

    def explain() -> None:
        st.title(title)
        st.error(fmt.plain(message), icon=":material/block:")

    st.navigation([st.Page(explain, title="s3task", url_path="problem")], position="hidden").run()
    st.stop()


def _sign_in() -> NoReturn:
    def welcome() -> None:
        st.title("s3task")
        st.write(
            "Upload a CSV file or an Excel workbook, let it be processed in the background, and download the result."
        )
        st.button("Sign in to continue", type="primary", on_click=st.login, icon=":material/login:")

    st.navigation([st.Page(welcome, title="Sign in", url_path="signin")], position="hidden").run()
    st.stop()


def main() -> None:
    # A file, not a ":material/…:" icon: Streamlit fetches those favicons from fonts.gstatic.com, and the app
    # must work on a network with no internet (tests/browser/test_browser.py checks no request leaves 127.0.0.1).
    st.set_page_config(page_title="s3task", page_icon=str(FAVICON), layout="wide")
    try:
        settings = Settings.load()
        app_settings = AppSettings.load()
        services.notifier_for(settings)  # a notification channel that does not fit is a settings problem too
    except SettingsError as e:
        _stop_with("s3task is not configured correctly", str(e))

    who = identity.current(settings.operators)
    if who.problem:
        _stop_with(
            "s3task is not configured correctly" if who.misconfigured else "s3task cannot let you in", who.problem
        )
    if who.login_needed:
        _sign_in()

    try:
        service = services.service_for(settings)
    except (S3TaskError, ValueError, OSError) as e:
        _stop_with("s3task cannot open its task store", f"{settings.store}: {e}")

    ctx = context.Context(
        settings=settings,
        app=app_settings,
        identity=who,
        service=service,
        worker=services.embedded_worker(settings),
    )
    context.put(ctx)

    page = st.navigation(nav.pages())
    sidebar.render(ctx)
    if ctx.actor.operator and (exposed := identity.exposure()):  # theirs to fix, on every page until it is
        st.warning(fmt.plain(exposed), icon=":material/warning:")
    if ctx.worker.problem:  # on every page: nothing submitted here will be processed until this changes
        st.error(
            "**Tasks will not be processed by this app.** Its built-in worker is not running: "
            + fmt.plain(ctx.worker.problem)
            + " New tasks are kept in the queue until a worker that passes the check picks them up.",
            icon=":material/block:",
        )
    page.run()


if __name__ == "__main__":
    main()
elif __name__ != "__mp_main__":
    # `streamlit run app.py` imports this file as the module `app` to build the web
    # server, then runs it as __main__ for every page view (the branch above).
    import contextlib
    import importlib
    from collections.abc import AsyncIterator

    import streamlit as st
    from starlette.concurrency import run_in_threadpool

    from ui import server

    #: What the pages import — pandas and pyarrow through ui.services, the pages' helpers — imported while the
    #: server starts, before it answers, instead of by the first page a person opens after a start (issue 36
    #: item 17, BENCHMARKS.md: most of that page's time). In the lifespan, once Streamlit's runtime is up, so
    #: that the helpers' caches are the runtime's.
    PAGE_MODULES = (
        "ui.context", "ui.sidebar", "ui.tables", "ui.detail", "ui.result", "ui.explore_view", "ui.corrections",
        "ui.profile_view", "ui.step_counts", "ui.recipe_save", "ui.notify", "s3task.query", "s3task.exports.source",
    )  # fmt: skip

    def _ready_for_the_first_page() -> None:
        """What a fresh process's first page would otherwise do before it draws (issue 36 item 17): import the
        pages' modules; route as every later page does; make Streamlit's one-time check of how it was started."""
        for name in PAGE_MODULES:
            importlib.import_module(name)
        # Until some session has called st.navigation, Streamlit routes the old (v1) way because pages/ exists:
        # a first request for a page URL (a shared /task?id=… link) runs that page file without app.py, which
        # then starts over through app.py (ui/context.py) — two runs of the script. app.py always navigates
        # (st.navigation, which sets this flag to False for the process on its first call): set it now, so the
        # first page goes through app.py once, as every later one does. Both this and the check below are
        # Streamlit's internals (1.67): a Streamlit without them starts as before, only slower.
        with contextlib.suppress(ImportError, AttributeError):
            from streamlit.runtime.pages_manager import PagesManager

            if hasattr(PagesManager, "uses_pages_directory"):
                PagesManager.uses_pages_directory = False
        # On the first element any page draws, Streamlit checks once whether it runs in a REPL by walking the
        # stack with inspect, which maps every loaded module to its file (pandas and pyarrow: thousands):
        # 0.1-0.3 s of the first page on a loaded machine. Made here, on this short stack, instead.
        with contextlib.suppress(ImportError, AttributeError):
            from streamlit import env_util

            env_util.is_repl()

    @contextlib.asynccontextmanager
    async def lifespan(app: object) -> AsyncIterator[None]:
        await run_in_threadpool(_ready_for_the_first_page)
        async with server.lifespan(app):
            yield

    app = st.App(Path(__file__).resolve(), routes=server.routes(), lifespan=lifespan)
