"""A store's writer handed to a library that writes a file (zipfile under xlsxwriter, Arrow's Parquet writer)."""

from __future__ import annotations

from typing import Any


class WriteOnly:
    """A store writer as the file object zipfile and Arrow expect (they only write; zipfile counts the
    bytes). Closing it leaves the store's writer open: whoever opened that one closes (commits) it."""

    closed = False

    def __init__(self, sink: Any) -> None:
        self._sink = sink

    def close(self) -> None:
        pass

    def write(self, data: bytes) -> int:
        self._sink.write(data)
        return len(data)

    def flush(self) -> None:
        pass
