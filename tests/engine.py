"""The processing engine run in memory, and the documented formula rule written independently of it
(shared by tests/unit/test_processing.py, test_handlers.py, test_exports.py and test_profile.py)."""

from __future__ import annotations

import io
import random
import re

import pandas as pd

from s3task import csvio
from s3task.processing import run
from s3task.progress import Progress

NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def neutralised(cell: str) -> str:
    """The documented rule, written independently of the engine (a ' is added before a ', to be reversible)."""
    if cell[:1] == "'" or (cell[:1] in ("=", "+", "-", "@", "\t", "\r") and not NUMBER.fullmatch(cell)):
        return "'" + cell
    return cell


class Source:
    """Only ``read(n)``, like a streaming HTTP body; optionally in short pieces."""

    def __init__(self, data: bytes, max_piece: int | None = None, seed: int = 0) -> None:
        self._data = memoryview(data)
        self._pos = 0
        self._max_piece = max_piece
        self._random = random.Random(seed)

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            n = len(self._data)
        if self._max_piece:
            n = min(n, self._random.randint(1, self._max_piece))
        piece = bytes(self._data[self._pos : self._pos + n])
        self._pos += len(piece)
        return piece


class Sink:
    """Only ``write``, of any bytes-like object (the engine hands views of Arrow's buffers), kept as a copy."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes | memoryview) -> None:
        self.parts.append(bytes(memoryview(data)))

    @property
    def data(self) -> bytes:
        return b"".join(self.parts)


def process(
    data: bytes,
    task_type: str = "copy",
    params: dict | None = None,
    block_size: int | None = None,
    max_piece: int | None = None,
) -> tuple[bytes, Progress, list[Progress]]:
    sink = Sink()
    progress: list[Progress] = []
    kwargs = {"block_size": block_size} if block_size else {}
    counts = run(task_type, params or {}, Source(data, max_piece), sink, progress.append, **kwargs)
    return sink.data, counts, progress


def read_back(output: bytes) -> list[list[str]]:
    assert output.startswith(csvio.BOM)  # Windows Excel reads the file as UTF-8
    frame = pd.read_csv(io.BytesIO(output), dtype=str, keep_default_na=False)
    return [list(frame.columns), *frame.to_numpy().tolist()]
