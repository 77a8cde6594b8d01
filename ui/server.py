"""The web server around the pages: extra routes next to Streamlit's, and what happens at shutdown.

``app.py`` hands these to ``st.App``, so ``streamlit run app.py`` serves, from one
process and one port:

- the pages (Streamlit);
- ``/api/*``, the HTTP control API (bearer tokens; see ``s3task.http_api``);
- ``/transfer/*`` on stores without presigned URLs (the local directory): the
  signed, expiring upload and download routes the browser uses instead of
  presigned S3 URLs, streaming to and from disk;
- ``/metrics``, Prometheus metrics of this process (its store requests, its
  embedded worker; ``s3task.metrics``).

Both share the pages' TaskService, so a URL the New task page hands the browser
is checked by the same signer that made it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.routing import BaseRoute

from s3task import handlers, metrics, notify
from s3task.clock import MACHINE, Clock
from s3task.config import Settings
from s3task.errors import S3TaskError, SettingsError
from s3task.notify import Notifier
from s3task.store import open_store
from s3task.tasks import CreateLimits, TaskService
from s3task.web.transfer import signer_for

log = logging.getLogger("s3task.app")


def routes() -> list[BaseRoute]:
    """``/api`` and (local store) ``/transfer``; if the settings or the store are unusable, routes that say so.

    The pages still start and say what is wrong; a script calling ``/api`` or a
    browser sending a file to ``/transfer`` gets the same reason as JSON (503
    ``not_configured``), never the pages' HTML.
    """
    from s3task.web import api as http_api

    metrics.enable()  # count the requests of the stores opened from here on (the pages', the embedded worker's)
    try:
        settings = Settings.load()
        service = service_for(settings)
        return [*http_api.routes(settings, service=service), metrics.route()]
    except (S3TaskError, ValueError, OSError) as e:
        log.error("serving the pages without a working /api and /transfer: %s", e)
        return [*_unavailable(" ".join(str(e).split())), metrics.route()]


def _unavailable(reason: str) -> list[BaseRoute]:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from s3task.web.errors import error_response, json_mount

    async def refuse(request: Request) -> Response:
        return error_response(503, "not_configured", f"s3task is not configured correctly: {reason}")

    methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]
    catch_all = [Route("/", refuse, methods=methods), Route("/{rest:path}", refuse, methods=methods)]
    return [json_mount("/api", catch_all), json_mount("/transfer", list(catch_all))]


#: The settings' defaults: a caller that names no limits finds the service the pages use by default.
DEFAULT_LIMITS = CreateLimits()
_services: dict[tuple[str, int, int, str, Clock, Notifier | None, CreateLimits], TaskService] = {}
_notifiers: dict[Settings, Notifier | None] = {}
_services_lock = threading.Lock()


def task_service(
    store_url: str,
    max_attempts: int,
    url_seconds: int,
    *,
    signing_key: str = "",
    clock: Clock = MACHINE,
    hook: Notifier | None = None,
    limits: CreateLimits = DEFAULT_LIMITS,
) -> TaskService:
    """The one TaskService of this process for a store; on the local store it signs ``/transfer`` URLs.

    ``hook``: the notifier of the state changes it writes (:func:`notifier_for`; None: none is sent).
    A plain per-process cache, not ``st.cache_resource``: the routes need it
    before Streamlit's runtime has started.
    """
    key = (store_url, max_attempts, url_seconds, signing_key, clock, hook, limits)
    with _services_lock:
        if key not in _services:
            store, layout = open_store(store_url, clock=clock)
            signer = signer_for(store, key=signing_key)
            _services[key] = TaskService(
                store,
                layout,
                max_attempts=max_attempts,
                url_seconds=url_seconds,
                url_signer=signer,
                hook=hook,
                limits=limits,
            )
        return _services[key]


def notifier_for(settings: Settings) -> Notifier | None:
    """The one notifier of this process for these settings (None: no channel set), shared by the
    pages' and the API's TaskService and the embedded worker. :class:`SettingsError` if they don't fit."""
    with _services_lock:
        if settings not in _notifiers:
            _notifiers[settings] = notify.from_settings(settings)
        return _notifiers[settings]


def service_for(settings: Settings) -> TaskService:
    # Task types from S3TASK_HANDLERS must be known here too, not only in the
    # worker: the New task page offers them and create() validates against them.
    for module in settings.handlers:
        handlers.load_module(module)
    return task_service(
        settings.store,
        settings.max_attempts,
        settings.url_seconds,
        signing_key=settings.signing_key,
        clock=settings.clock,
        hook=notifier_for(settings),
        limits=CreateLimits.of(settings),
    )


@asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    """Start the embedded worker with the server (queued tasks go on after a restart, with no page open);
    on shutdown, stop it, which hands the task it holds back to the queue."""
    _warn_if_exposed()
    await run_in_threadpool(_start_worker)
    yield
    await run_in_threadpool(_stop_worker)


def _warn_if_exposed() -> None:
    """Trusted sign-in headers on an address more than the proxy can reach: said once at start (and on
    every page to operators, app.py)."""
    from ui import identity

    exposed = identity.exposure()
    if exposed:
        log.warning("%s", exposed)


def _start_worker() -> None:
    """Best effort: if it cannot start (bad settings, a store that fails the probe), the pages say why."""
    try:
        settings = Settings.load()
        notifier = notifier_for(settings)
    except SettingsError:
        return  # the pages show the settings problem
    if settings.embedded_worker:
        from s3task.worker import ensure_embedded, wake_embedded

        ensure_embedded(settings, notifier)  # logs the reason itself
        # A submit or retry through /api wakes the app's worker at once, even before any page has run. A store
        # that cannot be opened is left to the pages and /api to explain.
        with contextlib.suppress(S3TaskError):
            service_for(settings).on_queued = wake_embedded


def _stop_worker() -> None:
    try:
        from s3task.worker import stop_embedded
    except ImportError:
        return
    stop_embedded()
