"""``clean``: tidy cells and headers, drop empty and repeated rows."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import Param, TaskType, register

if TYPE_CHECKING:  # used in annotations; imported where used, so listing task types needs no pandas
    import numpy as np
    import pandas as pd


def normalise_headers(names: list[str]) -> list[str]:
    """Lower case, spaces to ``_``, no empty or repeated names ("name", "name_2", …)."""
    out: list[str] = []
    taken: set[str] = set()
    for i, name in enumerate(names, 1):
        base = re.sub(r"\s+", "_", str(name).strip().lower()) or f"column_{i}"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        out.append(candidate)
    return out


@register
class Clean(TaskType):
    name = "clean"
    title = "Clean up the table"
    description = (
        "Tidies the file without changing what it says: removes spaces at the start and end of every cell, "
        "makes the column names lower case with _ instead of spaces (and renames repeated or empty names, "
        "e.g. name, name_2, column_3), and leaves out rows that are completely empty and rows that are exact "
        "copies of an earlier row (after the spaces are removed; the first copy is kept, in its place). "
        "Every row of the result is a data row; the number of rows left out is the number of input rows "
        "minus the number of output rows, both shown on the task's page."
    )
    params = (
        Param("trim_spaces", "bool", default=True, help="Remove spaces at the start and end of every cell."),
        Param("normalize_headers", "bool", default=True, help="Lower-case column names, _ instead of spaces."),
        Param("drop_empty_rows", "bool", default=True, help="Leave out rows where every cell is empty."),
        Param("drop_duplicate_rows", "bool", default=True, help="Leave out rows that repeat an earlier row exactly."),
    )
    error_column = None
    leaves_out_rows = True

    def __init__(self, params: Mapping[str, Any]) -> None:
        super().__init__(self.validate(params))
        self._names: list[str] | None = None
        self._seen = SeenRows()

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        import numpy as np
        import pandas as pd

        if self._names is None:
            names = [str(c) for c in chunk.columns]
            self._names = normalise_headers(names) if self.values["normalize_headers"] else names
        out = chunk
        if self.values["trim_spaces"]:
            out = pd.DataFrame({i: chunk.iloc[:, i].str.strip() for i in range(chunk.shape[1])}, index=chunk.index)
        keep = np.ones(len(out), dtype=bool)
        if self.values["drop_empty_rows"] and len(out):
            keep &= ~(out == "").all(axis=1).to_numpy(dtype=bool)
        if self.values["drop_duplicate_rows"] and keep.any():
            kept = np.flatnonzero(keep)
            hi, lo = row_hashes(out.iloc[kept])
            keep[kept] = self._seen.add(hi, lo)
        out = out[keep] if not keep.all() else out
        out = out.set_axis(self._names, axis=1)
        return out.reset_index(drop=True)


# --- duplicate rows -------------------------------------------------------------

_KEYS = ("s3task-rows-hi-1", "s3task-rows-lo-2")  # 16 characters each, as pandas wants
_ESC, _SEP = "\x1e", "\x1f"


def row_hashes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Two independent 64-bit hashes of every row (128 bits: a false duplicate is practically impossible).

    The cells are joined with a separator into one string per row; cells that
    contain the separator or the escape character are escaped first, so two
    different rows never join to the same string.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for i in range(frame.shape[1]):
        col = pa.array(frame.iloc[:, i], type=pa.string(), from_pandas=True)
        if pc.any(pc.match_substring_regex(col, "[\x1e\x1f]")).as_py():
            col = pc.replace_substring(pc.replace_substring(col, _ESC, _ESC + _ESC), _SEP, _ESC + _SEP)
        columns.append(col)
    joined = pc.binary_join_element_wise(*columns, _SEP).to_numpy(zero_copy_only=False)
    hi, lo = (pd.util.hash_array(joined, hash_key=key, categorize=False) for key in _KEYS)
    return hi, lo


class SeenRows:
    """The set of rows seen so far, as 128-bit hashes: 16 bytes per distinct row, never the rows.

    Hashes live in sorted runs (sorted by the high 64 bits, the low 64 bits
    alongside); a new run is merged into the last one while it is at least as
    big, so there are only about log2(rows) runs to search.
    """

    def __init__(self) -> None:
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []

    def __len__(self) -> int:
        return sum(len(hi) for hi, _ in self._runs)

    def add(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        """Add the rows; return a mask of those not seen before (earlier in this batch counts as before)."""
        import numpy as np
        import pandas as pd

        fresh = ~pd.DataFrame({"hi": hi, "lo": lo}).duplicated().to_numpy(dtype=bool)
        for run_hi, run_lo in self._runs:
            idx = np.flatnonzero(fresh)
            if not len(idx):
                break
            fresh[idx[_member(run_hi, run_lo, hi[idx], lo[idx])]] = False
        if fresh.any():
            self._push(hi[fresh], lo[fresh])
        return fresh

    def _push(self, hi: np.ndarray, lo: np.ndarray) -> None:
        import numpy as np

        while self._runs and len(self._runs[-1][0]) <= len(hi):
            run_hi, run_lo = self._runs.pop()
            hi, lo = np.concatenate([run_hi, hi]), np.concatenate([run_lo, lo])
        order = np.argsort(hi, kind="stable")
        self._runs.append((hi[order], lo[order]))


def _member(run_hi: np.ndarray, run_lo: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    import numpy as np

    left = np.searchsorted(run_hi, hi, side="left")
    right = np.searchsorted(run_hi, hi, side="right")
    found = np.zeros(len(hi), dtype=bool)
    single = right - left == 1
    found[single] = run_lo[left[single]] == lo[single]
    # Equal high halves for different rows: about one chance in 2**64 per pair, checked one by one.
    for i in np.flatnonzero(right - left > 1):
        found[i] = bool((run_lo[left[i] : right[i]] == lo[i]).any())
    return found
