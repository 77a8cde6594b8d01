"""What the New task page knows about a chosen file before it becomes a task (:class:`Inspection`).

Filled in by :mod:`ui.csvfile` (a CSV, and the dispatch) and :mod:`ui.workbookfile` (an Excel workbook).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from s3task.csvio import InputFormat
from s3task.csvio.workbook import Sheet


@dataclass
class Inspection:
    """What the New task page shows about an upload; ``problem`` set means refused."""

    name: str
    size: int
    problem: str | None = None
    columns: list[str] = field(default_factory=list)
    preview: pd.DataFrame | None = None
    note: str | None = None
    #: What the first bytes show, and what the preview was read with (the detected format unless
    #: the user chose another); None for a file refused before it is read (not a .csv, too big, not CSV).
    detected: InputFormat | None = None
    input_format: InputFormat | None = None
    #: A workbook's worksheets (a choice of sheet), as the reader lists them; empty for a CSV, and for a
    #: workbook refused before its sheets are known.
    sheets: list[Sheet] = field(default_factory=list)
    #: Read from some of the file's bytes (the browser's, for a workbook): the whole file is checked on submit.
    partial: bool = False

    @property
    def ok(self) -> bool:
        return self.problem is None

    @property
    def is_workbook(self) -> bool:
        return self.input_format is not None and self.input_format.is_workbook
