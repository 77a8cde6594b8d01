"""The one object the pages, the CLI and the HTTP API call: :class:`TaskService`, made of its parts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InvalidInput
from ..layout import Layout
from ..record import Records, StateHook
from ..store.base import ObjectStore
from . import access, recipes
from .access import Actor
from .corrections import Corrections
from .input_check import header_of
from .inputs import Created, Inputs
from .limits import CreateLimits
from .outputs import Outputs
from .recipes import Recipe, Recipes
from .resumable import Resumable
from .transitions import Transitions
from .urls import Urls, UrlSigner


class TaskService:
    """Everything a user can do to tasks, each call answered by the part whose job it is.

    ``hook``: who hears of the state changes this service writes (s3task.notify's notifier, built from
    the settings by whoever builds the service); None: nobody, whatever the environment says.
    ``url_signer``: makes transfer URLs where the store has no presigned ones (the local store).
    """

    def __init__(
        self,
        store: ObjectStore,
        layout: Layout,
        *,
        max_attempts: int = 3,
        url_seconds: int = 900,
        url_signer: UrlSigner | None = None,
        on_queued: Callable[[str], None] | None = None,
        hook: StateHook | None = None,
        limits: CreateLimits | None = None,
    ) -> None:
        self.store, self.layout = store, layout
        self.records = Records(store, layout, hook)
        self.urls = Urls(store, url_seconds, url_signer)
        self.transitions = Transitions(self.records, max_attempts=max_attempts, limits=limits)
        self.transitions.on_queued = on_queued
        self.inputs = Inputs(self.transitions, self.urls)
        self.outputs = Outputs(self.transitions, self.urls)
        self.recipes = Recipes(store, layout)  # saved settings for files that come back (s3task.tasks.recipes)
        #: uploads that can be continued after an interruption (the CLI's, and a browser's in parts)
        self.resumable = Resumable(self.transitions, self.inputs)
        # who may act
        self.may_act = access.may_act
        self.can_cancel = access.can_cancel
        self.can_retry = access.can_retry
        # the way through the states, and looking at tasks
        self.submit = self.transitions.submit
        self.get = self.transitions.get
        self.list = self.transitions.list
        self.cancel = self.transitions.cancel
        self.retry = self.transitions.retry
        # the input
        self.submit_file = self.inputs.submit_file
        self.upload_input = self.inputs.upload_input
        self.finish_upload = self.inputs.finish_upload
        self.abandon_upload = self.inputs.abandon_upload
        self.create_multipart = self.inputs.create_multipart
        self.presign_parts = self.inputs.presign_parts
        self.complete_multipart = self.inputs.complete_multipart
        self.abort_multipart = self.inputs.abort_multipart
        # the output
        self.output_filename = self.outputs.output_filename
        self.output_url = self.outputs.output_url
        self.open_output = self.outputs.open_output
        self.export_state = self.outputs.export_state
        self.prepare_output = self.outputs.prepare_output
        self.ensure_output = self.outputs.ensure_output
        self.copy_job = self.outputs.copy_job
        self.read_output = self.outputs.read_output
        self.output_columns = self.outputs.output_columns
        self.query_output = self.outputs.query_output
        self.view_state = self.outputs.view_state
        self.prepare_view = self.outputs.prepare_view
        self.view_url = self.outputs.view_url
        self.exports = self.outputs.exports
        # a task's rows with errors sent back corrected, as a new task linked to it; their combined result
        self.corrections = Corrections(self.inputs, self.outputs)
        self.submit_correction = self.corrections.submit

    def create(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None = None,
        input_format: Mapping[str, Any] | None = None,
        fingerprint: Mapping[str, Any] | None = None,
    ) -> Created:
        """A new task waiting for its input (see :meth:`Transitions.create`), and where a browser may send it;
        ``fingerprint``: the file's (s3task.fingerprint), recorded on the task so its upload can be continued."""
        record = self.transitions.prepare(actor, name, task_type, payload, input_format, fingerprint)
        # Its upload URL before the record: a store that cannot sign one now (Azure not answering for a
        # user delegation key) refuses the create with nothing written, not a task left waiting for a file.
        created = self.inputs.created(record)
        return dataclasses.replace(created, record=self.transitions.store_new(actor, record))

    def save_recipe(
        self, actor: Actor, name: str, task_id: str, *, shared: bool = False, replace: bool = False
    ) -> Recipe:
        """A recipe made from the task ``task_id`` (submitted: its format and columns are settled)."""
        record = self.transitions.get(actor, task_id)
        access.require(actor, record, "make a recipe of")
        if record.input_etag is None:
            raise InvalidInput(f"task {task_id} was never submitted, so its file's format is not known yet")
        recipe = recipes.from_task(record, name, header_of(self.store, record), shared=shared)
        return self.recipes.save(actor, recipe, replace=replace)

    @property
    def on_queued(self) -> Callable[[str], None] | None:
        """Called with the task id after a submit or retry has queued it (the app wakes its embedded worker)."""
        return self.transitions.on_queued

    @on_queued.setter
    def on_queued(self, hook: Callable[[str], None] | None) -> None:
        self.transitions.on_queued = hook

    @property
    def supports_multipart(self) -> bool:
        return self.inputs.supports_multipart

    @property
    def parts_need_etags(self) -> bool:
        return self.inputs.parts_need_etags

    @property
    def url_seconds(self) -> int:
        return self.urls.seconds

    @property
    def url_signer(self) -> UrlSigner | None:
        return self.urls.signer

    @property
    def max_attempts(self) -> int:
        return self.transitions.max_attempts
