"""The HTTP control API under ``/api/``: everything the app does, for scripts and other services.

Mount :func:`routes` into the Streamlit app (``st.App(..., routes=routes(settings))``)
or run it on its own::

    uvicorn s3task.http_api:app --factory --host 127.0.0.1 --port 8000

Each route is thin: it authenticates the caller, calls :class:`s3task.tasks.TaskService`
and turns the result (or the s3task error) into JSON. The service owns every
state transition; responses carry its ``retryable`` / ``cancellable`` verdicts.

Authentication is a bearer token and nothing else. Tokens live, hashed, in the
file named by ``S3TASK_API_TOKENS_FILE`` (JSON or TOML)::

    {"<sha256 hex of the token>": {"user": "alice", "role": "user"}}

``python -m s3task.http_api new-token --user alice`` makes one. Browser cookies
and proxy identity headers are ignored on purpose: these routes have no CSRF
protection, and a proxy that adds identity from the browser's SSO cookie would
let any web page forge a cross-site POST.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import hmac
import json
import logging
import os
import secrets
import sys
import threading
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route

from . import handlers
from .config import Settings
from .errors import (
    AccessDenied,
    AccessDeniedByStore,
    BucketMissing,
    CorruptRecord,
    InvalidInput,
    InvalidTaskId,
    InvalidTransition,
    NotFound,
    RecordError,
    S3TaskError,
    StoreError,
    StoreUnavailable,
    TaskNotFound,
    TooManyConflicts,
    UnknownTaskType,
    UnsupportedSchema,
)
from .record import TaskRecord
from .store import open_store
from .tasks import MAX_LIST, Actor, TaskService
from .transfer import HttpError, _http_error, error_response, json_mount, signer_for, transfer_mount

log = logging.getLogger("s3task.api")

TOKENS_FILE_ENV = "S3TASK_API_TOKENS_FILE"
ROLES = ("user", "operator")
MAX_JSON_BYTES = 64 * 1024
DEFAULT_LIMIT = 50
#: Record fields that are worker-internal and never leave the server.
_HIDDEN = ("lease_token", "write_id")

#: s3task error -> (HTTP status, stable code). The most specific class wins (looked up along the MRO).
ERRORS: dict[type[S3TaskError], tuple[int, str]] = {
    InvalidInput: (400, "invalid_input"),
    InvalidTaskId: (400, "invalid_task_id"),
    UnknownTaskType: (400, "unknown_task_type"),
    AccessDenied: (403, "access_denied"),
    TaskNotFound: (404, "task_not_found"),
    NotFound: (404, "not_found"),
    InvalidTransition: (409, "invalid_transition"),
    TooManyConflicts: (409, "too_many_conflicts"),
    UnsupportedSchema: (409, "unsupported_schema"),
    CorruptRecord: (500, "corrupt_record"),
    RecordError: (500, "unreadable_record"),
    StoreUnavailable: (503, "store_unavailable"),
    BucketMissing: (503, "bucket_missing"),
    AccessDeniedByStore: (503, "store_access_denied"),
    StoreError: (503, "store_error"),
}


def status_of(exc: S3TaskError) -> tuple[int, str]:
    for cls in type(exc).__mro__:
        if cls in ERRORS:
            return ERRORS[cls]
    return 500, "internal_error"


async def _route_error(request: Request, exc: Exception) -> Response:
    """No route for this path (404) or not for this method (405): JSON, saying what exists."""
    assert isinstance(exc, HTTPException)
    path = quote(request.scope["path"], safe="/")  # not request.url, which drops control characters
    if exc.status_code == 404:
        message = f"there is no {path} in this API; its routes are listed at /api/openapi.json"
        return error_response(404, "not_found", message)
    if exc.status_code == 405:
        # Starlette names only the methods of the first route for the path (POST for /tasks): name them all.
        allowed = ", ".join(
            sorted(
                {
                    method
                    for route in request.app.routes
                    if isinstance(route, Route) and route.matches(request.scope)[0] != Match.NONE
                    for method in route.methods or ()
                }
            )
        )
        message = f"{path} does not take {request.method}; it takes {allowed}"
        return error_response(405, "method_not_allowed", message, {**(exc.headers or {}), "Allow": allowed})
    return await _http_error(request, exc)


async def _s3task_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, S3TaskError)
    status, code = status_of(exc)
    if status >= 500:
        log.warning("%s %s: %s", request.method, request.url.path, exc)
    return error_response(status, code, exc.message)


# --- tokens -------------------------------------------------------------------------


def hash_token(token: str) -> str:
    """What the tokens file stores: the SHA-256 hex digest of the token."""
    return hashlib.sha256(token.encode()).hexdigest()


def parse_tokens(text: str, source: str) -> dict[str, Actor]:
    """``{sha256-hex: {"user": ..., "role": "user"|"operator"}}`` from JSON or TOML text."""
    try:
        data = json.loads(text) if source.endswith(".json") or text.lstrip().startswith("{") else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"{source}: not valid JSON or TOML ({e})") from e
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping of token hashes to identities")
    table: dict[str, Actor] = {}
    for digest, entry in data.items():
        if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
            raise ValueError(
                f"{source}: {digest!r} is not a SHA-256 hex digest (use: python -m s3task.http_api hash-token)"
            )
        if not isinstance(entry, dict) or not isinstance(entry.get("user"), str):
            raise ValueError(f'{source}: the entry for {digest[:12]}… needs a "user"')
        role = entry.get("role", "user")
        if role not in ROLES:
            raise ValueError(f"{source}: role {role!r} for {entry['user']!r} must be one of {', '.join(ROLES)}")
        try:
            table[digest] = Actor(entry["user"], operator=role == "operator")
        except AccessDenied as e:
            raise ValueError(f"{source}: {e}") from e
    return table


class TokenTable:
    """Bearer token -> Actor. Re-reads its file when the file changes, so adding a token needs no restart."""

    def __init__(self, entries: Mapping[str, Actor] | None = None, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path else None
        self._entries = dict(entries or {})
        self._stamp: tuple[int, int] | None = None
        self._lock = threading.Lock()
        if self.path is not None:
            self._entries = self._load()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TokenTable:
        path = (os.environ if environ is None else environ).get(TOKENS_FILE_ENV)
        return cls(path=path) if path else cls()

    @property
    def configured(self) -> bool:
        return self.path is not None or bool(self._entries)

    def _load(self) -> dict[str, Actor]:
        assert self.path is not None
        st = self.path.stat()
        self._stamp = (st.st_mtime_ns, st.st_size)
        return parse_tokens(self.path.read_text(), str(self.path))

    def _current(self) -> dict[str, Actor]:
        if self.path is None:
            return self._entries
        try:
            st = self.path.stat()
            if (st.st_mtime_ns, st.st_size) != self._stamp:
                with self._lock:
                    self._entries = self._load()
        except (OSError, ValueError) as e:  # keep serving with the last good table
            log.error("cannot reload API tokens from %s: %s", self.path, e)
        return self._entries

    def actor_for(self, token: str) -> Actor | None:
        digest = hash_token(token)
        found = None
        # Compare against every entry in constant time; no early exit.
        for known, actor in self._current().items():
            if hmac.compare_digest(known, digest):
                found = actor
        return found


# --- the API -------------------------------------------------------------------------


class Api:
    def __init__(self, service: TaskService, tokens: TokenTable) -> None:
        self.service = service
        self.tokens = tokens

    def routes(self) -> list[Route]:
        return [
            Route("/openapi.json", self.openapi, methods=["GET"]),
            Route("/task-types", self.task_types, methods=["GET"]),
            Route("/tasks", self.create_task, methods=["POST"]),
            Route("/tasks", self.list_tasks, methods=["GET"]),
            Route("/tasks/{task_id}", self.get_task, methods=["GET"]),
            Route("/tasks/{task_id}/submit", self.submit_task, methods=["POST"]),
            Route("/tasks/{task_id}/retry", self.retry_task, methods=["POST"]),
            Route("/tasks/{task_id}/cancel", self.cancel_task, methods=["POST"]),
            Route("/tasks/{task_id}/output", self.task_output, methods=["GET"]),
        ]

    # --- identity ---

    def actor(self, request: Request) -> Actor:
        """The caller, from ``Authorization: Bearer <token>`` only."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            hint = "" if self.tokens.configured else f" (none are configured yet: set {TOKENS_FILE_ENV})"
            raise _unauthorized(f"send an API token as 'Authorization: Bearer <token>'{hint}")
        actor = self.tokens.actor_for(token.strip())
        if actor is None:
            raise _unauthorized("that API token is not known")
        return actor

    # --- views ---

    def task_view(self, actor: Actor, record: TaskRecord) -> dict[str, Any]:
        data = record.to_dict()
        for name in _HIDDEN:
            data.pop(name, None)
        data["progress"] = record.progress
        data["terminal"] = record.is_terminal
        data["retryable"] = self.service.can_retry(actor, record)
        data["cancellable"] = self.service.can_cancel(actor, record)
        return data

    def _task(self, actor: Actor, record: TaskRecord, status: int = 200) -> JSONResponse:
        return JSONResponse({"task": self.task_view(actor, record)}, status_code=status)

    # --- endpoints: each calls the TaskService and nothing else ---

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def task_types(self, request: Request) -> Response:
        self.actor(request)
        return JSONResponse({"task_types": [_type_view(t) for t in handlers.all_types()]})

    async def create_task(self, request: Request) -> Response:
        actor = self.actor(request)
        body = await _json_object(request, allowed=("name", "type", "parameters"))
        name, task_type, params = body.get("name"), body.get("type"), body.get("parameters") or {}
        if not isinstance(name, str) or not isinstance(task_type, str):
            raise HttpError(400, "invalid_input", 'give the task a "name" and a "type" (see GET /api/task-types)')
        if not isinstance(params, dict):
            raise HttpError(400, "invalid_input", '"parameters" must be a JSON object')
        created = await run_in_threadpool(self.service.create, actor, name, task_type, params)
        upload = None
        if created.upload_url:
            upload = {
                "url": absolute_url(request, created.upload_url),
                "method": "PUT",
                "headers": {"Content-Type": created.upload_content_type},
                "expires_in": self.service.url_seconds,
            }
        location = f"{request.url.path.rstrip('/')}/{created.record.task_id}"
        return JSONResponse(
            {"task": self.task_view(actor, created.record), "upload": upload},
            status_code=201,
            headers={"Location": location},
        )

    async def list_tasks(self, request: Request) -> Response:
        actor = self.actor(request)
        query = request.query_params
        limit = _int_param(query.get("limit"), "limit", DEFAULT_LIMIT)
        mine = _bool_param(query.get("mine"), "mine")
        page = await run_in_threadpool(
            self.service.list, actor, limit=limit, cursor=query.get("cursor") or None, mine=mine
        )
        return JSONResponse(
            {
                "tasks": [self.task_view(actor, r) for r in page.tasks],
                "next_cursor": page.next_cursor,
                "problems": page.problems,
            }
        )

    async def get_task(self, request: Request) -> Response:
        actor = self.actor(request)
        return self._task(actor, await run_in_threadpool(self.service.get, actor, request.path_params["task_id"]))

    async def submit_task(self, request: Request) -> Response:
        actor = self.actor(request)
        return self._task(actor, await run_in_threadpool(self.service.submit, actor, request.path_params["task_id"]))

    async def retry_task(self, request: Request) -> Response:
        actor = self.actor(request)
        return self._task(actor, await run_in_threadpool(self.service.retry, actor, request.path_params["task_id"]))

    async def cancel_task(self, request: Request) -> Response:
        actor = self.actor(request)
        return self._task(actor, await run_in_threadpool(self.service.cancel, actor, request.path_params["task_id"]))

    async def task_output(self, request: Request) -> Response:
        actor = self.actor(request)
        task_id = request.path_params["task_id"]
        url = await run_in_threadpool(self.service.output_url, actor, task_id)
        if url is None:
            raise HttpError(503, "no_download_url", "this store cannot make download links")
        record = await run_in_threadpool(self.service.get, actor, task_id)
        return JSONResponse(
            {
                "url": absolute_url(request, url),
                "expires_in": self.service.url_seconds,
                "filename": self.service.output_filename(record),
            },
            headers={"Cache-Control": "no-store"},
        )


