"""Settings only the app reads (the shared ones live in :class:`s3task.config.Settings`).

``S3TASK_DIRECT_UPLOAD``    ``1`` (default): the browser uploads straight to the store
                            (S3 presigned URLs, or the app's signed route on a local
                            directory); ``0``: through Streamlit's uploader, for a store
                            browsers cannot reach.
``S3TASK_REFRESH_SECONDS``  how often live pages re-read running tasks; default 2.
``S3TASK_PAGE_SIZE``        tasks per page on the Tasks list; default 25, at most 200.

Checked like the shared settings: a bad value stops the app with one line naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from s3task.config import FLAG, load_fields, number, setting, validate


@dataclass(frozen=True)
class AppSettings:
    direct_upload: bool = setting(True, rule=FLAG)
    refresh_seconds: float = setting(2.0, rule=number(0.1, 3600, unit="of seconds"))
    page_size: int = setting(25, rule=number(1, 200, whole=True))

    def __post_init__(self) -> None:
        validate(self)

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> AppSettings:
        return load_fields(cls, environ=environ)
