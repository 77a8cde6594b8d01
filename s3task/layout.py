"""Where everything lives in the store: every key name and key shape, in one place.

```
<prefix>/<task-id>/input.csv              uploaded by the user
<prefix>/<task-id>/status.json            the task record (source of truth)
<prefix>/<task-id>/output-attempt-N.csv   one per attempt, never overwritten
<prefix>/<task-id>/output-attempt-N.rows  (a task type that leaves rows out) each output row's input row
<prefix>/<task-id>/output-attempt-N.summary.json  (a comparison) its counts and per-column summary
<prefix>/<task-id>/output-attempt-N.xlsx  derived copies of the completed output, made on first
             ….exact.csv, ….errors.csv,   request (s3task.exports); create-only, never changed
             ….errors.xlsx, ….parquet
<prefix>/<task-id>/output-attempt-N.combined-D.csv  the output with its corrections' rows in their places
                                                (….combined-D.xlsx: the same as an Excel workbook)
<prefix>/<task-id>/output-attempt-N.chart-D.json  one column's summary over every row (s3task.charts), by a
                                          digest of the column's name; made once from the Parquet copy
<prefix>/<task-id>/corrected-rows.csv     a task of corrected rows (s3task.tasks.corrections): the row in
                                          its original's file that each of its input rows stands for
<prefix>/<task-id>/progress-attempt-N.json  an attempt's latest counts, rewritten every 1.5 s while
                                          they move (s3task.live); kept afterwards (a few hundred bytes)
<prefix>/active/<task-id>                 zero-byte marker: "may need attention"
<prefix>/active-bell                      a few bytes, overwritten after anything becomes claimable
                                          (s3task.markers.ring): an idle worker HEADs it, not active/
<prefix>/by-user/<user>/<task-id>         zero-byte marker: cheap "my tasks" listing
<prefix>/workers/<worker-id>              small JSON: "who is alive"
<prefix>/outbox/pending/<ms>.<task-id>.<revision>.<write-id>.json
                                          a notification being sent (s3task.notify); deleted once sent
<prefix>/outbox/missed/…                  notifications that may not have reached every receiver
<prefix>/recipes/own/<user>/<name>.json   a saved recipe (s3task.tasks.recipes): a person's own,
<prefix>/recipes/shared/<name>.json       or shared by an operator
<prefix>/inbox/<recipe id>/<file>         a file another system dropped for a recipe (s3task.tasks.inboxes);
                                          <recipe id>: own/<user>/<name> or shared/<name>
<prefix>/inbox-taken/<recipe id>/<T>-<D>.json  one per file version seen there (T: inverted ms of its time,
                                          D: a digest of its key, ETag and time): taken once, by its create
<prefix>/inbox-paused/<recipe id>         zero-byte marker: an operator paused that inbox
<prefix>/inbox-lease                      small JSON: which worker sweeps the inboxes, until when
```

Task ids are validated before they are put into a key.

The input's key is ``input.csv`` whatever the file is: it is fixed when the task is made (its
upload URL is signed for it), before the file is seen. An Excel workbook is stored there as it was
uploaded, bytes unchanged; the record's ``input_format`` says which it is (``kind: xlsx``, with the
sheet and header row it is read with; no ``kind``: a CSV).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from .ids import is_task_id, validate_task_id

DEFAULT_PREFIX = "batch-tasks"
STATUS = "status.json"
INPUT = "input.csv"
OUTPUT = "output-attempt-{attempt}.csv"
#: Which input record (0 = the first after the header) each output row came from, for a task type whose
#: output rows are not its input's one for one (``TaskType.numbers_rows``): an Arrow IPC stream of int64.
ROWS = "output-attempt-{attempt}.rows"
#: A comparison's summary (counts, and per column), beside its attempt's output: the page shows it without
#: reading the output (s3task.handlers.compare).
COMPARE_SUMMARY = "output-attempt-{attempt}.summary.json"
PROGRESS = "progress-attempt-{attempt}.json"
CORRECTED_ROWS = "corrected-rows.csv"
#: A task's step list (the ``steps`` parameter), kept beside its record and pinned in it by ETag
#: (s3task.task_steps): a long list does not meet the record's parameters cap.
STEPS = "steps.json"
ACTIVE = "active"
BELL = "active-bell"
BY_USER = "by-user"
WORKERS = "workers"
OUTBOX = "outbox"
RECIPES = "recipes"
INBOX = "inbox"
INBOX_TAKEN = "inbox-taken"
INBOX_PAUSED = "inbox-paused"
INBOX_LEASE = "inbox-lease"
#: A recipe's id in an inbox's key: ``shared/<name>`` or ``own/<user, %-encoded>/<name>`` (s3task.tasks.recipes.slug).
RECIPE_ID_PATTERN = re.compile(r"(shared|own/[^/\s]{1,600})/[\w%-]{1,240}")
#: The largest status.json (or other small JSON object) read as a record; larger ones are refused. The
#: bucket's lifecycle rule keeps objects up to this size (s3task.store.bucket), so records are never expired.
MAX_RECORD_BYTES = 256 * 1024
CSV_TYPE = "text/csv"
PARQUET_TYPE = "application/vnd.apache.parquet"
#: Derived copies of an attempt's output (s3task.exports), by variant.
EXPORTS = {
    "exact": "output-attempt-{attempt}.exact.csv",
    "errors": "output-attempt-{attempt}.errors.csv",
    "errors-xlsx": "output-attempt-{attempt}.errors.xlsx",
    "xlsx": "output-attempt-{attempt}.xlsx",
    "parquet": "output-attempt-{attempt}.parquet",
}
#: A "download this view" copy (s3task.query): the rows of an output matching one question, by its digest.
VIEW = "output-attempt-{attempt}.view-{digest}.{suffix}"
#: The output combined with its corrections' (s3task.exports.combined), by a digest of the corrections combined;
#: as a CSV (``csv``) or, made from that, an Excel workbook (``xlsx``).
COMBINED = "output-attempt-{attempt}.combined-{digest}.{suffix}"
#: A column's summary for its chart (s3task.charts), by a digest of the column's name and the summary's version.
CHART = "output-attempt-{attempt}.chart-{digest}.json"
XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
WORKER_ID_PATTERN = re.compile(r"[A-Za-z0-9._:@-]{1,128}")


@dataclass(frozen=True)
class Layout:
    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        cleaned = self.prefix.strip("/")
        if not cleaned or ".." in cleaned.split("/"):
            raise ValueError(f"invalid store prefix {self.prefix!r}")
        object.__setattr__(self, "prefix", cleaned)

    @property
    def root(self) -> str:
        return self.prefix + "/"

    def task_prefix(self, task_id: str) -> str:
        return f"{self.prefix}/{validate_task_id(task_id)}/"

    def status_key(self, task_id: str) -> str:
        return self.task_prefix(task_id) + STATUS

    def input_key(self, task_id: str) -> str:
        return self.task_prefix(task_id) + INPUT

    def steps_key(self, task_id: str) -> str:
        """Where a task's step list is kept (:data:`STEPS`)."""
        return self.task_prefix(task_id) + STEPS

    def corrected_rows_key(self, task_id: str) -> str:
        """A task of corrected rows: which row of its original's file each of its input rows stands for."""
        return self.task_prefix(task_id) + CORRECTED_ROWS

    def output_key(self, task_id: str, attempt: int) -> str:
        return self.task_prefix(task_id) + OUTPUT.format(attempt=int(attempt))

    def rows_key(self, task_id: str, attempt: int) -> str:
        """Where an attempt's output says which input row each of its rows came from (:data:`ROWS`)."""
        return self.task_prefix(task_id) + ROWS.format(attempt=int(attempt))

    @staticmethod
    def rows_key_of(output_key: str) -> str:
        """:meth:`rows_key` of the attempt whose output is ``output_key``."""
        return output_key.removesuffix(".csv") + ".rows"

    @staticmethod
    def summary_key_of(output_key: str) -> str:
        """Where a comparison keeps its summary beside the output ``output_key`` (:data:`COMPARE_SUMMARY`)."""
        return output_key.removesuffix(".csv") + ".summary.json"

    def export_key(self, task_id: str, attempt: int, variant: str) -> str:
        """Where the ``variant`` copy (a key of :data:`EXPORTS`) of an attempt's output is kept."""
        return self.task_prefix(task_id) + EXPORTS[variant].format(attempt=int(attempt))

    def view_key(self, task_id: str, attempt: int, digest: str, suffix: str) -> str:
        """Where the rows of an attempt's output matching one question (``digest``) are kept, as ``suffix``."""
        return self.task_prefix(task_id) + VIEW.format(attempt=int(attempt), digest=digest, suffix=suffix)

    def combined_key(self, task_id: str, attempt: int, digest: str, suffix: str = "csv") -> str:
        """Where an attempt's output combined with the corrections named by ``digest`` is kept, as ``suffix``."""
        return self.task_prefix(task_id) + COMBINED.format(attempt=int(attempt), digest=digest, suffix=suffix)

    def chart_key(self, task_id: str, attempt: int, digest: str) -> str:
        """Where the summary of one column (``digest``: s3task.charts.digest) of an attempt's output is kept."""
        if not re.fullmatch(r"[0-9a-f]{16,64}", digest):
            raise ValueError(f"invalid digest {digest!r}")
        return self.task_prefix(task_id) + CHART.format(attempt=int(attempt), digest=digest)

    def progress_key(self, task_id: str, attempt: int) -> str:
        """The running attempt's live counts, written by its worker every few seconds (s3task.live)."""
        return self.task_prefix(task_id) + PROGRESS.format(attempt=int(attempt))

    @property
    def active_root(self) -> str:
        return f"{self.prefix}/{ACTIVE}/"

    def active_key(self, task_id: str) -> str:
        return self.active_root + validate_task_id(task_id)

    @property
    def bell_key(self) -> str:
        """The object whose ETag changes whenever a task becomes claimable (s3task.markers.ring)."""
        return f"{self.prefix}/{BELL}"

    def user_root(self, user: str) -> str:
        return f"{self.prefix}/{BY_USER}/{quote(user, safe='')}/"

    def user_key(self, user: str, task_id: str) -> str:
        return self.user_root(user) + validate_task_id(task_id)

    @property
    def workers_root(self) -> str:
        return f"{self.prefix}/{WORKERS}/"

    def worker_key(self, worker_id: str) -> str:
        if not WORKER_ID_PATTERN.fullmatch(worker_id):
            raise ValueError(f"invalid worker id {worker_id!r}")
        return self.workers_root + worker_id

    def outbox_root(self, kind: str = "pending") -> str:
        """Notifications in flight (``pending``) or given up on (``missed``): see s3task.notify."""
        if kind not in ("pending", "missed"):
            raise ValueError(f"invalid outbox {kind!r}")
        return f"{self.prefix}/{OUTBOX}/{kind}/"

    def outbox_key(self, written_ms: int, task_id: str, revision: int, write_id: str, kind: str = "pending") -> str:
        """One notification: when it was written (store clock, ms), for which record write."""
        if not re.fullmatch(r"[0-9a-f]{1,64}", write_id):
            raise ValueError(f"invalid write id {write_id!r}")
        name = f"{int(written_ms):013d}.{validate_task_id(task_id)}.{int(revision)}.{write_id}.json"
        return self.outbox_root(kind) + name

    def recipe_root(self, owner: str | None) -> str:
        """The folder of ``owner``'s recipes, or (None) of the shared ones."""
        where = "shared" if owner is None else f"own/{quote(owner, safe='')}"
        return f"{self.prefix}/{RECIPES}/{where}/"

    def recipe_key(self, owner: str | None, slug: str) -> str:
        """One recipe; ``slug`` is its name made safe for a key (s3task.tasks.recipes.slug)."""
        if not re.fullmatch(r"[\w%-]{1,240}", slug):
            raise ValueError(f"invalid recipe key name {slug!r}")
        return self.recipe_root(owner) + slug + ".json"

    @staticmethod
    def recipe_id(owner: str | None, slug: str) -> str:
        """The id of ``owner``'s recipe (None: a shared one) named ``slug``, as its inbox's key has it."""
        return "shared/" + slug if owner is None else f"own/{quote(owner, safe='')}/{slug}"

    def recipe_key_of(self, recipe_id: str) -> str:
        """The key of the recipe whose id is ``recipe_id`` (:meth:`recipe_id`)."""
        return f"{self.prefix}/{RECIPES}/{_recipe_id(recipe_id)}.json"

    @property
    def inbox_root(self) -> str:
        return f"{self.prefix}/{INBOX}/"

    def inbox_prefix(self, recipe_id: str) -> str:
        """Where files for the recipe ``recipe_id`` are dropped."""
        return self.inbox_root + _recipe_id(recipe_id) + "/"

    def inbox_file(self, key: str) -> tuple[str, str] | None:
        """The recipe id and the file's name (the rest of the key) of a key under :attr:`inbox_root`;
        None for a key in no recipe's inbox."""
        rest = key.removeprefix(self.inbox_root)
        cut = 3 if rest.startswith("own/") else 2
        parts = rest.split("/", cut)
        if rest == key or len(parts) <= cut:
            return None
        recipe_id = "/".join(parts[:cut])
        return (recipe_id, parts[cut]) if RECIPE_ID_PATTERN.fullmatch(recipe_id) else None

    def inbox_taken_root(self, recipe_id: str) -> str:
        return f"{self.prefix}/{INBOX_TAKEN}/{_recipe_id(recipe_id)}/"

    def inbox_taken_key(self, recipe_id: str, modified_ms: int, digest: str) -> str:
        """The claim of one version of a file in ``recipe_id``'s inbox: newest first in a listing."""
        if not re.fullmatch(r"[0-9a-f]{16,64}", digest):
            raise ValueError(f"invalid digest {digest!r}")
        return f"{self.inbox_taken_root(recipe_id)}{10**13 - 1 - int(modified_ms):013d}-{digest}.json"

    @property
    def inbox_paused_root(self) -> str:
        return f"{self.prefix}/{INBOX_PAUSED}/"

    def inbox_paused_key(self, recipe_id: str) -> str:
        return self.inbox_paused_root + _recipe_id(recipe_id)

    @property
    def inbox_lease_key(self) -> str:
        """Which worker sweeps the inboxes now, and until when (s3task.tasks.inbox_lease)."""
        return f"{self.prefix}/{INBOX_LEASE}"

    def task_id_of(self, key: str) -> str | None:
        """The task id at the end of a marker key or a task prefix, if there is one."""
        last = key.rstrip("/").rsplit("/", 1)[-1]
        return last if is_task_id(last) else None

    def task_cursor(self, task_id: str) -> str:
        """A ListObjectsV2 start-after that resumes just past ``task_id``'s prefix.

        Every key under ``<prefix>/<id>/`` sorts before ``<prefix>/<id>0``
        ('/' < '0'), and every later id sorts after it.
        """
        return f"{self.prefix}/{validate_task_id(task_id)}0"


def _recipe_id(recipe_id: str) -> str:
    if not RECIPE_ID_PATTERN.fullmatch(recipe_id) or ".." in recipe_id.split("/"):
        raise ValueError(f"invalid recipe id {recipe_id!r}")
    return recipe_id