def _unauthorized(message: str) -> HttpError:
    return HttpError(401, "unauthorized", message, {"WWW-Authenticate": 'Bearer realm="s3task"'})


def _type_view(task_type: type[handlers.TaskType]) -> dict[str, Any]:
    return {
        "name": task_type.name,
        "title": task_type.title,
        "description": task_type.description,
        "params": [{**dataclasses.asdict(p), "choices": list(p.choices)} for p in task_type.params],
    }


def absolute_url(request: Request, url: str) -> str:
    """Host-relative transfer URLs (the local store's) made absolute against this server's own address."""
    if not url.startswith("/"):
        return url
    root = request.scope.get("app_root_path", "")
    return f"{request.url.scheme}://{request.url.netloc}{root}{url}"


async def _json_object(request: Request, *, allowed: Sequence[str]) -> dict[str, Any]:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_JSON_BYTES:
        raise _too_large()
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_JSON_BYTES:
            raise _too_large()
    try:
        data = json.loads(body or b"{}")
    except ValueError as e:
        raise HttpError(400, "invalid_json", f"the request body is not valid JSON ({e})") from e
    if not isinstance(data, dict):
        raise HttpError(400, "invalid_json", "the request body must be a JSON object")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise HttpError(400, "invalid_input", f"unknown field(s) {', '.join(unknown)}; expected {', '.join(allowed)}")
    return data


