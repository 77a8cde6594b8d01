"""The API's operations, and its OpenAPI 3.1 document generated from them and from the models.

:data:`OPERATIONS` is the one list of what the API serves: :class:`s3task.web.api.Api`
makes its routes from it, and :func:`openapi_document` its ``paths``. Bodies are the
schemas pydantic generates from :mod:`s3task.web.models`; each error status names the
codes it can carry (:func:`s3task.web.errors.codes_for`). Nothing in the document is
typed out by hand, so it cannot drift from what is served.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, create_model
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, models_json_schema

from .errors import codes_for
from .inbox_models import InboxChange, InboxList, OneInbox
from .models import (
    Created,
    ErrorBody,
    NewTask,
    OneTask,
    OutputLink,
    OutputQuery,
    RecipeName,
    TaskId,
    TaskPage,
    TaskQuery,
    TaskSteps,
    TaskTypes,
)

REF = "#/components/schemas/{model}"
#: What a request naming a task can meet besides success.
_ON_A_TASK = (400, 401, 403, 404, 409, 500, 503)
#: What pausing or resuming an inbox can meet besides success.
_ON_AN_INBOX = (400, 401, 403, 413, 500, 503)


@dataclass(frozen=True)
class Operation:
    """One route of the API and what it takes and gives."""

    method: str
    path: str  # under /api; {task_id} is a task id
    handler: str  # the name of the :class:`s3task.web.api.Api` method serving it
    summary: str
    ok: type[BaseModel] | None  # the success body; None for this document itself
    status: int = 200
    errors: tuple[int, ...] = ()
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    public: bool = False  # no token needed
    headers: Mapping[str, str] = field(default_factory=dict)  # success headers: name -> meaning
    links: bool = False  # its answer names a task the operations on one task can take
    csv: bool = False  # its answer is a CSV file (ok None), not JSON


OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/openapi.json", "openapi", "This document (no token needed)", None, public=True),
    Operation(
        "GET", "/task-types", "task_types", "Registered task types and their parameters (for forms)", TaskTypes,
        errors=(401,),
    ),
    Operation(
        "POST", "/tasks", "create_task", "Create a task; returns it and a short-lived URL to PUT the input CSV to",
        Created, status=201, errors=(400, 401, 413, 429, 500, 503), body=NewTask,
        headers={"Location": "The new task's path under /api"}, links=True,
    ),
    Operation(
        "GET", "/tasks", "list_tasks", "Tasks, newest first, a page at a time", TaskPage,
        errors=(400, 401, 500, 503), query=TaskQuery,
    ),
    Operation("GET", "/tasks/{task_id}", "get_task", "One task", OneTask, errors=(400, 401, 404, 409, 500, 503)),
    Operation(
        "POST", "/tasks/{task_id}/submit", "submit_task", "Check the uploaded input, pin it and queue the task",
        OneTask, errors=_ON_A_TASK,
    ),
    Operation("POST", "/tasks/{task_id}/retry", "retry_task", "Queue a failed task again", OneTask, errors=_ON_A_TASK),
    Operation(
        "POST", "/tasks/{task_id}/cancel", "cancel_task", "Cancel a task that has not finished", OneTask,
        errors=_ON_A_TASK,
    ),
    Operation(
        "GET", "/tasks/{task_id}/steps", "task_steps", "A \"steps\" task's list of steps (kept beside its record)",
        TaskSteps, errors=(400, 401, 404, 409, 500, 503),
    ),
    Operation(
        "GET", "/tasks/{task_id}/output", "task_output", "A short-lived download URL for a completed task's output",
        OutputLink, errors=_ON_A_TASK, headers={"Cache-Control": "no-store: the URL is fresh each time"},
        query=OutputQuery,
    ),
    Operation(
        "GET", "/tasks/{task_id}/result.csv", "result_csv", "A completed task's result as CSV, streamed on the token "
        "(a link that lasts: Power Query, notebooks)", None, errors=_ON_A_TASK, csv=True,
        headers={"X-S3task-Task": "The task whose result this is"},
    ),
    Operation(
        "GET", "/recipes/{recipe}/latest.csv", "latest_csv", "The newest completed result of a recipe as CSV, "
        "streamed on the token (this month's file, by a link that stays the same)", None, errors=_ON_A_TASK,
        csv=True, headers={"X-S3task-Task": "The task whose result this is"},
    ),
    Operation(
        "GET", "/inboxes", "list_inboxes", "Your recipes' inboxes (then the shared ones): where to drop files, the "
        "files waiting, the last files taken and their tasks", InboxList, errors=(401, 500, 503),
    ),
    Operation(
        "POST", "/inboxes/pause", "pause_inbox", "Stop taking files from a recipe's inbox (its owner, or an operator)",
        OneInbox, errors=_ON_AN_INBOX, body=InboxChange,
    ),
    Operation(
        "POST", "/inboxes/resume", "resume_inbox", "Take files from a paused inbox again, from the next sweep",
        OneInbox, errors=_ON_AN_INBOX, body=InboxChange,
    ),
)  # fmt: skip


class _Schema(GenerateJsonSchema):
    """pydantic's JSON Schema without a title on every field (each model keeps its own)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 description of the API (a fresh copy each call)."""
    return copy.deepcopy(_document())


