"""Settings only the app reads (the shared ones live in :class:`s3task.config.Settings`).

``S3TASK_DOWNLOAD_CAP_MB``  largest output the app sends through itself when the
                            store has no presigned URLs (local directory); default 50.
``S3TASK_REFRESH_SECONDS``  how often live pages re-read running tasks; default 2.
``S3TASK_PAGE_SIZE``        tasks per page on the Tasks list; default 25.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class AppSettings:
    download_cap_mb: int = 50
    refresh_seconds: float = 2.0
    page_size: int = 25

    @classmethod
    def load(cls, environ: dict[str, str] | None = None) -> AppSettings:
        env = os.environ if environ is None else environ

        def number(name: str, default: float, kind: type) -> float:
            raw = env.get("S3TASK_" + name, "").strip()
            if not raw:
                return default
            try:
                value = kind(raw)
            except ValueError as e:
                raise ValueError(f"S3TASK_{name}={raw!r} is not a valid {kind.__name__}") from e
            if value <= 0:
                raise ValueError(f"S3TASK_{name} must be positive")
            return value

        return cls(
            download_cap_mb=int(number("DOWNLOAD_CAP_MB", cls.download_cap_mb, int)),
            refresh_seconds=float(number("REFRESH_SECONDS", cls.refresh_seconds, float)),
            page_size=min(200, int(number("PAGE_SIZE", cls.page_size, int))),
        )
