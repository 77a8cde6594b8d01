"""How a file is written: its delimiter and its text encoding, detected from its first bytes or chosen.

A task carries its :class:`~s3task.input_format.InputFormat` (the record's ``input_format``, declared
in :mod:`.formats` with the names of the settings), so the worker reads the file exactly as the New
task page's preview read it, and :func:`resolve` settles what is left to detection. The reader
works on UTF-8 internally: a file in another encoding is transcoded while it streams
(:class:`Transcoder`, an incremental decoder), and :func:`input_bytes` turns a stretch of the
UTF-8 text back into the number of *input* bytes it came from, so progress counts the file's own
bytes and ends exactly at its size.

The encodings are the ones spreadsheet tools write: UTF-8 (with or without a byte-order mark),
UTF-16 with a byte-order mark (Excel's "Unicode text", tab-separated), and Windows-1252 (Excel's
plain "CSV" in Western Europe and the Americas). Windows-1252 is read as browsers read it: the five
bytes the codec leaves undefined become the control characters of the same number, so every byte
is one character and nothing is refused.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInput
from ..input_format import BY_BOM, DELIMITERS, DETECT, ENCODINGS, XLSX, InputFormat, detect_kind
from .common import Readable

_CODECS = {"utf-8": "utf-8", "windows-1252": "cp1252", "utf-16-le": "utf-16-le", "utf-16-be": "utf-16-be"}
_BOMS = {b"\xef\xbb\xbf": "utf-8", b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}
#: What each byte-order mark is called in a message.
_BOM_NAMES = {"utf-8": "UTF-8", "utf-16-le": "UTF-16 little-endian", "utf-16-be": "UTF-16 big-endian"}
_C1 = "s3task-c1"


def _c1(error: UnicodeError) -> tuple[str, int]:
    """Bytes Windows-1252 leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) read as the C1 controls."""
    assert isinstance(error, UnicodeDecodeError)
    return "".join(map(chr, error.object[error.start : error.end])), error.end


codecs.register_error(_C1, _c1)


def resolve(settings: Mapping[str, Any], head: bytes, *, whole: bool) -> InputFormat:
    """``settings`` (from :func:`~s3task.input_format.parse_input_format`) with each ``detect`` (and
    ``utf-16``) replaced by what ``head``, the start of the file, shows.

    A ``kind`` left out is detected too (:func:`~s3task.input_format.detect_kind`). A workbook's
    format keeps the sheet and header row asked for (None: the reader's defaults), which opening the
    workbook settles; its delimiter and encoding, which a workbook has not, are ignored. A sheet or
    a header row asked for on a CSV is refused. A chosen encoding that the file's byte-order mark
    contradicts is refused (:func:`check_start`).
    """
    kind = settings.get("kind", DETECT)
    if (detect_kind(head) if kind == DETECT else kind) == XLSX:
        return InputFormat(kind=XLSX, sheet=settings.get("sheet"), header_row=settings.get("header_row"))
    if "sheet" in settings or "header_row" in settings:
        raise InvalidInput(
            "the file is CSV text, not an Excel workbook: it has no sheets, and its header is its first line — "
            "leave out the sheet and the header row"
        )
    encoding = settings["encoding"]
    if encoding == DETECT:
        encoding = detect_encoding(head, whole=whole)
    elif encoding == BY_BOM:
        encoding = _bom(head) or ""
        if not encoding.startswith("utf-16"):
            raise InvalidInput(
                "the file was to be read as UTF-16, but it does not start with a UTF-16 byte-order mark"
                + (f" (it starts with the {_BOM_NAMES[encoding]} one)" if encoding else "")
                + ", so its byte order is unknown: choose utf-16-le or utf-16-be, or detect"
            )
    check_start(head, encoding)
    delimiter = settings["delimiter"]
    if delimiter == DETECT:
        delimiter = detect_delimiter(head, encoding, whole=whole)
    return InputFormat(delimiter, encoding)


def _bom(head: bytes) -> str | None:
    """The encoding the byte-order mark at the start of ``head`` names, if it has one."""
    for bom, encoding in _BOMS.items():
        if head.startswith(bom):
            return encoding
    return None


def check_start(head: bytes, encoding: str) -> None:
    """Refuse reading a file that starts with ``head`` as ``encoding`` when the file itself says otherwise.

    A byte-order mark names its encoding: another choice would read it as garbage (a UTF-8 file's
    mark read as Windows-1252 is "ï»¿"; UTF-16 in the wrong byte order is all CJK). Without a mark,
    UTF-16 is refused when not one character of the start would be plain ASCII — not a line break,
    not a delimiter — which any UTF-16 CSV has and text in another encoding never shows.
    """
    bom = _bom(head)
    if bom is not None and bom != encoding:
        raise InvalidInput(
            f"the file starts with a {_BOM_NAMES[bom]} byte-order mark, which says it is {_BOM_NAMES[bom]} text, "
            f"so it cannot be read as {ENCODINGS[encoding].split(' (')[0]}: choose {bom} (or detect)"
        )
    if bom is None and encoding in ("utf-16-le", "utf-16-be") and len(head) >= 2:
        import numpy as np  # here, not at the top: InputFormat is read without numpy

        units = np.frombuffer(head[: len(head) // 2 * 2][:65536], dtype=np.uint8)
        high = units[1::2] if encoding == "utf-16-le" else units[0::2]
        if not (high == 0).any():
            raise InvalidInput(
                f"the file has no byte-order mark and, read as {ENCODINGS[encoding].split(' (')[0]}, its start holds "
                "no line break and no plain character: it is not UTF-16; choose its encoding again (or detect)"
            )


# --- detection ---------------------------------------------------------------------------------


def detect(head: bytes, *, whole: bool = False) -> InputFormat:
    """The format the first bytes of a file show (``whole``: they are all of it)."""
    encoding = detect_encoding(head, whole=whole)
    return InputFormat(detect_delimiter(head, encoding, whole=whole), encoding)


def detect_encoding(head: bytes, *, whole: bool = False) -> str:
    """By the byte-order mark; else UTF-16 by its zero bytes; else UTF-8 if it decodes; else Windows-1252.

    Text with zero bytes that is not UTF-16 stays "UTF-8", so the reader refuses it as binary data.
    """
    bom = _bom(head)
    if bom is not None:
        return bom
    import numpy as np

    sample = np.frombuffer(head[:4096], dtype=np.uint8)
    if len(sample) >= 8:
        even, odd = sample[0::2], sample[1::2]
        if (odd == 0).mean() > 0.9 and (even == 0).mean() < 0.05:
            return "utf-16-le"
        if (even == 0).mean() > 0.9 and (odd == 0).mean() < 0.05:
            return "utf-16-be"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=whole)
        return "utf-8"
    except UnicodeDecodeError:
        return "utf-8" if b"\x00" in head else "windows-1252"


#: Lines of the start of a file the delimiter is judged on.
_SAMPLE_LINES = 50


def detect_delimiter(head: bytes, encoding: str, *, whole: bool = False) -> str:
    """The delimiter that splits the header into the most columns and the rows into as many.

    Each candidate reads the first lines as CSV; one that gives the header at least two columns
    scores first by whether its values are cleanly quoted (a quote only around a whole value, as in
    ``Name;"Street, No"``, which commas would cut inside the quotes), then by the share of rows with
    the header's column count, then by that count. A header no
    candidate splits is one column: read with commas, unless commas split its rows and another
    candidate leaves every row whole ("Smith, John" under "Name").
    """
    text = decode_part(head, encoding, whole=whole, strict=False).lstrip("\ufeff\r\n")
    if not whole:
        cut = max(text.rfind("\n"), text.rfind("\r"))
        text = text[: cut + 1] if cut >= 0 else text
    lines = text.splitlines(keepends=True)[:_SAMPLE_LINES]
    sample = "".join(lines)
    best: tuple[float, float, int, int] | None = None
    chosen = ","
    whole_rows: list[str] = []
    for rank, delimiter in enumerate(DELIMITERS):
        counts = _field_counts(sample, delimiter)
        if counts and all(n == 1 for n in counts):
            whole_rows.append(delimiter)
        if not counts or counts[0] < 2:
            continue
        rows = counts[1:]
        share = sum(1 for n in rows if n == counts[0]) / len(rows) if rows else 1.0
        score = (float(_cleanly_quoted(sample, delimiter)), share, counts[0], -rank)
        if best is None or score > best:
            best, chosen = score, delimiter
    if best is None and whole_rows and "," not in whole_rows:
        return whole_rows[0]
    return chosen


def _cleanly_quoted(sample: str, delimiter: str) -> bool:
    """Whether, split by ``delimiter``, every quote in ``sample`` opens a value, closes it, or is doubled inside one.

    A quote inside an unquoted value, or a closing quote followed by more of the value, means the
    delimiter cuts through quoted values.
    """
    ends = (delimiter, "\r", "\n")
    quoted = False  # inside a quoted value
    i = sample.find('"')
    while i >= 0:  # from quote to quote
        if not quoted:
            if i > 0 and sample[i - 1] not in ends:
                return False  # a quote inside an unquoted value
            quoted = True
            i = sample.find('"', i + 1)
            continue
        after = sample[i + 1 : i + 2]
        if after == '"':
            i = sample.find('"', i + 2)  # a doubled quote inside the value
        elif after and after not in ends:
            return False  # the value goes on after its closing quote
        else:
            quoted = False
            i = sample.find('"', i + 1)
    return True


def _field_counts(sample: str, delimiter: str) -> list[int]:
    counts: list[int] = []
    try:
        for row in csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter, strict=False):
            if row:
                counts.append(len(row))
    except csv.Error:
        pass  # what was read so far still counts
    return counts


# --- transcoding -------------------------------------------------------------------------------


def decoder(encoding: str, *, strict: bool = True) -> codecs.IncrementalDecoder:
    errors = _C1 if encoding == "windows-1252" else ("strict" if strict else "replace")
    return codecs.getincrementaldecoder(_CODECS[encoding])(errors=errors)


def decode_part(data: bytes, encoding: str, *, whole: bool, strict: bool = True) -> str:
    """``data`` as text; a character cut by the end of a part (not ``whole``) is left out."""
    return decoder(encoding, strict=strict).decode(data, final=whole)


class Transcoder:
    """A ``read(n)`` stream of UTF-8 over a stream in another encoding, decoded as it streams.

    Memory holds one read's worth; a read returns whole characters (a character cut by a read
    waits in the decoder for the next). Bytes that are not text in the encoding raise
    :class:`InvalidInput` naming the line (UTF-16 only: every byte is a Windows-1252 character).
    """

    def __init__(self, source: Readable, encoding: str) -> None:
        self._source = source
        self._encoding = encoding
        self._decoder = decoder(encoding)
        self._lines = 1
        self._done = False

    def read(self, n: int = -1, /) -> bytes:
        while not self._done:
            raw = self._source.read(n)
            try:
                text = self._decoder.decode(raw, final=not raw)
            except UnicodeDecodeError as e:
                raise not_text(e, self._encoding, self._lines) from e
            self._done = not raw
            if text:
                out = text.encode("utf-8")
                self._lines += out.count(b"\n")
                return out
        return b""


def transcode_part(data: bytes, encoding: str, *, whole: bool) -> bytes:
    """The start of a file (``whole``: all of it) as UTF-8, as :class:`Transcoder` reads it.

    An encoding the start contradicts (:func:`check_start`) is refused.
    """
    check_start(data, encoding)
    try:
        return decode_part(data, encoding, whole=whole).encode("utf-8")
    except UnicodeDecodeError as e:
        raise not_text(e, encoding, 1) from e


def not_text(error: UnicodeDecodeError, encoding: str, line: int) -> InvalidInput:
    """What is wrong, naming the line: ``error`` from a decoder whose input started on ``line``."""
    name = ENCODINGS[encoding].split(" (")[0]
    if error.end >= len(error.object) and error.reason in ("truncated data", "unexpected end of data"):
        return InvalidInput(f"the file ends in the middle of a character: it is not complete {name}")
    # An incremental decoder's positions count from the bytes it held back plus this read's.
    before = bytes(error.object[: error.start]).decode(_CODECS[encoding], "ignore")
    return InvalidInput(
        f"line {line + before.count(chr(10)):,}: not {name} — "
        "choose the file's text encoding again, or save it as 'CSV UTF-8'"
    )


def input_bytes(utf8: bytes | memoryview, encoding: str) -> int:
    """How many bytes of the file in ``encoding`` the UTF-8 text ``utf8`` was transcoded from."""
    if encoding == "utf-8":
        return len(utf8)
    import numpy as np

    data = np.frombuffer(utf8, dtype=np.uint8)
    chars = int(np.count_nonzero((data & 0xC0) != 0x80))
    if encoding == "windows-1252":
        return chars
    return 2 * chars + 2 * int(np.count_nonzero(data >= 0xF0))  # a character beyond U+FFFF is two UTF-16 units
