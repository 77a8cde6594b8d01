"""What a task's input is and how it is read: a CSV's delimiter and encoding, or a workbook's sheet and header row.

A task carries its :class:`InputFormat` (the record's ``input_format``), so the worker reads the
file exactly as it was checked when it was submitted. Its ``kind`` is ``csv`` (text) or ``xlsx``
(an Excel workbook, .xlsx or .xlsm), told from the file's first bytes (:func:`detect_kind`): a
workbook is a zip, and the two files Excel writes that cannot be read (an encrypted workbook, an
old .xls) are OLE2 files, taken as workbooks so that the reader refuses them in its own words.

Stored, a CSV's format is ``{"delimiter", "encoding"}`` exactly as before workbooks were read (a
record without ``kind`` is a CSV); a workbook's is ``{"kind": "xlsx", "sheet", "header_row"}``,
the sheet and header row taken when it was submitted. In a request (and in a record not yet
submitted, a :class:`FormatRequest`) a ``kind`` left out means: what the file shows. Read from JSON,
either is checked once (:func:`parse_input_format`) and stays typed from there on.

Detection of the rest, and the reading of text in another encoding, are :mod:`s3task.csvio.dialect`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidInput

#: Delimiters offered, with how the page names them.
DELIMITERS: dict[str, str] = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "pipes (|)"}
#: Encodings offered (canonical names), with how the page names them.
ENCODINGS: dict[str, str] = {
    "utf-8": "UTF-8 text",
    "windows-1252": "Windows (Western European) text",
    "utf-16-le": "UTF-16 text (Excel “Unicode text”)",
    "utf-16-be": "UTF-16 big-endian text",
}
#: The kinds of input: a CSV (text) and an Excel workbook (.xlsx, .xlsm), with how they are named.
CSV = "csv"
XLSX = "xlsx"
KINDS: dict[str, str] = {CSV: "CSV text", XLSX: "Excel workbook"}
#: A value of a setting that asks for detection (resolved when the file is submitted).
DETECT = "detect"
#: An encoding that says "UTF-16, the byte order its byte-order mark shows" (resolved when the file is
#: submitted; a file without the mark is refused).
BY_BOM = "utf-16"
#: Excel's last row: the highest header row there can be.
EXCEL_ROWS = 1_048_576
#: Excel keeps a sheet's name to 31 characters; other writers go further. Longer than this is no name.
MAX_SHEET_NAME = 255
#: The settings a format has.
SETTINGS = ("delimiter", "encoding", "kind", "sheet", "header_row")

_DELIMITER_ALIASES = {"comma": ",", "semicolon": ";", "tab": "\t", "\\t": "\t", "pipe": "|"}
_ENCODING_ALIASES = {
    "utf8": "utf-8",
    "utf-8-sig": "utf-8",
    "cp1252": "windows-1252",
    "windows1252": "windows-1252",
    "latin-1": "windows-1252",
    "latin1": "windows-1252",
    "iso-8859-1": "windows-1252",
    "utf-16le": "utf-16-le",
    "utf-16be": "utf-16-be",
    "utf16": BY_BOM,
}
_KIND_ALIASES = {"xlsm": XLSX, "excel": XLSX, "workbook": XLSX, "text": CSV}
#: The first bytes of a zip (.xlsx, .xlsm) and of an OLE2 compound file (an encrypted workbook, a .xls).
_SIGNATURES = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
_FOR_WORKBOOKS = "a sheet and a header row are for Excel workbooks"


def detect_kind(head: bytes) -> str:
    """``xlsx`` when the file's first bytes are a zip's or an OLE2 file's (no CSV starts so), else ``csv``."""
    return XLSX if head.startswith(_SIGNATURES) else CSV