@functools.cache
def _document() -> dict[str, Any]:
    from ..steps.schema import step_list_schema

    schemas = _schemas()
    schemas["StepList"] = step_list_schema()  # the parameter "steps" of the task type "steps"
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        paths.setdefault("/api" + op.path, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "s3task control API",
            "version": "1",
            "description": "Create, upload, submit, watch and download batch tasks. "
            "Authenticate with 'Authorization: Bearer <token>'. Errors are {code, message}.",
        },
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}, "schemas": schemas},
        "security": [{"bearer": []}],
        "paths": paths,
    }


def _error_model(status: int) -> type[BaseModel]:
    """:class:`ErrorBody` with ``code`` one of the codes this status carries."""
    codes = tuple(codes_for(status))
    doc = f"{HTTPStatus(status).phrase}: {', '.join(codes)}."
    return create_model(f"Error{status}", __base__=ErrorBody, __doc__=doc, code=(Literal[codes], ...))  # type: ignore[arg-type]


def _statuses() -> list[int]:
    return sorted({s for op in OPERATIONS for s in op.errors})


def _schemas() -> dict[str, Any]:
    models: list[tuple[type[BaseModel], JsonSchemaMode]] = []
    for op in OPERATIONS:
        models += [(m, "serialization") for m in (op.ok,) if m is not None]
        models += [(op.body, "validation")] if op.body is not None else []
    models += [(_error_model(status), "serialization") for status in _statuses()]
    _, found = models_json_schema(list(dict.fromkeys(models)), ref_template=REF, schema_generator=_Schema)
    return dict(sorted(found.get("$defs", {}).items()))


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _operation(op: Operation) -> dict[str, Any]:
    parameters = [_path_parameter(name) for name in _path_names(op.path)]
    if op.query is not None:
        parameters += _query_parameters(op.query)
    ok = (
        _json(_ref(op.ok.__name__), HTTPStatus(op.status).phrase) if op.ok else _json({"type": "object"}, "OpenAPI 3.1")
    )
    if op.csv:
        ok = {"description": "The result, as CSV (UTF-8)", "content": {"text/csv": {"schema": {"type": "string"}}}}
    if op.headers:
        ok["headers"] = {name: _header(text) for name, text in op.headers.items()}
    responses: dict[str, Any] = {str(op.status): ok}
    for status in op.errors:
        responses[str(status)] = _json(_ref(f"Error{status}"), _error_model(status).__doc__ or "")
    if op.links:
        ok["links"] = _links()
    if 401 in op.errors:
        responses["401"]["headers"] = {"WWW-Authenticate": _header("Bearer: how to authenticate")}
    spec: dict[str, Any] = {"summary": op.summary, "operationId": op.handler}
    if parameters:
        spec["parameters"] = parameters
    if op.body is not None:
        spec["requestBody"] = {"required": True, "content": {"application/json": {"schema": _ref(op.body.__name__)}}}
    spec["responses"] = responses
    if op.public:
        spec["security"] = []
    return spec


def _header(description: str) -> dict[str, Any]:
    return {"description": description, "required": True, "schema": {"type": "string"}}


def _links() -> dict[str, Any]:
    """OpenAPI links from an answer holding a task to every operation on one task (what to do next)."""
    return {
        op.handler: {"operationId": op.handler, "parameters": {"task_id": "$response.body#/task/task_id"}}
        for op in OPERATIONS
        if _path_names(op.path) == ["task_id"]
    }


def _path_names(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{") and part.endswith("}")]


_PATH_PARAMETERS: dict[str, Any] = {"task_id": TaskId, "recipe": RecipeName}


def _path_parameter(name: str) -> dict[str, Any]:
    schema = TypeAdapter(_PATH_PARAMETERS[name]).json_schema(schema_generator=_Schema)
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template=REF, schema_generator=_Schema)
    parameters = []
    for name, prop in schema["properties"].items():
        prop = dict(prop)
        description = prop.pop("description", None)
        # An optional parameter is one left out, never a JSON null: keep the branch that is not null.
        options = [s for s in prop.pop("anyOf", []) if s != {"type": "null"}]
        if options:
            prop = {**options[0], **prop}
        if prop.get("default", "") is None:
            del prop["default"]
        parameter = {"name": name, "in": "query", "required": name in schema.get("required", ()), "schema": prop}
        if description:
            parameter["description"] = description
        parameters.append(parameter)
    return parameters
