"""What the inbox tests share (tests/contract/test_inboxes.py, tests/system/test_inbox_workers.py):
a recipe to drop files for, and stores that move their clock, die at a chosen write, or count calls."""

from __future__ import annotations

import collections
from datetime import timedelta
from typing import Any

from s3task.layout import Layout
from s3task.store.base import PutMode
from s3task.tasks import Actor, TaskService
from s3task.tasks.recipes import Recipe

ANN = Actor("ann")
OPERATOR = Actor("root", operator=True)
LAYOUT = Layout("batch-tasks")
CSV = b"id,name,email\n1,ada,ada@example.com\n2,bob,bob@example.com\n"


def recipe(
    service: TaskService, actor: Actor = ANN, name: str = "CRM weekly", shared: bool = False
) -> tuple[Recipe, str]:
    """A recipe made from a copy task of :data:`CSV`, and its inbox's id."""
    task = service.submit_file(actor, "first", "copy", None, CSV)
    saved = service.recipes.save(actor, name, task.task_id, shared=shared)
    return saved, service.inboxes.id_of(saved)


def drop(store: Any, recipe_id: str, name: str, data: bytes = CSV) -> str:
    """Drop a file as another system would (one PUT); its key."""
    key = LAYOUT.inbox_prefix(recipe_id) + name
    store.put(key, data, PutMode.OVERWRITE)
    return key


def tasks_named(service: TaskService, name: str) -> list[Any]:
    return [t for t in service.list(OPERATOR, limit=200).tasks if t.task_name == name]


def inbox_keys(store: Any, recipe_id: str) -> list[str]:
    return store.list_keys(LAYOUT.inbox_prefix(recipe_id))


class Died(BaseException):
    """A process dying at a store call: nothing after it runs (no ``except Exception`` catches it)."""


class Wrapped:
    """A store passing every call to ``inner``, its clock ``later`` seconds ahead."""

    def __init__(self, inner: Any, later: float = 0.0) -> None:
        self.inner, self.later = inner, later

    def now(self) -> Any:
        return self.inner.now() + timedelta(seconds=self.later)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Dying(Wrapped):
    """A store whose process dies at its ``at``-th write (put, delete or a streamed write; from 0): the
    write does not happen. ``at=None``: it never dies, and :attr:`writes` counts them all."""

    def __init__(self, inner: Any, at: int | None = None) -> None:
        super().__init__(inner)
        self.at, self.writes = at, 0
        self.done: list[str] = []

    def _write(self, what: str) -> None:
        if self.at is not None and self.writes == self.at:
            raise Died(what)
        self.writes += 1
        self.done.append(what)

    def put(self, key: str, *args: Any, **kwargs: Any) -> Any:
        self._write(f"put {key}")
        return self.inner.put(key, *args, **kwargs)

    def delete(self, key: str, **kwargs: Any) -> Any:
        self._write(f"delete {key}")
        return self.inner.delete(key, **kwargs)

    def open_write(self, key: str, *args: Any, **kwargs: Any) -> Any:
        self._write(f"write {key}")
        return self.inner.open_write(key, *args, **kwargs)


class Counting(Wrapped):
    """A store counting its calls by name (``list_keys``, ``get``, ``put``…) in :attr:`calls`."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.calls: collections.Counter[str] = collections.Counter()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if not callable(found) or name in ("now", "description"):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return found(*args, **kwargs)

        return counted
