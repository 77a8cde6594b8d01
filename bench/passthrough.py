"""A pass-through task type that the benchmark registers itself: ``worker.py --handlers bench.passthrough``.

It returns each chunk unchanged (no added columns, no error column), so a
run measures the engine, the store and the worker, not a handler. Loading it
through ``--handlers`` also proves the plug-in path end to end.
"""

from __future__ import annotations

import pandas as pd

from s3task.handlers import TaskType, register

NAME = "bench_passthrough"


@register
class PassThrough(TaskType):
    name = NAME
    title = "Pass-through (benchmark)"
    description = "Writes every row unchanged; used by bench/run.py to measure the engine itself."
    error_column = None

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        return chunk
