"""Where everything lives in the store: every key name and key shape, in one place.

```
<prefix>/<task-id>/input.csv              uploaded by the user
<prefix>/<task-id>/status.json            the task record (source of truth)
<prefix>/<task-id>/output-attempt-N.csv   one per attempt, never overwritten
<prefix>/active/<task-id>                 zero-byte marker: "may need attention"
<prefix>/by-user/<user>/<task-id>         zero-byte marker: cheap "my tasks" listing
<prefix>/workers/<worker-id>              small JSON: "who is alive"
```

Task ids are validated before they are put into a key.
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
ACTIVE = "active"
BY_USER = "by-user"
WORKERS = "workers"
CSV_TYPE = "text/csv"
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

    def output_key(self, task_id: str, attempt: int) -> str:
        return self.task_prefix(task_id) + OUTPUT.format(attempt=int(attempt))

    @property
    def active_root(self) -> str:
        return f"{self.prefix}/{ACTIVE}/"

    def active_key(self, task_id: str) -> str:
        return self.active_root + validate_task_id(task_id)

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
