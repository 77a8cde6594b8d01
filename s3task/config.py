"""Settings: command-line flags > environment (``S3TASK_*``) > defaults.

With no configuration at all everything runs locally on ``./s3task-data``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field, fields
from typing import Any

from .store import DEFAULT_LOCAL_STORE


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


@dataclass(frozen=True)
class Settings:
    store: str = DEFAULT_LOCAL_STORE
    #: Users who may act on every task.
    operators: tuple[str, ...] = ()
    poll_interval: float = 3.0
    lease_seconds: float = 60.0
    #: How long past lease expiry (by the store's clock) before a task counts as abandoned by its worker.
    lease_grace_seconds: float = 10.0
    max_attempts: int = 3
    #: First automatic retry waits this long; each further one twice as long (at most 10 minutes).
    retry_backoff_seconds: float = 10.0
    concurrency: int = 1
    #: A handler whose progress does not move for this long is killed.
    stall_timeout: float = 300.0
    #: A task's process using more memory than this (MB of RSS) is killed and the attempt fails.
    max_child_memory_mb: int = 2048
    worker_id: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    handlers: tuple[str, ...] = ()
    log_format: str = "text"
    embedded_worker: bool = True
    #: Largest upload the app accepts, in megabytes.
    max_upload_mb: int = 200
    #: Lifetime of presigned URLs, in seconds.
    url_seconds: int = 900
    #: Where browsers load the app from (``https://tasks.example.org``; comma-separated if several):
    #: the origins the bucket's CORS rule lets upload and download directly (``python -m s3task init``).
    app_origin: str = ""

    @classmethod
    def load(cls, overrides: dict[str, Any] | None = None, environ: dict[str, str] | None = None) -> Settings:
        """Defaults, then ``S3TASK_<NAME>`` variables, then non-``None`` overrides."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get("S3TASK_" + f.name.upper())
            if raw not in (None, ""):
                values[f.name] = _parse(f.name, str(f.type), raw)
        for name, value in (overrides or {}).items():
            if value is not None:
                values[name] = tuple(value) if isinstance(value, list) else value
        return cls(**values)


def _parse(name: str, kind: str, raw: str) -> Any:
    try:
        if kind == "float":
            return float(raw)
        if kind == "int":
            return int(raw)
        if kind == "bool":
            return raw.strip().lower() in ("1", "true", "yes", "on")
        if kind.startswith("tuple"):
            return _split(raw)
    except ValueError as e:
        raise ValueError(f"S3TASK_{name.upper()}={raw!r} is not a valid {kind}") from e
    return raw
