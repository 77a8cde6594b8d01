"""The rows a run of whole-file steps holds while DuckDB works out what to do with them, and the merge after.

The whole-file steps never change a cell the file had: they leave rows out (remove duplicates), add words
to a row's errors (a unique check, a lookup without a match) and add columns (a lookup). So DuckDB gets
only the columns they read, and the rows themselves wait in a :class:`Spool` — an Arrow IPC stream in the
attempt's scratch folder (in memory for a preview, which has no folder) — in the file's order. DuckDB's
answer, one narrow row per row kept (its number, its new errors, the columns added) in the same order, is
then merged with the spooled rows block by block (:func:`merge`): the memory the rows take is a block's,
whatever the file's size, and DuckDB sorts row numbers, not whole rows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .block import ERRORS, JOIN, ROW, Block

if TYPE_CHECKING:
    import pyarrow as pa

#: The spool's compression: none. LZ4 halved its size on disk but its buffers, freed as soon as written,
#: left the allocator holding 50 MB more at a 1 GB file's peak (mimalloc, Arrow's default here).
COMPRESSION: str | None = None


class Spool:
    """Blocks written once, in order, and read back once, in order (see the module's description)."""

    def __init__(self, folder: str | None) -> None:
        self._path = os.path.join(folder, "rows.arrows") if folder else None
        self._kept: list[pa.RecordBatch] = []
        self._sink: pa.NativeFile | None = None
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        self.schema: pa.Schema | None = None

    def add(self, block: Block) -> None:
        table = block.combined()
        if self.schema is None:
            self.schema = table.schema
            if self._path is not None:
                import pyarrow as pa

                self._sink = pa.OSFile(self._path, "wb")
                options = pa.ipc.IpcWriteOptions(compression=COMPRESSION)
                self._writer = pa.ipc.new_stream(self._sink, table.schema, options=options)
        if self._writer is not None:
            self._writer.write_table(table)
            del table
            release()
        else:
            self._kept.extend(table.to_batches())

    def blocks(self) -> Iterator[Block]:
        """The blocks as added (possibly cut differently), the spool's file closed and removed after."""
        import pyarrow as pa

        if self._writer is None or self._sink is None or self._path is None:
            kept, self._kept = self._kept, []
            for batch in kept:
                yield Block.split(pa.Table.from_batches([batch]))
            return
        self._writer.close()
        self._sink.close()
        self._writer = None
        try:
            with pa.OSFile(self._path, "rb") as source:  # not memory-mapped: mapped pages would count as ours
                for batch in pa.ipc.open_stream(source):
                    yield Block.split(pa.Table.from_batches([batch]))
        finally:
            self.close()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._sink is not None:
            self._sink.close()
            self._sink = None
        if self._path is not None and os.path.exists(self._path):
            os.remove(self._path)


def release() -> None:
    """Give back to the system what Arrow's allocator (mimalloc) holds for no array: it keeps freed pages
    otherwise, and with the reader's, the steps', the spool's and the writer's blocks passing through it held
    about 40 MB more at a 1 GB file's peak (beside DuckDB's). Called once a block, it costs no time measured."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def merge(blocks: Iterator[Block], answers: pa.RecordBatchReader, added: list[str]) -> Iterator[Block]:
    """Each spooled block with DuckDB's answers for its rows: the rows it kept, their errors (the block's
    own, then the new ones), the columns ``added``. Both come in the order of the row numbers."""
    import numpy as np
    import pyarrow as pa

    pending: list[pa.RecordBatch] = []
    waiting, last_seen, done = 0, -1, False
    for block in blocks:
        if not block.num_rows:
            continue
        last = int(block.row[-1].as_py())
        while not done and (not waiting or last_seen < last):
            try:
                batch = answers.read_next_batch()
            except StopIteration:
                done = True
                break
            if batch.num_rows:
                pending.append(batch)
                waiting += batch.num_rows
                last_seen = int(batch.column(ROW)[-1].as_py())
        if not waiting:
            continue  # none of its rows kept
        table = pa.Table.from_batches(pending, answers.schema).combine_chunks()
        cut = int(np.searchsorted(table.column(ROW).to_numpy(), last, side="right"))
        rest = table.slice(cut)
        pending, waiting = rest.to_batches(), rest.num_rows
        if cut:
            joined = _joined(block, table.slice(0, cut), added)
            del block, table
            release()
            yield joined


def _joined(block: Block, mine: pa.Table, added: list[str]) -> Block:
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = mine.column(ROW).combine_chunks().cast(pa.int64())
    kept = block.keep(pc.is_in(block.row, value_set=rows))
    if kept.num_rows != mine.num_rows:
        raise RuntimeError(f"the whole-file steps gave back {mine.num_rows} rows for {kept.num_rows} of a block")
    text = pa.large_string()
    new = pc.fill_null(mine.column(ERRORS).combine_chunks().cast(text), "")
    errors = pc.if_else(
        pc.equal(new, ""),
        kept.errors,
        pc.if_else(
            pc.equal(kept.errors, ""), new, pc.binary_join_element_wise(kept.errors, new, pa.scalar(JOIN, text))
        ),
    )
    table = kept.table
    for name in added:
        table = table.append_column(name, pc.fill_null(mine.column(name).cast(text), ""))
    return Block(table, kept.row, errors)
