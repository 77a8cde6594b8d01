"""Built-in task types."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import TaskType, register

if TYPE_CHECKING:
    import pandas as pd


@register
class PassThrough(TaskType):
    name = "copy"
    title = "Copy rows unchanged"
    description = "Writes every row of the uploaded file to the output unchanged. Useful to check a file end to end."
    #: Copying cannot go wrong row by row: the output has exactly the input's columns.
    error_column = None

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        return chunk


from . import clean, compare, email, profile, steps  # noqa: E402, F401  (register on import)
