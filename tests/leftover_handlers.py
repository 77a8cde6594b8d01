"""Task types for the leftover tests (``--handlers leftover_handlers``): attempts killed mid-write."""

from __future__ import annotations

import time

import pandas as pd

from s3task.handlers import ERROR_COLUMN, TaskType, register


@register
class WriteThenHang(TaskType):
    """Writes four copies of each chunk (more than one 8 MiB part of an S3 output), then never finishes."""

    name = "test_write_then_hang"
    title = "Writes, then hangs (tests)"
    description = "Writes each chunk four times over, then never finishes."

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        out = pd.concat([chunk] * 4, ignore_index=True)
        out[ERROR_COLUMN] = ""
        return out

    def finish(self) -> pd.DataFrame | None:
        while True:
            time.sleep(1)
