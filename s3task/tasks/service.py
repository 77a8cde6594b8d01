"""The one door the pages, the CLI and the HTTP API come through: :class:`TaskService`.

Each method is one thing a user (or an operator's tool) does, and owns the whole of it; the parts that
do the work (the lifecycle's transitions, the input, the output, corrections, recipes, uploads that
continue, a browser's upload) are private to it. What callers hold is values: records, plans, answers.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, BinaryIO

from .. import query
from ..fingerprint import Fingerprint
from ..layout import Layout
from ..record import RecipeRef, TaskRecord
from ..records import Records, StateHook
from ..store.base import ObjectMeta, ObjectStore
from . import access
from .access import Actor
from .browser_uploads import BrowserUploads, UploadPlan
from .charts import Charts
from .comparisons import Comparisons
from .corrections import EDITABLE_ROWS, Corrections
from .inboxes import Inboxes
from .inputs import Created, Inputs
from .limits import CreateLimits
from .looking import Page
from .outputs import Outputs
from .recipe_shelf import RecipeShelf
from .recipes import Recipe, Recipes
from .resumable import Resumable
from .step_lists import StepLists
from .transitions import Transitions
from .urls import Urls, UrlSigner

if TYPE_CHECKING:
    import pandas as pd

    from .. import exports
    from ..csvio import AskedFormat


class TaskService:
    """Everything a user can do to tasks, one method an action (see the module).

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
        self._store, self._layout = store, layout
        self._records = Records(store, layout, hook)
        self._urls = Urls(store, url_seconds, url_signer)
        self._transitions = Transitions(self._records, max_attempts=max_attempts, limits=limits)
        self._transitions.on_queued = on_queued
        self._inputs = Inputs(self._transitions, self._urls)
        self._outputs = Outputs(self._transitions, self._urls)
        self._recipes = Recipes(store, layout)
        self._resumable = Resumable(self._transitions, self._inputs)  # uploads that continue after a break
        self._browser = BrowserUploads(self._inputs, self._resumable)
        self._corrections = Corrections(self._inputs, self._outputs)  # rows with errors sent back corrected
        self.steps = StepLists(self._transitions, self._inputs)  # step lists before they run: a public part
        self.inboxes = Inboxes(self._transitions, self._recipes)  # files dropped for recipes: a public part too
        self.recipes = RecipeShelf(store, self._transitions, self._recipes)  # saved settings: a public part
        self.charts = Charts(self)  # a column of a result charted over every row: a public part
        self.compares = Comparisons(self._transitions, self._inputs, self._outputs)  # results compared: public

    # --- what the service works on ------------------------------------------------------------------------

    @property
    def store(self) -> ObjectStore:
        """The object store, for what works on the store itself (the local store's ``/transfer`` routes)."""
        return self._store

    @property
    def layout(self) -> Layout:
        """Where each object of a task lives (a value: key names only)."""
        return self._layout

    @property
    def store_description(self) -> str:
        """The store in words ("S3 bucket tasks", "local directory ./s3task-data")."""
        return self._store.description

    def now(self) -> datetime:
        """The store's clock, which leases and the pages' "2 minutes ago" follow."""
        return self._store.now()

    # --- who may act ----------------------------------------------------------------------------------------

    may_act = staticmethod(access.may_act)
    can_cancel = staticmethod(access.can_cancel)
    can_retry = staticmethod(access.can_retry)

    # --- a task's way through its states, and looking at tasks ---------------------------------------------

    def create(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None = None,
        input_format: AskedFormat | None = None,
        fingerprint: Mapping[str, Any] | None = None,
        *,
        recipe: Recipe | None = None,
    ) -> Created:
        """A new task waiting for its input, and where a browser may send it (``Inputs.create``). ``recipe``:
        the one its settings came from (recipes.applied), named on the record."""
        made_from = self._made_from(recipe)
        return self._inputs.create(actor, name, task_type, payload, input_format, fingerprint, recipe=made_from)

    def _made_from(self, recipe: Recipe | None) -> RecipeRef | None:
        return None if recipe is None else self._recipes.ref(recipe)

    def submit(self, actor: Actor, task_id: str, *, size: int | None = None) -> TaskRecord:
        """Queue a task whose input is stored, once its file is checked."""
        return self._transitions.submit(actor, task_id, size=size)

    def get(self, actor: Actor, task_id: str, *, fresh: bool = False) -> TaskRecord:
        return self._transitions.get(actor, task_id, fresh=fresh)

    def list(self, actor: Actor, *, limit: int = 50, cursor: str | None = None, mine: bool = False) -> Page:
        """The newest tasks first, a page at a time."""
        return self._transitions.list(actor, limit=limit, cursor=cursor, mine=mine)

    def cancel(self, actor: Actor, task_id: str) -> TaskRecord:
        """Cancel the task; one still waiting for its file also loses what was sent of it (tasks/unsent.py)."""
        return self._transitions.cancel(actor, task_id)

    def retry(self, actor: Actor, task_id: str) -> TaskRecord:
        return self._transitions.retry(actor, task_id)

    # --- the input: sent through the caller ----------------------------------------------------------------

    def submit_file(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None,
        stream: BinaryIO | bytes | Iterable[bytes],
        input_format: AskedFormat | None = None,
        fingerprint: Mapping[str, Any] | None = None,
        *,
        recipe: Recipe | None = None,
    ) -> TaskRecord:
        """Create a task, store its input from ``stream`` and queue it; on failure no task is left behind."""
        made_from = self._made_from(recipe)
        return self._inputs.submit_file(
            actor, name, task_type, payload, stream, input_format, fingerprint, recipe=made_from
        )

    def upload_input(self, actor: Actor, task_id: str, stream: BinaryIO | bytes | Iterable[bytes]) -> ObjectMeta:
        return self._inputs.upload_input(actor, task_id, stream)

    def finish_upload(
        self,
        actor: Actor,
        task_id: str,
        *,
        size: int | None = None,
        upload_id: str | None = None,
        parts: Sequence[tuple[int, str]] = (),
    ) -> TaskRecord:
        """The file is in the store (sent by a client of the API): join its parts, check it, queue the task."""
        return self._inputs.finish_upload(actor, task_id, size=size, upload_id=upload_id, parts=parts)

    def abandon_upload(self, actor: Actor, task_id: str, upload_id: str | None = None) -> None:
        """Drop an upload that will not finish: its parts, and the task made for it."""
        self._inputs.abandon_upload(actor, task_id, upload_id)

    @property
    def supports_multipart(self) -> bool:
        return self._inputs.supports_multipart

    @property
    def parts_need_etags(self) -> bool:
        return self._inputs.parts_need_etags

    def create_multipart(self, actor: Actor, task_id: str) -> str:
        return self._inputs.create_multipart(actor, task_id)

    def presign_parts(
        self, actor: Actor, task_id: str, upload_id: str, numbers: Iterable[int], *, expires: int | None = None
    ) -> builtins.list[str]:
        return self._inputs.presign_parts(actor, task_id, upload_id, numbers, expires=expires)

    def complete_multipart(
        self, actor: Actor, task_id: str, upload_id: str, parts: builtins.list[tuple[int, str]]
    ) -> ObjectMeta:
        return self._inputs.complete_multipart(actor, task_id, upload_id, parts)

    def abort_multipart(self, actor: Actor, task_id: str, upload_id: str) -> None:
        self._inputs.abort_multipart(actor, task_id, upload_id)

    # --- the input: an upload that continues (the CLI's) ---------------------------------------------------

    def uploads_in_parts(self, size: int) -> bool:
        """Whether a file of ``size`` bytes goes in parts, so that an upload that stops can continue."""
        return self._resumable.in_parts(size)

    def waiting_upload(self, actor: Actor, name: str, task_type: str, file: Fingerprint) -> TaskRecord | None:
        """The task of this user's still waiting for this file (refuses a different file under its name)."""
        return self._resumable.find(actor, name, task_type, file)

    def submit_resumable(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None,
        stream: BinaryIO,
        file: Fingerprint,
        input_format: AskedFormat | None = None,
        *,
        recipe: Recipe | None = None,
    ) -> TaskRecord:
        """As :meth:`submit_file`, the upload noted on the task, so that it continues if it stops."""
        made_from = self._made_from(recipe)
        return self._resumable.submit(actor, name, task_type, payload, stream, file, input_format, recipe=made_from)

    def unfinished_uploads(self, actor: Actor) -> builtins.list[TaskRecord]:
        """This user's tasks of the last week whose upload stopped and can be continued, newest first."""
        return self._resumable.waiting(actor)

    def resume_upload(self, actor: Actor, record: TaskRecord, stream: BinaryIO, file: Fingerprint) -> TaskRecord:
        """Send the rest of the file a waiting task is for, and queue it."""
        return self._resumable.resume(actor, record, stream, file)

    # --- the input: a browser's upload straight to the store (s3task.tasks.browser_uploads) ---------------

    def begin_browser_upload(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None,
        input_format: AskedFormat | None,
        size: int,
        file: Fingerprint | None = None,
        *,
        recipe: Recipe | None = None,
    ) -> UploadPlan:
        """A new task, and where the browser sends its file (NoUploadLink: send it through the app)."""
        made_from = self._made_from(recipe)
        return self._browser.begin(actor, name, task_type, payload, input_format, size, file, recipe=made_from)

    def browser_upload_link(self, actor: Actor, task_id: str) -> str | None:
        """Where a browser may continue the task's upload: None if not waiting, not this user's, or no link now."""
        record = self._transitions.get(actor, task_id)
        if record.status != "created" or not access.may_act(actor, record):
            return None
        if Fingerprint.from_dict(record.input_fingerprint) is None:
            return None
        return self._browser.link(record)[0]

    def same_file(self, record: TaskRecord, file: Fingerprint) -> None:
        """Refuse, in words, a file that is not the one the waiting task ``record`` is for."""
        self._resumable.require_same(record, file)

    def continue_browser_upload(self, actor: Actor, task_id: str, file: Fingerprint) -> UploadPlan:
        """Where the browser sends the rest of the file the task waits for (this user's; the same file)."""
        return self._browser.resume(actor, self._inputs.uploadable(actor, task_id), file)

    def finish_browser_upload(self, actor: Actor, plan: UploadPlan, sent: Iterable[tuple[Any, Any]] = ()) -> TaskRecord:
        return self._browser.finish(actor, plan, sent)

    def browser_upload_stopped(self, actor: Actor, plan: UploadPlan, *, interrupted: bool) -> bool:
        """Kept to be continued (True), or given up (False)."""
        return self._browser.stopped(actor, plan, interrupted=interrupted)

    def give_up_browser_upload(self, actor: Actor, plan: UploadPlan) -> None:
        self._browser.give_up(actor, plan)

    # --- the output ------------------------------------------------------------------------------------------

    output_filename = staticmethod(Outputs.output_filename)

    def output_url(self, actor: Actor, task_id: str, variant: exports.Variant = "csv") -> str | None:
        return self._outputs.output_url(actor, task_id, variant)

    def open_output(
        self, actor: Actor, task_id: str, variant: exports.Variant = "csv"
    ) -> AbstractContextManager[BinaryIO]:
        return self._outputs.open_output(actor, task_id, variant)

    def output_size(self, actor: Actor, task_id: str) -> int:
        """The size of the task's stored output, in bytes (NotFound: it is no longer in the store)."""
        record = self._transitions.get(actor, task_id)
        access.require(actor, record, "download the result of")
        return self._store.head(record.output_object_path or "").size

    def export_state(self, actor: Actor, task_id: str, variant: exports.Variant) -> exports.CopyState:
        return self._outputs.export_state(actor, task_id, variant)

    def prepare_output(self, actor: Actor, task_id: str, variant: exports.Variant) -> exports.CopyState:
        return self._outputs.prepare_output(actor, task_id, variant)

    def ensure_output(
        self, actor: Actor, task_id: str, variant: exports.Variant, *, timeout: float | None = None
    ) -> None:
        self._outputs.ensure_output(actor, task_id, variant, timeout=timeout)

    def copy_job(self, actor: Actor, task_id: str, variant: exports.Variant) -> Future[ObjectMeta] | None:
        return self._outputs.copy_job(actor, task_id, variant)

    def read_output(
        self, actor: Actor, task_id: str, rows: int = 100, *, errors_only: bool = False, exact: bool = False
    ) -> pd.DataFrame:
        return self._outputs.read_output(actor, task_id, rows, errors_only=errors_only, exact=exact)

    def output_columns(self, actor: Actor, task_id: str) -> builtins.list[str]:
        return self._outputs.output_columns(actor, task_id)

    def query_output(self, actor: Actor, task_id: str, question: query.Query) -> query.Answer:
        return self._outputs.query_output(actor, task_id, question)

    def view_state(self, actor: Actor, task_id: str, question: query.Query, suffix: str) -> exports.CopyState:
        return self._outputs.view_state(actor, task_id, question, suffix)

    def prepare_view(self, actor: Actor, task_id: str, question: query.Query, suffix: str) -> exports.CopyState:
        return self._outputs.prepare_view(actor, task_id, question, suffix)

    def view_url(self, actor: Actor, task_id: str, question: query.Query, suffix: str) -> str | None:
        return self._outputs.view_url(actor, task_id, question, suffix)

    # --- corrections: the rows with errors sent back, and the combined result ------------------------------

    def submit_correction(self, actor: Actor, task_id: str, data: bytes) -> TaskRecord:
        return self._corrections.submit(actor, task_id, data)

    def corrections_of(self, actor: Actor, task_id: str) -> builtins.list[TaskRecord]:
        return self._corrections.of(actor, task_id)

    def rows_to_correct(
        self, actor: Actor, task_id: str, limit: int = EDITABLE_ROWS
    ) -> tuple[builtins.list[str], builtins.list[builtins.list[str]]]:
        return self._corrections.rows_to_correct(actor, task_id, limit)

    def combined_filename(self, record: TaskRecord, excel: bool = False) -> str:
        return self._corrections.combined_filename(record, excel)

    def combined_state(self, actor: Actor, task_id: str, excel: bool = False) -> exports.CopyState:
        return self._corrections.combined_state(actor, task_id, excel)

    def prepare_combined(self, actor: Actor, task_id: str, excel: bool = False) -> exports.CopyState:
        return self._corrections.prepare_combined(actor, task_id, excel)

    def combined_job(self, actor: Actor, task_id: str, excel: bool = False) -> Future[ObjectMeta] | None:
        return self._corrections.combined_job(actor, task_id, excel)

    def ensure_combined(self, actor: Actor, task_id: str, excel: bool = False) -> None:
        self._corrections.ensure_combined(actor, task_id, excel)

    def open_combined(self, actor: Actor, task_id: str, excel: bool = False) -> AbstractContextManager[BinaryIO]:
        return self._corrections.open_combined(actor, task_id, excel)

    def combined_url(self, actor: Actor, task_id: str, excel: bool = False) -> str | None:
        return self._corrections.combined_url(actor, task_id, excel)

    @property  # the settings it was made with
    def on_queued(self) -> Callable[[str], None] | None:
        """Called with the task id after a submit or retry has queued it (the app wakes its embedded worker)."""
        return self._transitions.on_queued

    @on_queued.setter
    def on_queued(self, hook: Callable[[str], None] | None) -> None:
        self._transitions.on_queued = hook

    @property
    def url_seconds(self) -> int:
        return self._urls.seconds

    @property
    def url_signer(self) -> UrlSigner | None:
        return self._urls.signer

    @property
    def max_attempts(self) -> int:
        return self._transitions.max_attempts
