"""What a hand-written script could do with the same file, timed in the same run as the worker.

- ``pandas_loop``: ``read_csv(chunksize=…)`` → ``to_csv`` per chunk (cells as text), no store, no progress;
- ``arrow_loop``: ``pyarrow.csv.open_csv`` (every column a string, quoted newlines allowed) → each batch
  ``to_pandas()`` → back through ``pyarrow.csv.CSVWriter``: the practical limit;
- ``store_copy``: the store's raw copy speed, GET + PUT of the same bytes through the ``ObjectStore``
  (streaming read, streaming/multipart write), nothing parsed.

Each returns (seconds, rows); the output goes to a file next to the input and is removed.
:data:`LAST_CPU` holds the CPU seconds (all threads of this process) of the last loop.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

#: Rows per pandas chunk (about 11 MB of this input), near the sweet spot of read_csv(chunksize=…).
PANDAS_CHUNK_ROWS = 100_000
#: Arrow's read block: bigger blocks mean fewer to_pandas/write calls; 8 MB is the engine's block too.
ARROW_BLOCK = 8 << 20
COPY_PIECE = 8 << 20
#: CPU seconds (user + system, every thread of this process) of the last pandas_loop / arrow_loop.
LAST_CPU = 0.0


def pandas_loop(src: Path, dst: Path) -> tuple[float, int]:
    global LAST_CPU
    rows = 0
    cpu = time.process_time()
    start = time.perf_counter()
    with open(dst, "w", newline="", encoding="utf-8") as out:
        reader = pd.read_csv(src, chunksize=PANDAS_CHUNK_ROWS, dtype=str, keep_default_na=False)
        for i, chunk in enumerate(reader):
            chunk.to_csv(out, index=False, header=i == 0)
            rows += len(chunk)
    seconds = time.perf_counter() - start
    LAST_CPU = time.process_time() - cpu
    os.unlink(dst)
    return seconds, rows


def arrow_loop(src: Path, dst: Path) -> tuple[float, int]:
    global LAST_CPU
    rows = 0
    cpu = time.process_time()
    start = time.perf_counter()
    names = pacsv.open_csv(src).schema.names  # the header only (one block parsed, outside nothing)
    read = pacsv.ReadOptions(block_size=ARROW_BLOCK)
    parse = pacsv.ParseOptions(newlines_in_values=True)
    convert = pacsv.ConvertOptions(
        column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False, quoted_strings_can_be_null=False
    )
    with pacsv.open_csv(src, read_options=read, parse_options=parse, convert_options=convert) as reader:
        writer = None
        for batch in reader:
            frame = batch.to_pandas()
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if writer is None:
                writer = pacsv.CSVWriter(str(dst), table.schema)
            writer.write_table(table)
            rows += len(frame)
        if writer is not None:
            writer.close()
    seconds = time.perf_counter() - start
    LAST_CPU = time.process_time() - cpu
    os.unlink(dst)
    return seconds, rows


def store_copy(store, src_key: str, dst_key: str) -> float:
    """GET ``src_key`` and PUT the same bytes to ``dst_key`` through ``store``, streaming; then delete it."""
    from s3task.store.base import PutMode

    start = time.perf_counter()
    with store.open_read(src_key) as f, store.open_write(dst_key, PutMode.OVERWRITE, content_type="text/csv") as w:
        while piece := f.read(COPY_PIECE):
            w.write(piece)
    seconds = time.perf_counter() - start
    store.delete(dst_key)
    return seconds
