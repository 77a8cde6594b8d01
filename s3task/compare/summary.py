"""What a comparison found, as numbers (JSON-able) and in plain words."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Summary:
    """The counts of one comparison of an old result with a new one, by ``keys``."""

    keys: list[str]
    added: int = 0
    removed: int = 0
    changed: int = 0
    unchanged: int = 0
    #: Cells changed in all (in changed rows, over the columns both sides have).
    cells_changed: int = 0
    #: Each column both sides have, with the number of rows whose cell in it changed (every column listed).
    columns_changed: dict[str, int] = field(default_factory=dict)
    added_columns: list[str] = field(default_factory=list)
    removed_columns: list[str] = field(default_factory=list)
    #: The columns compared as numbers ("1.0" equals "1"): a number on both sides by the Parquet copy's rule.
    numeric_columns: list[str] = field(default_factory=list)
    #: Rows in the highlighter CSV (added, removed and changed rows), when one was written.
    highlighted: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "keys": list(self.keys),
            "rows": {
                "added": self.added,
                "removed": self.removed,
                "changed": self.changed,
                "unchanged": self.unchanged,
            },
            "cells_changed": self.cells_changed,
            "columns_changed": dict(self.columns_changed),
            "added_columns": list(self.added_columns),
            "removed_columns": list(self.removed_columns),
            "numeric_columns": list(self.numeric_columns),
        }

    def lines(self) -> list[str]:
        """The summary in plain words, one fact a line."""

        def rows(n: int) -> str:
            return f"{n:,} row" + ("" if n == 1 else "s")

        lines = [
            f"compared by {' + '.join(self.keys)}: {rows(self.added)} added, {rows(self.removed)} removed, "
            f"{rows(self.changed)} changed, {rows(self.unchanged)} unchanged",
            f"{self.cells_changed:,} cell" + ("" if self.cells_changed == 1 else "s") + " changed",
        ]
        lines += [f"{name} changed in {rows(n)}" for name, n in self.columns_changed.items() if n]
        if self.added_columns:
            lines.append("columns added: " + ", ".join(self.added_columns))
        if self.removed_columns:
            lines.append("columns removed: " + ", ".join(self.removed_columns))
        if self.numeric_columns:
            lines.append("compared as numbers (1.0 equals 1): " + ", ".join(self.numeric_columns))
        return lines
