"""The HTTP control API under ``/api/``: everything the app does, for scripts and other services.

Mount :func:`routes` into the Streamlit app (``st.App(..., routes=routes(settings))``)
or run it on its own::

    uvicorn s3task.http_api:app --factory --host 127.0.0.1 --port 8000

Each route is thin: it authenticates the caller (a bearer token, :mod:`s3task.web.tokens`),
checks the request against its model, calls :class:`s3task.tasks.TaskService` and
answers with a body built through its model (:mod:`s3task.web.models`). The routes
and the OpenAPI document come from one list, :data:`s3task.web.openapi.OPERATIONS`.
The service owns every state transition; responses carry its ``retryable`` /
``cancellable`` verdicts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .. import handlers, metrics, notify
from ..config import Settings
from ..errors import InvalidInput, S3TaskError, SettingsError
from ..record import TaskRecord
from ..store import open_store
from ..tasks import MAX_LIST, Actor, CreateLimits, TaskService, recipes
from ..tasks.recipes import Recipe
from .copywait import CopyWaiters
from .errors import HttpError, json_mount, route_error, s3task_error
from .inbox_models import InboxChange, InboxList, OneInbox, inbox_of
from .lasting import LastingLinks
from .models import (
    Created,
    NewTask,
    OneTask,
    OutputLink,
    OutputQuery,
    Task,
    TaskPage,
    TaskQuery,
    TaskSteps,
    TaskTypeInfo,
    TaskTypes,
    Upload,
    task_of,
)
from .openapi import OPERATIONS, openapi_document
from .tokens import TOKENS_FILE_ENV, TokenTable
from .transfer import UrlSigner, signer_for, transfer_mount

MAX_JSON_BYTES = 64 * 1024
M = TypeVar("M", bound=BaseModel)

#: What a request that does not fit its model is told, by the first field at fault.
_NAME_AND_TYPE = 'give the task a "name" and a "type" (see GET /api/task-types)'
NEW_TASK_MESSAGES = {
    "name": _NAME_AND_TYPE,
    "type": _NAME_AND_TYPE,
    "parameters": '"parameters" must be a JSON object',
    "input_format": '"input_format" is an object with "delimiter" (",", ";", tab, "|" or "detect") and "encoding" '
    '("utf-8", "windows-1252", "utf-16-le", "utf-16-be" or "detect"), and for a workbook "sheet" (a sheet\'s name) '
    'and "header_row" (1 to 1048576)',
}
QUERY_MESSAGES = {
    "limit": f"limit must be a whole number between 1 and {MAX_LIST}",
    "cursor": "that page cursor is not valid; start again from the first page",
    "mine": "mine must be true or false",
}
#: How long a request for a copy of an output (Excel, exact values, rows with errors) waits for it to be made.
PREPARE_WAIT_SECONDS = 20.0
OUTPUT_MESSAGES = {
    "variant": "variant must be one of csv, exact, errors, xlsx, parquet, errors-xlsx, combined, combined-xlsx"
}
INBOX_MESSAGES = {"recipe": 'name the "recipe" (its name, or its inbox\'s id as GET /api/inboxes gives it)'}


class Api(LastingLinks):
    def __init__(self, service: TaskService, tokens: TokenTable) -> None:
        self.service = service
        self.copy_waiters = CopyWaiters()
        self.tokens = tokens

    def routes(self) -> list[Route]:
        """One route per operation of the document."""
        return [Route(op.path, getattr(self, op.handler), methods=[op.method]) for op in OPERATIONS]

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

    def task(self, actor: Actor, record: TaskRecord) -> Task:
        retryable, cancellable = self.service.can_retry(actor, record), self.service.can_cancel(actor, record)
        return task_of(record, retryable=retryable, cancellable=cancellable)

    def _one(self, actor: Actor, record: TaskRecord) -> Response:
        return reply(OneTask(task=self.task(actor, record)))

    # --- endpoints: each calls the TaskService and nothing else ---

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def task_types(self, request: Request) -> Response:
        self.actor(request)
        types = [
            TaskTypeInfo(name=t.name, title=t.title, description=t.description, params=list(t.params))
            for t in handlers.all_types()
        ]
        return reply(TaskTypes(task_types=types))

    async def create_task(self, request: Request) -> Response:
        actor = self.actor(request)
        body = checked(NewTask, await _json_object(request), NEW_TASK_MESSAGES)
        task_type, params, read_as, recipe = await run_in_threadpool(self._what_to_make, actor, body)
        if task_type == "compare":  # made from two results, queued at once: no file to upload
            compared = self.service.compares.create
            old, new, keys = (params.get(n) for n in ("old_task", "new_task", "keys"))
            record = await run_in_threadpool(compared, actor, str(old or ""), str(new or ""), keys, name=body.name)
            location = f"{request.url.path.rstrip('/')}/{record.task_id}"
            return reply(Created(task=self.task(actor, record), upload=None), 201, headers={"Location": location})
        create = self.service.create
        created = await run_in_threadpool(
            lambda: create(actor, body.name, task_type, params, input_format=read_as, recipe=recipe)
        )
        upload = None
        if created.upload_url:
            upload = Upload(
                url=absolute_url(request, created.upload_url),
                method="PUT",
                headers=dict(created.upload_headers),
                expires_in=self.service.url_seconds,
            )
        location = f"{request.url.path.rstrip('/')}/{created.record.task_id}"
        body_out = Created(task=self.task(actor, created.record), upload=upload)
        return reply(body_out, 201, headers={"Location": location})

    def _what_to_make(
        self, actor: Actor, body: NewTask
    ) -> tuple[str, dict[str, Any], dict[str, Any] | None, Recipe | None]:
        """The new task's type, parameters and input format: as given, or a recipe's with what is given on top
        (and the recipe, which the task names)."""
        if body.recipe is None:
            if body.type is None:
                raise InvalidInput(_NAME_AND_TYPE + ', or a "recipe"')
            read_as = body.input_format.model_dump() if body.input_format else None
            return body.type, body.parameters or {}, read_as, None
        recipe = self.service.recipes.get(actor, body.recipe)
        if body.type is not None and body.type != recipe.task_type:
            raise InvalidInput(f"recipe {recipe.name!r} makes {recipe.task_type} tasks, not {body.type}")
        given = body.input_format.model_dump(exclude_unset=True) if body.input_format else None
        params, read_as = recipes.applied(recipe, body.parameters, given)
        return recipe.task_type, params, read_as, recipe

    async def list_tasks(self, request: Request) -> Response:
        actor = self.actor(request)
        query = checked(TaskQuery, dict(request.query_params), QUERY_MESSAGES)
        page = await run_in_threadpool(
            self.service.list, actor, limit=query.limit, cursor=query.cursor, mine=query.mine
        )
        tasks = [self.task(actor, r) for r in page.tasks]
        return reply(TaskPage(tasks=tasks, next_cursor=page.next_cursor, problems=page.problems))

    async def get_task(self, request: Request) -> Response:
        actor = self.actor(request)
        # Fresh: a completed task kept by this process may have had a correction listed on it since.
        got = await run_in_threadpool(lambda: self.service.get(actor, request.path_params["task_id"], fresh=True))
        return self._one(actor, got)

    async def task_steps(self, request: Request) -> Response:
        actor = self.actor(request)
        record = await run_in_threadpool(self.service.get, actor, request.path_params["task_id"])
        if record.task_type != "steps":
            raise InvalidInput(
                f"task {record.task_id} is a {handlers.title_of(record.task_type)!r} task: it has no list of steps"
            )
        params = await run_in_threadpool(self.service.steps.parameters, record)
        return reply(TaskSteps(steps=params.get("steps") or []))

    async def submit_task(self, request: Request) -> Response:
        actor = self.actor(request)
        return self._one(actor, await run_in_threadpool(self.service.submit, actor, request.path_params["task_id"]))

    async def retry_task(self, request: Request) -> Response:
        actor = self.actor(request)
        return self._one(actor, await run_in_threadpool(self.service.retry, actor, request.path_params["task_id"]))

    async def cancel_task(self, request: Request) -> Response:
        actor = self.actor(request)
        return self._one(actor, await run_in_threadpool(self.service.cancel, actor, request.path_params["task_id"]))

    async def task_output(self, request: Request) -> Response:
        actor = self.actor(request)
        task_id = request.path_params["task_id"]
        variant = checked(OutputQuery, dict(request.query_params), OUTPUT_MESSAGES).variant
        # A copy (exact, errors, xlsx, ...) is made on the first request for it, in the background. A request waits
        # for it a while, on the event loop, holding no thread (copywait); a large one (an Excel file takes
        # about 12 s per 100,000 rows) gets 503 output_preparing with Retry-After instead of a connection a
        # proxy would cut, and asks again, as does a request when too many wait already.
        if variant == "combined" or variant == "combined-xlsx":  # ``in`` would not narrow its type
            return await self.combined_output(request, actor, task_id, excel=variant == "combined-xlsx")
        job = await run_in_threadpool(self.service.copy_job, actor, task_id, variant)
        if job is not None:
            await self.copy_waiters.wait(job, PREPARE_WAIT_SECONDS)
        url = await run_in_threadpool(self.service.output_url, actor, task_id, variant)
        if url is None:
            raise HttpError(503, "no_download_url", "this store cannot make download links")
        record = await run_in_threadpool(self.service.get, actor, task_id)
        link = OutputLink(
            url=absolute_url(request, url),
            expires_in=self.service.url_seconds,
            filename=self.service.output_filename(record, variant),
        )
        return reply(link, headers={"Cache-Control": "no-store"})

    async def combined_output(self, request: Request, actor: Actor, task_id: str, *, excel: bool) -> Response:
        """``variant=combined`` (``combined-xlsx``: as an Excel workbook): the output with the rows its corrections
        ran again, made and waited for alike; asked of a correction, its original's."""
        service = self.service
        job = await run_in_threadpool(service.combined_job, actor, task_id, excel)
        if job is not None:
            await self.copy_waiters.wait(job, PREPARE_WAIT_SECONDS)
        url = await run_in_threadpool(service.combined_url, actor, task_id, excel)
        if url is None:
            raise HttpError(503, "no_download_url", "this store cannot make download links")
        record = await run_in_threadpool(service.get, actor, task_id)
        if record.corrects:  # a correction's combined result is its original's, named after it
            record = await run_in_threadpool(service.get, actor, record.corrects)
        name = service.combined_filename(record, excel)
        link = OutputLink(url=absolute_url(request, url), expires_in=service.url_seconds, filename=name)
        return reply(link, headers={"Cache-Control": "no-store"})

    # --- inboxes: each recipe's folder in the store where files dropped become tasks (docs/INBOXES.md) ---

    async def list_inboxes(self, request: Request) -> Response:
        actor = self.actor(request)
        inboxes = await run_in_threadpool(self.service.inboxes.list, actor)
        untaken = await run_in_threadpool(self.service.inboxes.strays) if actor.operator else []
        return reply(InboxList(inboxes=[inbox_of(i) for i in inboxes], untaken=untaken))

    async def pause_inbox(self, request: Request) -> Response:
        actor = self.actor(request)
        which = checked(InboxChange, await _json_object(request), INBOX_MESSAGES).recipe
        return reply(OneInbox(inbox=inbox_of(await run_in_threadpool(self.service.inboxes.pause, actor, which))))

    async def resume_inbox(self, request: Request) -> Response:
        actor = self.actor(request)
        which = checked(InboxChange, await _json_object(request), INBOX_MESSAGES).recipe
        return reply(OneInbox(inbox=inbox_of(await run_in_threadpool(self.service.inboxes.resume, actor, which))))


