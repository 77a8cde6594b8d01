"""Errors as JSON: every answer under ``/api`` and ``/transfer`` that is not a success is ``{"code", "message"}``.

``code`` is stable (clients branch on it), ``message`` says what to do next. The body is
:class:`s3task.web.models.ErrorBody`; :data:`ERRORS` and :data:`WEB_CODES` are the one list of
codes, from which the OpenAPI document names the codes each status can carry.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from starlette._utils import get_route_path
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Mount, Route
from starlette.types import Scope

from ..errors import (
    AccessDenied,
    AccessDeniedByStore,
    BucketMissing,
    CorruptRecord,
    InvalidInput,
    InvalidTaskId,
    InvalidTransition,
    NotFound,
    OutputPreparing,
    RecordError,
    S3TaskError,
    StoreError,
    StoreUnavailable,
    TaskNotFound,
    TooManyConflicts,
    TooManyRequests,
    UnknownTaskType,
    UnsupportedSchema,
)
from .models import ErrorBody

log = logging.getLogger("s3task.web")

#: s3task error -> (HTTP status, stable code). The most specific class wins (looked up along the MRO).
ERRORS: dict[type[S3TaskError], tuple[int, str]] = {
    InvalidInput: (400, "invalid_input"),
    InvalidTaskId: (400, "invalid_task_id"),
    UnknownTaskType: (400, "unknown_task_type"),
    AccessDenied: (403, "access_denied"),
    TaskNotFound: (404, "task_not_found"),
    NotFound: (404, "not_found"),
    InvalidTransition: (409, "invalid_transition"),
    OutputPreparing: (503, "output_preparing"),
    TooManyConflicts: (409, "too_many_conflicts"),
    TooManyRequests: (429, "too_many_requests"),
    UnsupportedSchema: (409, "unsupported_schema"),
    CorruptRecord: (500, "corrupt_record"),
    RecordError: (500, "unreadable_record"),
    StoreUnavailable: (503, "store_unavailable"),
    BucketMissing: (503, "bucket_missing"),
    AccessDeniedByStore: (503, "store_access_denied"),
    StoreError: (503, "store_error"),
}

#: Retry-After (seconds) on 503 output_preparing: a copy of an output is being made.
RETRY_PREPARING_SECONDS = 5

#: The codes the web layer answers with itself (as :class:`HttpError`), by status.
WEB_CODES: dict[int, tuple[str, ...]] = {
    400: ("invalid_json", "invalid_input"),
    401: ("unauthorized",),
    404: ("not_found",),
    405: ("method_not_allowed",),
    413: ("payload_too_large",),
    500: ("internal_error",),
    503: ("no_download_url",),
}


def codes_for(status: int) -> list[str]:
    """Every code an answer under ``/api`` with this status may carry."""
    found = {code for s, code in ERRORS.values() if s == status} | set(WEB_CODES.get(status, ()))
    return sorted(found)


class HttpError(Exception):
    """An error with an HTTP status and a stable code, answered as JSON ``{"code", "message"}``."""

    def __init__(self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = dict(headers or {})


def error_response(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    body = ErrorBody(code=code, message=message).model_dump(mode="json")
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def status_of(exc: S3TaskError) -> tuple[int, str]:
    for cls in type(exc).__mro__:
        if cls in ERRORS:
            return ERRORS[cls]
    return 500, "internal_error"


_HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}


async def http_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HttpError):
        return error_response(exc.status, exc.code, exc.message, exc.headers)
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail), exc.headers)


#: A signed transfer token, ``<base64url payload>.<base64url signature>``, as it appears in a path.
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")


def redact_path(path: str) -> str:
    """``path`` with any signed token in it replaced by ``<token>``: a logged link would be a working link."""
    return _TOKEN.sub("<token>", path)


async def internal_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, ClientDisconnect):  # routine on real networks: one line, no traceback
        log.info("%s %s: the client went away mid-request", request.method, redact_path(request.url.path))
        return Response(status_code=400)
    log.error("unhandled error on %s %s", request.method, redact_path(request.url.path), exc_info=exc)
    return error_response(500, "internal_error", "something went wrong on the server; it has been logged")


async def s3task_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, S3TaskError)
    status, code = status_of(exc)
    if isinstance(exc, OutputPreparing):  # not a failure: the client asks again
        return error_response(status, code, exc.message, {"Retry-After": str(RETRY_PREPARING_SECONDS)})
    if isinstance(exc, TooManyRequests):  # not a failure either: the caller waits, then asks again
        return error_response(status, code, exc.message, {"Retry-After": str(exc.retry_after)})
    if status >= 500:
        log.warning("%s %s: %s", request.method, redact_path(request.url.path), exc)
    return error_response(status, code, exc.message)


async def route_error(request: Request, exc: Exception) -> Response:
    """No route for this path (404) or not for this method (405): JSON, saying what exists."""
    assert isinstance(exc, HTTPException)
    path = quote(request.scope["path"], safe="/")  # not request.url, which drops control characters
    if exc.status_code == 404:
        message = f"there is no {path} in this API; its routes are listed at /api/openapi.json"
        return error_response(404, "not_found", message)
    if exc.status_code == 405:
        # Starlette names only the methods of the first route for the path (POST for /tasks): name them all.
        allowed = ", ".join(sorted(_methods_for(request)))
        message = f"{path} does not take {request.method}; it takes {allowed}"
        return error_response(405, "method_not_allowed", message, {**(exc.headers or {}), "Allow": allowed})
    return await http_error(request, exc)


def _methods_for(request: Request) -> set[str]:
    return {
        method
        for route in request.app.routes
        if isinstance(route, Route) and route.matches(request.scope)[0] != Match.NONE
        for method in route.methods or ()
    }


def json_mount(path: str, routes: list[Route], handlers: Mapping[Any, Callable[..., Any]] | None = None) -> Mount:
    """Mount ``routes`` under ``path`` in a sub-application whose every error is JSON.

    A sub-application (rather than bare routes) keeps the JSON errors, even for
    unknown paths and wrong methods, when the routes are mounted into someone
    else's app such as Streamlit's ``st.App``. ``handlers`` may replace the
    one for ``HTTPException`` (404, 405) to word those for its routes.
    """
    exception_handlers: dict[Any, Callable[..., Any]] = {HTTPException: http_error, HttpError: http_error}
    exception_handlers.update(handlers or {})
    exception_handlers[Exception] = internal_error
    for route in routes:
        # Starlette anchors a route with "$", which also matches before a final line feed: "/tasks%0A"
        # would be served as "/tasks". "\Z" is the end of the path and nothing else.
        if isinstance(route, Route) and route.path_regex.pattern.endswith("$"):
            route.path_regex = re.compile(route.path_regex.pattern[:-1] + r"\Z")
    app = Starlette(routes=routes, exception_handlers=exception_handlers)
    # No redirect (an empty 307) from "/tasks/" to "/tasks": a JSON 404 says what is wrong.
    app.router.redirect_slashes = False
    return _PrefixMount(path, app=app)


class _PrefixMount(Mount):
    """A Mount that takes every path under its own, whatever characters the path holds.

    Starlette's Mount matches ``^/api/(?P<path>.*)$``, and ``.`` stops at a line feed:
    ``/api/tasks/%0A/submit`` fell through to the enclosing app (a plain-text 404 from
    Starlette, Streamlit's HTML page when mounted in ``st.App``), and so did ``/api``
    itself. A prefix test has no such gaps.
    """

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] not in ("http", "websocket"):
            return Match.NONE, {}
        route_path = get_route_path(scope)
        if route_path != self.path and not route_path.startswith(self.path + "/"):
            return Match.NONE, {}
        root_path = scope.get("root_path", "")
        return Match.FULL, {
            "path_params": dict(scope.get("path_params", {})),
            "app_root_path": scope.get("app_root_path", root_path),
            "root_path": root_path + self.path,
            "endpoint": self.app,
        }