def _canonical(value: str, names: Mapping[str, str], aliases: Mapping[str, str], what: str, allow_detect: bool) -> str:
    # Settled from the file when it is submitted: "detect", and "utf-16" (the byte order by the file's mark).
    later = {DETECT, BY_BOM} if what == "encoding" else {DETECT}
    if value in names or (allow_detect and value in later):
        return value
    key = value.strip().lower()
    if key in names or (allow_detect and key in later):
        return key
    if key in aliases and (allow_detect or aliases[key] in names):
        return aliases[key]
    shown = [*names, *(sorted(later - {DETECT}) if allow_detect else [])]
    choices = ", ".join(repr(n) for n in shown) + (f" or {DETECT!r}" if allow_detect else "")
    raise InvalidInput(f"the input format's {what} must be one of {choices}, not {value!r}")


@dataclass(frozen=True)
class InputFormat:
    """How a file is read: a CSV with its delimiter and text encoding (defaults: comma, UTF-8), or an Excel
    workbook (``kind`` ``xlsx``) with its sheet (None: the one it opens on) and header row as Excel
    numbers rows (None: found under any title). A workbook has no delimiter or encoding (left at the defaults)."""

    delimiter: str = ","
    encoding: str = "utf-8"
    kind: str = CSV
    sheet: str | None = None
    header_row: int | None = None

    def __post_init__(self) -> None:
        if self.delimiter not in DELIMITERS:
            raise InvalidInput(f"unknown delimiter {self.delimiter!r}")
        if self.encoding not in ENCODINGS:
            raise InvalidInput(f"unknown encoding {self.encoding!r}")
        if self.kind not in KINDS:
            raise InvalidInput(f"unknown kind of input {self.kind!r}")
        if self.kind == CSV and (self.sheet is not None or self.header_row is not None):
            raise InvalidInput(f"{_FOR_WORKBOOKS}; a CSV has neither")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> InputFormat:
        """A stored format (a record's ``input_format``); a key left out takes its default (no ``kind``: a CSV)."""
        settings = parse_input_format(data)
        if DETECT in settings.values():
            raise InvalidInput("the input format has not been detected yet")
        return cls(**settings)

    def to_dict(self) -> dict[str, Any]:
        """As stored: a CSV's two settings, as ever; a workbook's kind and the sheet and header row it has."""
        if self.kind == CSV:
            return {"delimiter": self.delimiter, "encoding": self.encoding}
        chosen = {"sheet": self.sheet, "header_row": self.header_row}
        return {"kind": self.kind, **{key: value for key, value in chosen.items() if value is not None}}

    @property
    def is_workbook(self) -> bool:
        return self.kind == XLSX

    @property
    def delimiter_byte(self) -> bytes:
        return self.delimiter.encode()

    def describe(self) -> str:
        """In plain words: "Separated by semicolons · Windows (Western European) text", or for a workbook
        "Excel workbook · sheet 'Orders' · header in row 3"."""
        if self.kind == CSV:
            return f"Separated by {DELIMITERS[self.delimiter]} · {ENCODINGS[self.encoding]}"
        sheet = "the sheet it opens on" if self.sheet is None else f"sheet {self.sheet!r}"
        header = "header row found under any title" if self.header_row is None else f"header in row {self.header_row:,}"
        return f"{KINDS[self.kind]} · {sheet} · {header}"


@dataclass(frozen=True)
class FormatRequest:
    """A format as asked for, before the file settles it (a record not yet submitted keeps one): the
    delimiter and the encoding may each be ``detect`` (the encoding also ``utf-16``), and a ``kind`` of
    None means what the file shows. :meth:`settled` is the :class:`InputFormat` it already names, if it
    names one; otherwise submitting the file settles it (:func:`~s3task.csvio.dialect.resolve`)."""

    delimiter: str = ","
    encoding: str = "utf-8"
    kind: str | None = None
    sheet: str | None = None
    header_row: int | None = None

    @classmethod
    def parse(cls, data: AskedFormat | None) -> FormatRequest:
        """Checked once, here (:func:`parse_input_format`, detection allowed): a request's JSON, or a
        format already typed (a settled one is asked for again as it is)."""
        if isinstance(data, FormatRequest):
            return data
        if isinstance(data, (InputFormat, UnreadableFormat)):
            data = data.to_dict()  # an unreadable one is refused here, in its own words
        return cls(**parse_input_format(data, allow_detect=True))

    def to_dict(self) -> dict[str, Any]:
        """As stored and as :func:`parse_input_format` gives it: the settings given, no None."""
        chosen: dict[str, Any] = {"delimiter": self.delimiter, "encoding": self.encoding, "kind": self.kind}
        chosen.update(sheet=self.sheet, header_row=self.header_row)
        return {key: value for key, value in chosen.items() if value is not None}

    def settled(self) -> InputFormat:
        """The format this request names already (a ``kind`` left out: a CSV); :class:`InvalidInput` while
        something in it is still to be detected."""
        pending = [key for key, value in self.to_dict().items() if value in (DETECT, BY_BOM)]
        if pending:
            raise InvalidInput(f"the input format's {' and '.join(pending)} has not been detected yet")
        return InputFormat.from_dict(self.to_dict())


