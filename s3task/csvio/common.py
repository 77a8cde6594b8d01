"""Limits and constants shared by the reader and the writer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InvalidInput

if TYPE_CHECKING:
    import pyarrow as pa

#: Bytes of input per block handed to Arrow (the unit of progress and of memory). Measured on
#: a 100 MB, 11-column file: 4 MB is as fast as 8 MB and peaks about 50-80 MB lower
#: (email_enrichment: ~220 MB instead of ~300 MB); 2 MB starts to cost per-block overhead.
DEFAULT_BLOCK_SIZE = 4 << 20
#: The smallest read block given to Arrow (a block of input is parsed in one piece of at least this size).
ARROW_BLOCK_SIZE = 1 << 20
#: A single row (usually one huge cell) may be at most this big.
MAX_ROW_BYTES = 64 << 20
#: Columns a file may have (a spreadsheet's limit). Memory and time grow with the column count
#: whatever the size of the file: 100,000 columns of 3 rows (1.3 MB) took 1.4 GB and 24 s.
MAX_COLUMNS = 16_384

BOM = b"\xef\xbb\xbf"
QUOTE = 0x22

#: Arrow type of every text column. pandas keeps text as large_string, so reading it that way
#: makes ``to_pandas`` zero-copy (string would be converted, offsets and all). Made on first use
#: (``__getattr__`` below), so that the limits here are read without importing pyarrow.
TEXT: pa.DataType

SAVE_AS_UTF8 = "save the file as 'CSV UTF-8' and upload it again"
#: The advice for text that is not in the encoding the file is read with.
CHOOSE_ENCODING = (
    SAVE_AS_UTF8 + ", or submit it again with its text encoding chosen (Excel's plain 'CSV' is "
    "Windows (Western European) text)"
)


def line_label(line: int) -> str:
    return f"line {line:,}"


def too_big(line: int, in_quotes: bool, max_row_bytes: int) -> InvalidInput:
    """A row past ``max_row_bytes`` (the reader's ``MAX_ROW_BYTES``, looked up there so a test may lower it)."""
    limit = f"{max_row_bytes >> 20} MB"
    if in_quotes:
        return InvalidInput(
            f"{line_label(line)}: a quoted value runs on for more than {limit} — probably a quote opened in the "
            'row that starts on this line is never closed (a value that starts with " must end with one)'
        )
    return InvalidInput(f"{line_label(line)}: a single row is longer than {limit}; is this a CSV file?")


def __getattr__(name: str) -> Any:
    if name == "TEXT":
        import pyarrow as pa

        return pa.large_string()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Readable(Protocol):
    """What a reader reads from: a file, a response body, a transcoder, a spooled copy."""

    def read(self, n: int = -1, /) -> bytes: ...
