"""A store whose hooks run one side of a race in the middle of the other (tests/system/test_bell.py,
tests/unit/test_bell_rings.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from s3task.layout import Layout


class Hooked:
    """A store that runs ``after_list`` once a listing of ``active/`` has its answer, and
    ``before_put[key]`` before a PUT of that key; everything else goes straight through."""

    def __init__(self, inner: Any, layout: Layout) -> None:
        self.inner = inner
        self.active_root = layout.active_root
        self.after_list: Callable[[], None] | None = None
        self.before_put: dict[str, Callable[[], None]] = {}

    def list_keys(self, prefix: str, **kw: Any) -> list[str]:
        keys = self.inner.list_keys(prefix, **kw)
        hook, self.after_list = (self.after_list, None) if prefix == self.active_root else (None, self.after_list)
        if hook:
            hook()
        return keys

    def put(self, key: str, *args: Any, **kw: Any) -> Any:
        hook = self.before_put.pop(key, None)
        if hook:
            hook()
        return self.inner.put(key, *args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