@dataclass(frozen=True)
class UnreadableFormat:
    """A stored format this version cannot read (a setting a newer s3task added, a damaged record): kept as
    it was written, so the record still lists, shows and cancels, and refused in words where the file
    would be read (the worker fails the task for good, as for any input it cannot use)."""

    raw: Mapping[str, Any]
    problem: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)

    def settled(self) -> InputFormat:
        raise InvalidInput(self.problem)


#: A format as a door takes it: a request's JSON (the API, the CLI, a recipe), or one already typed (the page).
AskedFormat = Mapping[str, Any] | FormatRequest | InputFormat | UnreadableFormat


def parse_input_format(data: Mapping[str, Any] | None, *, allow_detect: bool = False) -> dict[str, Any]:
    """Check a requested format: ``delimiter`` and ``encoding``, each a known value (names such as
    ``semicolon`` or ``cp1252`` are taken too), or, where detection is allowed, ``detect`` (either)
    and ``utf-16`` (the encoding: UTF-16 in the byte order the file's byte-order mark shows); and for
    a workbook ``sheet`` (a name) and ``header_row`` (1 to 1,048,576); ``kind`` (``csv``, ``xlsx``, or
    where allowed ``detect``). A key that is None is left out. The delimiter and the encoding left out
    are filled with the defaults (comma, UTF-8); the others are in the result only when given, so a CSV's
    format is the two keys it always was."""
    data = {key: value for key, value in (data or {}).items() if value is not None}
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:
        named = ", ".join(map(repr, unknown))
        raise InvalidInput(f"the input format has no setting {named}; it has {', '.join(SETTINGS[:-1])} and header_row")
    out: dict[str, Any] = {}
    for key, names, aliases, default in (
        ("delimiter", DELIMITERS, _DELIMITER_ALIASES, ","),
        ("encoding", ENCODINGS, _ENCODING_ALIASES, "utf-8"),
        ("kind", KINDS, _KIND_ALIASES, None),
    ):
        value = data.get(key, default)
        if value is None:
            continue
        if not isinstance(value, str):
            raise InvalidInput(f"the input format's {key} must be text, not {type(value).__name__}")
        out[key] = _canonical(value, names, aliases, key, allow_detect)
    out.update(_workbook_settings(data))
    if out.get("kind") == CSV and ("sheet" in out or "header_row" in out):
        raise InvalidInput(f"{_FOR_WORKBOOKS}; this input is to be read as CSV text")
    return out


def _workbook_settings(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sheet = data.get("sheet")
    if sheet is not None:
        if not isinstance(sheet, str):
            raise InvalidInput(f"the input format's sheet must be text (a sheet's name), not {type(sheet).__name__}")
        if not sheet or len(sheet) > MAX_SHEET_NAME:
            raise InvalidInput(f"the input format's sheet must be a sheet's name, 1 to {MAX_SHEET_NAME} characters")
        out["sheet"] = sheet
    row = data.get("header_row")
    if row is not None:
        if isinstance(row, bool) or not isinstance(row, int):
            raise InvalidInput(f"the input format's header_row must be a whole number, not {type(row).__name__}")
        if not 1 <= row <= EXCEL_ROWS:
            raise InvalidInput(
                f"the input format's header_row must be a row as Excel numbers them, 1 to {EXCEL_ROWS:,}, not {row:,}"
            )
        out["header_row"] = row
    return out