def reply(body: BaseModel, status: int = 200, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A response whose body is exactly what its model says."""
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=dict(headers or {}))


def checked(model: type[M], data: Mapping[str, Any], messages: Mapping[str, str]) -> M:
    """``data`` as ``model``, or a 400 ``invalid_input`` naming the first field at fault (in declaration order)."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        problems = e.errors()
        unknown = sorted(str(p["loc"][0]) for p in problems if p["type"] == "extra_forbidden" and len(p["loc"]) == 1)
        if unknown:
            message = f"unknown field(s) {', '.join(unknown)}; expected {', '.join(model.model_fields)}"
            raise HttpError(400, "invalid_input", message) from None
        at_fault = {p["loc"][0] for p in problems if p["loc"]}
        name = next((n for n in model.model_fields if n in at_fault), None)
        message = messages.get(name or "") or problems[0]["msg"]
        raise HttpError(400, "invalid_input", message) from None


def _unauthorized(message: str) -> HttpError:
    return HttpError(401, "unauthorized", message, {"WWW-Authenticate": 'Bearer realm="s3task"'})


def absolute_url(request: Request, url: str) -> str:
    """Host-relative transfer URLs (the local store's) made absolute against this server's own address."""
    if not url.startswith("/"):
        return url
    root = request.scope.get("app_root_path", "")
    return f"{request.url.scheme}://{request.url.netloc}{root}{url}"


async def _json_object(request: Request) -> dict[str, Any]:
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
    except RecursionError as e:  # thousands of nested arrays
        raise HttpError(400, "invalid_json", "the request body is nested too deeply") from e
    if not isinstance(data, dict):
        raise HttpError(400, "invalid_json", "the request body must be a JSON object")
    try:  # a lone surrogate ("\\ud800") is valid JSON but no text: refuse it here, not in the store
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        raise HttpError(400, "invalid_json", "the request body holds text that is not valid Unicode") from e
    return data


def _too_large() -> HttpError:
    return HttpError(413, "payload_too_large", f"the request body is larger than {MAX_JSON_BYTES // 1024} KB")


# --- assembly ------------------------------------------------------------------------


def routes(
    settings: Settings, *, service: TaskService | None = None, tokens: TokenTable | None = None
) -> list[BaseRoute]:
    """The API under ``/api`` and, for stores without presigned URLs, the ``/transfer`` routes.

    Pass ``service`` to share the app's TaskService (it should have been made with
    ``url_signer=signer_for(store, key=settings.signing_key)`` on the local store).
    """
    # The tokens file first: an unusable one is a setting error, found before the store is touched.
    tokens = tokens if tokens is not None else TokenTable.from_file(settings.api_tokens_file)
    for module in settings.handlers:  # task types the workers run must be creatable here too
        handlers.load_module(module)
    if service is None:
        store, layout = open_store(settings.store, clock=settings.clock)
        service = TaskService(
            store,
            layout,
            max_attempts=settings.max_attempts,
            url_seconds=settings.url_seconds,
            url_signer=signer_for(store, key=settings.signing_key),
            hook=notify.from_settings(settings),  # the email / webhooks of the state changes made through the API
            limits=CreateLimits.of(settings),
        )
    api = Api(service, tokens)
    errors = {S3TaskError: s3task_error, HTTPException: route_error}
    mounted: list[BaseRoute] = [json_mount("/api", api.routes(), errors)]
    signer = service.url_signer or signer_for(service.store, key=settings.signing_key)
    if signer is not None:
        assert isinstance(signer, UrlSigner), "the /transfer routes check what s3task.web.transfer signed"
        max_bytes = settings.max_upload_mb * 1024 * 1024
        mounted.append(transfer_mount(service.store, service.layout, signer, max_bytes=max_bytes))
    return mounted


def create_app(settings: Settings | None = None, **kwargs: Any) -> Starlette:
    """A standalone ASGI app serving the API (and transfer routes), and its Prometheus metrics at ``/metrics``."""
    metrics.enable()  # count the requests of the store routes() opens
    return Starlette(routes=[*routes(settings or Settings.load(), **kwargs), metrics.route()])


def app() -> Starlette:
    """Factory for ``uvicorn s3task.http_api:app --factory``: settings from ``S3TASK_*``.

    A bad setting is one line on stderr and exit status 2, as for ``python -m s3task.http_api serve``.
    """
    try:
        return create_app(Settings.load())
    except SettingsError as e:  # it names the setting (the tokens file and the notification channels are checked
        # before the store is opened or the API is built)
        print(f"error: {one_line(e)}", file=sys.stderr)
        raise SystemExit(2) from None


def one_line(e: BaseException) -> str:
    return " ".join((str(e) or type(e).__name__).split())
