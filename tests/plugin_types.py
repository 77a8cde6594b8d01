"""A task type that only exists when a process loads this module through S3TASK_HANDLERS / --handlers."""

from __future__ import annotations

import pandas as pd

from s3task.handlers import TaskType, register


@register
class Shout(TaskType):
    name = "plugin_shout"
    title = "Shout (plug-in)"
    description = "Upper-cases every cell. Loaded from a module named in the settings."

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        return chunk.apply(lambda column: column.str.upper())
