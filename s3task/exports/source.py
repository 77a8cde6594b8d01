"""The stored output read back with its protection taken off: the values exactly as the task produced them.

An output is a CSV for spreadsheets (a BOM, and a leading ``'`` on every value a spreadsheet
would run as a formula, :mod:`s3task.csvio.writing`); an output written before that protection
was reversible has no BOM, and is unprotected the older way (``legacy``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from ..csvio.common import BOM, MAX_ROW_BYTES
from ..errors import S3TaskError

if TYPE_CHECKING:  # imported where used: the CLI and workers read task states without them
    import pandas as pd
    import pyarrow as pa


class _Prefixed:
    """A stream with some bytes already read from it put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head, self._rest = head, rest

    def read(self, n: int = -1, /) -> bytes:
        if self._head:
            if n < 0:
                data, self._head = self._head + self._rest.read(), b""
                return data
            data, self._head = self._head[:n], self._head[n:]
            return data
        return self._rest.read(n)


def peek_bom(raw: BinaryIO) -> tuple[bool, _Prefixed]:
    """Whether an output predates reversible protection (it has no BOM), and the stream to read it from."""
    head = b""
    while len(head) < len(BOM):
        more = raw.read(len(BOM) - len(head))
        if not more:
            break
        head += more
    return not head.startswith(BOM), _Prefixed(head, raw)


def exact_frame(frame: pd.DataFrame, *, legacy: bool) -> pd.DataFrame:
    """A frame read from an output (every column text) with the protection taken off (names too)."""
    import pandas as pd
    import pyarrow as pa

    from ..csvio.common import TEXT
    from ..csvio.writing import unprotect

    exact = {}
    for name in frame.columns:
        values = unprotect(pa.array(frame[name], TEXT, from_pandas=True), legacy=legacy).to_pylist()
        exact[_exact_name(str(name), legacy)] = pd.Series(values, index=frame.index, dtype=object)
    return pd.DataFrame(exact, index=frame.index)


def _exact_name(name: str, legacy: bool) -> str:
    import pyarrow as pa

    from ..csvio.common import TEXT
    from ..csvio.writing import unprotect

    return str(unprotect(pa.array([name], TEXT), legacy=legacy)[0].as_py())


def exact_tables(stream: Any, legacy: bool) -> tuple[list[str], Iterator[pa.Table]]:
    """The output's header and its rows, block by block, with the protection taken off.

    The output is our own file, so the input's limit on columns does not apply to it (a task may
    add columns to an input at that limit): its header row is read here, and the reader reads the
    rows under it.
    """
    import pyarrow as pa

    from ..csvio import CsvReader
    from ..csvio.common import TEXT
    from ..csvio.writing import unprotect

    header, rest = _split_header(stream)
    raw_names, names = _names(header, legacy)
    reader = CsvReader(_Prefixed(b"_\n" + rest, stream))  # a stand-in header: the rows are read under ``names``
    reader.names = list(raw_names)

    def tables() -> Iterator[pa.Table]:
        fed = False
        for table, _end in reader.tables():
            fed = True
            yield pa.table([unprotect(col, legacy=legacy) for col in table.columns], names=names)
        if not fed:
            yield pa.table([pa.array([], TEXT) for _ in names], names=names)

    return names, tables()


def exact_names(stream: Any, legacy: bool) -> list[str]:
    """The output's column names with the protection taken off, from its header row alone (the page's sort and
    filter boxes: reading a first block of rows for them cost a cold page open its share, issue 36 item 17)."""
    return _names(_split_header(stream)[0], legacy)[1]


def _names(header: bytes, legacy: bool) -> tuple[list[str], list[str]]:
    """The header row's names as written, and as the task produced them (protection taken off)."""
    import pyarrow as pa

    from ..csvio.common import TEXT
    from ..csvio.writing import unprotect

    raw_names = next(csv.reader(io.StringIO(header.decode("utf-8"), newline="")), [])
    return raw_names, [str(v) for v in unprotect(pa.array(raw_names, TEXT), legacy=legacy).to_pylist()]


def _split_header(stream: Any) -> tuple[bytes, bytes]:
    """The output's header row (without its BOM) and the bytes read after it."""
    from ..csvio.boundary import scan_exact

    buf = b""
    while True:
        more = stream.read(1 << 16)
        buf += more
        if buf.startswith(BOM):
            buf = buf[len(BOM) :]
        end, _open = scan_exact(buf, b"\n", stop_at_first=True, delimiter=b",")
        if end >= 0 or not more:
            break
        if len(buf) > MAX_ROW_BYTES:
            raise S3TaskError(f"the output's header row is longer than {MAX_ROW_BYTES >> 20} MB")
    if end < 0:
        end = len(buf) - 1
    if not buf.strip(b"\r\n"):
        raise S3TaskError("the output is empty")
    return buf[: end + 1], buf[end + 1 :]