def _too_large() -> HttpError:
    return HttpError(413, "payload_too_large", f"the request body is larger than {MAX_JSON_BYTES // 1024} KB")


def _int_param(raw: str | None, name: str, default: int) -> int:
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except ValueError:
        raise HttpError(400, "invalid_input", f"{name} must be a whole number between 1 and {MAX_LIST}") from None


def _bool_param(raw: str | None, name: str) -> bool:
    text = (raw or "").strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise HttpError(400, "invalid_input", f"{name} must be true or false")


# --- assembly ------------------------------------------------------------------------


def routes(
    settings: Settings, *, service: TaskService | None = None, tokens: TokenTable | None = None
) -> list[BaseRoute]:
    """The API under ``/api`` and, for stores without presigned URLs, the ``/transfer`` routes.

    Pass ``service`` to share the app's TaskService (it should have been made with
    ``url_signer=transfer.signer_for(store)`` on the local store).
    """
    for module in settings.handlers:  # task types the workers run must be creatable here too
        handlers.load_module(module)
    if service is None:
        store, layout = open_store(settings.store)
        service = TaskService(
            store,
            layout,
            max_attempts=settings.max_attempts,
            url_seconds=settings.url_seconds,
            url_signer=signer_for(store),
        )
    api = Api(service, tokens if tokens is not None else TokenTable.from_env())
    errors = {S3TaskError: _s3task_error, HTTPException: _route_error}
    mounted: list[BaseRoute] = [json_mount("/api", api.routes(), errors)]
    signer = service.url_signer or signer_for(service.store)
    if signer is not None:
        max_bytes = settings.max_upload_mb * 1024 * 1024
        mounted.append(transfer_mount(service.store, service.layout, signer, max_bytes=max_bytes))
    return mounted


