"""Object stores: the protocol, the backends (S3, Azure Blob, Google Cloud Storage, a local directory), and the
CAS probe.

``open_store`` picks a backend by the URL's scheme from a registry, so a new
backend is one module plus one :func:`register_backend` line; a plain path is
the local directory. :func:`wrap_stores` lets a harness (fault injection,
tracing) wrap every store a process opens, without touching the backends.
Every opener is handed the machine's :class:`~s3task.clock.Clock` the caller
opens with (``Settings.clock``), from which the store's ``now()`` is derived.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from urllib.parse import urlparse

from ..clock import MACHINE, Clock
from ..layout import DEFAULT_PREFIX, Layout
from .base import GetResult, MultipartStore, ObjectMeta, ObjectStore, PutMode

DEFAULT_LOCAL_STORE = "./s3task-data"

__all__ = [
    "DEFAULT_LOCAL_STORE",
    "GetResult",
    "MultipartStore",
    "ObjectMeta",
    "ObjectStore",
    "PutMode",
    "open_store",
    "register_backend",
    "wrap_stores",
]

Opener = Callable[[str, Clock], tuple[ObjectStore, Layout]]
Wrapper = Callable[[ObjectStore], ObjectStore]

_BACKENDS: dict[str, Opener] = {}
_WRAPPERS: list[Wrapper] = []


def register_backend(scheme: str, opener: Opener) -> None:
    """Open URLs ``<scheme>://…`` with ``opener`` (which gets the whole URL and the machine's clock)."""
    _BACKENDS[scheme] = opener


def wrap_stores(wrapper: Wrapper) -> None:
    """Pass every store opened from now on through ``wrapper`` (for test harnesses and tracing)."""
    _WRAPPERS.append(wrapper)


def open_store(url: str | None = None, *, clock: Clock = MACHINE) -> tuple[ObjectStore, Layout]:
    """A store and its layout from a URL: ``s3://bucket/prefix``, ``az://container/prefix``,
    ``gs://bucket/prefix``, ``file://path`` or a local path."""
    url = url or DEFAULT_LOCAL_STORE
    scheme = url.split("://", 1)[0] if "://" in url else "file"
    opener = _BACKENDS.get(scheme)
    if opener is None:
        known = ", ".join(f"{s}://" for s in sorted(_BACKENDS))
        raise ValueError(f"unsupported store URL {url!r} (use {known} or a local path)")
    store, layout = opener(url, clock)
    for wrapper in _WRAPPERS:
        store = wrapper(store)
    return store, layout


def _open_s3(url: str, clock: Clock) -> tuple[ObjectStore, Layout]:
    from .s3 import S3Store

    parsed = urlparse(url)
    if not parsed.netloc:
        raise ValueError(f"{url!r} names no bucket (expected s3://bucket/prefix)")
    return S3Store(parsed.netloc, clock=clock), Layout(parsed.path.strip("/") or DEFAULT_PREFIX)


def _open_azure(url: str, clock: Clock) -> tuple[ObjectStore, Layout]:
    try:
        from .azure import open_azure
    except ImportError as e:  # the SDK is an optional extra: say which, not a traceback
        raise ValueError(f"{url!r} needs azure-storage-blob (pip install 's3task[azure]')") from e

    parsed = urlparse(url)
    if not parsed.netloc:
        raise ValueError(f"{url!r} names no container (expected az://container/prefix)")
    return open_azure(parsed.netloc, parsed.path, clock)


def _open_gcs(url: str, clock: Clock) -> tuple[ObjectStore, Layout]:
    try:
        from .gcs import open_gcs
    except ImportError as e:  # the client is an optional extra: say which, not a traceback
        raise ValueError(f"{url!r} needs google-cloud-storage (pip install 's3task[gcs]')") from e

    parsed = urlparse(url)
    if not parsed.netloc:
        raise ValueError(f"{url!r} names no bucket (expected gs://bucket/prefix)")
    return open_gcs(parsed.netloc, parsed.path, clock)


def _open_local(url: str, clock: Clock) -> tuple[ObjectStore, Layout]:
    from .local import LocalStore

    return LocalStore(os.path.expanduser(url.removeprefix("file://")), clock=clock), Layout(DEFAULT_PREFIX)


register_backend("s3", _open_s3)
register_backend("az", _open_azure)
register_backend("gs", _open_gcs)
register_backend("file", _open_local)
