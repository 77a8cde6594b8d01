"""What the New task page knows about a chosen file before it becomes a task (:class:`Inspection`).

Filled in by :mod:`ui.csvfile` (a CSV, and the dispatch) and :mod:`ui.workbookfile` (an Excel workbook).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from s3task.csvio import InputFormat
from s3task.csvio.workbook import Sheet

#: Rows read for a column match and the step builder's preview: as many as submit's match looks at
#: (s3task.handlers.columns.SAMPLE_ROWS) and the builder's preview shows (s3task.steps.preview.PREVIEW_ROWS).
SAMPLE_ROWS = 200
#: Rows the New task page's preview table shows.
PREVIEW_ROWS = 10


@dataclass
class Inspection:
    """What the New task page shows about an upload; ``problem`` set means refused."""

    name: str
    size: int
    problem: str | None = None
    columns: list[str] = field(default_factory=list)
    preview: pd.DataFrame | None = None
    #: The first rows read, up to :data:`SAMPLE_ROWS` (the preview shows the first ten of them): what a column
    #: match looks at, as submit does, and what the step builder runs its steps over.
    rows: pd.DataFrame | None = None
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
