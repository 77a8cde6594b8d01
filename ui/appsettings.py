"""Settings only the app reads (the shared ones live in :class:`s3task.config.Settings`).

``S3TASK_DIRECT_UPLOAD``    ``1`` (default): the browser uploads straight to the store
                            (S3 presigned URLs, or the app's signed route on a local
                            directory); ``0``: through Streamlit's uploader, for a store
                            browsers cannot reach.
``S3TASK_REFRESH_SECONDS``  how often live pages re-read running tasks; default 2.
``S3TASK_PAGE_SIZE``        tasks per page on the Tasks list; default 25.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class AppSettings:
    direct_upload: bool = True
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

        direct = env.get("S3TASK_DIRECT_UPLOAD", "").strip().lower()
        if direct not in ("", "0", "1", "true", "false", "yes", "no", "on", "off"):
            raise ValueError(f"S3TASK_DIRECT_UPLOAD={direct!r} should be 1 or 0")
        return cls(
            direct_upload=direct not in ("0", "false", "no", "off"),
            refresh_seconds=float(number("REFRESH_SECONDS", cls.refresh_seconds, float)),
            page_size=min(200, int(number("PAGE_SIZE", cls.page_size, int))),
        )