def create_app(settings: Settings | None = None, **kwargs: Any) -> Starlette:
    """A standalone ASGI app serving only the API (and transfer routes)."""
    return Starlette(routes=routes(settings or Settings.load(), **kwargs))


def app() -> Starlette:
    """Factory for ``uvicorn s3task.http_api:app --factory``: settings from ``S3TASK_*``.

    A bad setting is one line on stderr and exit status 2, as for ``python -m s3task.http_api serve``.
    """
    try:
        settings = Settings.load()
    except ValueError as e:  # a SettingsError: it names the setting
        print(f"error: {_one_line(e)}", file=sys.stderr)
        raise SystemExit(2) from None
    return create_app(settings)


def _one_line(e: BaseException) -> str:
    return " ".join((str(e) or type(e).__name__).split())


# --- OpenAPI -------------------------------------------------------------------------


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    text = {
        400: "Bad input (invalid id, parameters, cursor, body)",
        401: "No or unknown bearer token",
        403: "The task belongs to someone else",
        404: "No such task",
        409: "The task's state does not allow this",
        413: "Request body too large",
        503: "The task store is unavailable",
    }
    return {str(s): _json(_ref("Error"), text[s]) for s in statuses}


def openapi_document() -> dict[str, Any]:
    task_id = {
        "name": "task_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-7][0-9A-HJKMNP-TV-Z]{25}$"},
    }
    common = (400, 401, 503)
    one_task = {"200": _json({"type": "object", "properties": {"task": _ref("Task")}}, "The task")}

    def action(summary: str, *extra: int) -> dict[str, Any]:
        return {
            "post": {
                "summary": summary,
                "parameters": [task_id],
                "responses": {**one_task, **_errors(*common, 403, 404, 409, *extra)},
            }
        }

    return {
        "openapi": "3.1.0",
        "info": {
            "title": "s3task control API",
            "version": "1",
            "description": "Create, upload, submit, watch and download batch tasks. "
            "Authenticate with 'Authorization: Bearer <token>'. Errors are {code, message}.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                },
                "Task": {
                    "type": "object",
                    "description": "The task record (status.json) plus backend-computed fields.",
                    "required": ["task_id", "task_name", "status", "created_by", "retryable", "cancellable"],
                    "properties": {
                        "task_id": {"type": "string"},
                        "task_name": {"type": "string"},
                        "task_type": {"type": "string"},
                        "payload": {"type": "object"},
                        "status": {
                            "type": "string",
                            "enum": ["created", "queued", "running", "completed", "failed", "abandoned"],
                        },
                        "final": {"type": "boolean"},
                        "attempt_id": {"type": "integer"},
                        "row_count": {"type": ["integer", "null"]},
                        "processed_count": {"type": "integer"},
                        "success_count": {"type": "integer"},
                        "error_count": {"type": "integer"},
                        "last_error": {"type": ["string", "null"]},
                        "created_by": {"type": "string"},
                        "created_at": {"type": "string", "format": "date-time"},
                        "updated_at": {"type": "string", "format": "date-time"},
                        "progress": {"type": "number", "minimum": 0, "maximum": 1},
                        "terminal": {"type": "boolean"},
                        "retryable": {"type": "boolean", "description": "The caller may retry it now."},
                        "cancellable": {"type": "boolean", "description": "The caller may cancel it now."},
                    },
                    "additionalProperties": True,
                },
                "Upload": {
                    "type": ["object", "null"],
                    "properties": {
                        "url": {"type": "string"},
                        "method": {"const": "PUT"},
                        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                        "expires_in": {"type": "integer"},
                    },
                },
                "TaskType": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "title": {"type": "string"},
                        "description": {"type": "string"},
                        "params": {"type": "array", "items": {"type": "object"}},
                    },
                },
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/api/openapi.json": {
                "get": {
                    "summary": "This document",
                    "security": [],
                    "responses": {"200": {"description": "OpenAPI 3.1"}},
                }
            },
            "/api/task-types": {
                "get": {
                    "summary": "Registered task types and their parameters (for forms)",
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {"task_types": {"type": "array", "items": _ref("TaskType")}},
                            },
                            "Task types",
                        ),
                        **_errors(401),
                    },
                }
            },
            "/api/tasks": {
                "post": {
                    "summary": "Create a task; returns it and a short-lived URL to PUT the input CSV to",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["name", "type"],
                                    "properties": {
                                        "name": {"type": "string"},
                                        "type": {"type": "string"},
                                        "parameters": {"type": "object"},
                                    },
                                    "additionalProperties": False,
                                }
                            }
                        },
                    },
                    "responses": {
                        "201": _json(
                            {"type": "object", "properties": {"task": _ref("Task"), "upload": _ref("Upload")}},
                            "Created",
                        ),
                        **_errors(*common, 413),
                    },
                },
                "get": {
                    "summary": "Tasks, newest first, a page at a time",
                    "parameters": [
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIST, "default": DEFAULT_LIMIT},
                        },
                        {
                            "name": "cursor",
                            "in": "query",
                            "schema": {"type": "string"},
                            "description": "next_cursor of the previous page",
                        },
                        {"name": "mine", "in": "query", "schema": {"type": "boolean", "default": False}},
                    ],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "tasks": {"type": "array", "items": _ref("Task")},
                                    "next_cursor": {"type": ["string", "null"]},
                                    "problems": {"type": "array", "items": {"type": "string"}},
                                },
                            },
                            "A page of tasks",
                        ),
                        **_errors(*common),
                    },
                },
            },
            "/api/tasks/{task_id}": {
                "get": {
                    "summary": "One task",
                    "parameters": [task_id],
                    "responses": {**one_task, **_errors(*common, 404)},
                }
            },
            "/api/tasks/{task_id}/submit": action("Check the uploaded input, pin it and queue the task"),
            "/api/tasks/{task_id}/retry": action("Queue a failed task again"),
            "/api/tasks/{task_id}/cancel": action("Cancel a task that has not finished"),
            "/api/tasks/{task_id}/output": {
                "get": {
                    "summary": "A short-lived download URL for a completed task's output",
                    "parameters": [task_id],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "url": {"type": "string"},
                                    "expires_in": {"type": "integer"},
                                    "filename": {"type": "string"},
                                },
                            },
                            "Where to download the output",
                        ),
                        **_errors(*common, 403, 404, 409),
                    },
                }
            },
        },
    }


# --- command line ---------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m s3task.http_api", description="s3task HTTP API helpers")
    sub = parser.add_subparsers(dest="command", required=True)
    h = sub.add_parser("hash-token", help="print the hash of a token for the tokens file (token from stdin if omitted)")
    h.add_argument("token", nargs="?")
    n = sub.add_parser("new-token", help="make a random token and print it with its tokens-file entry")
    n.add_argument("--user", required=True)
    n.add_argument("--role", choices=ROLES, default="user")
    s = sub.add_parser("serve", help="run the API on its own with uvicorn")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)

    if args.command == "hash-token":
        token = args.token if args.token not in (None, "-") else sys.stdin.readline()
        token = token.strip()
        if not token:
            parser.error("no token given")
        print(hash_token(token))
    elif args.command == "new-token":
        Actor(args.user)  # validates the name
        token = secrets.token_urlsafe(32)
        print(f"token: {token}")
        print("tokens-file entry (JSON):")
        print(json.dumps({hash_token(token): {"user": args.user, "role": args.role}}, indent=2))
    else:
        try:
            settings = Settings.load()
        except ValueError as e:  # a SettingsError: one line, before the store is touched
            print(f"error: {_one_line(e)}", file=sys.stderr)
            return 2
        try:
            served = create_app(settings)
        except (S3TaskError, ValueError, OSError) as e:  # the store cannot be opened, a handler module is missing
            print(f"error: {_one_line(e)}", file=sys.stderr)
            return 1
        import uvicorn

        uvicorn.run(served, host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
