"""Reading an Excel workbook (.xlsx, .xlsm) as rows of text, the way :class:`~s3task.csvio.CsvReader` reads a CSV.

:class:`WorkbookReader` has the CSV reader's shape: ``names`` (the header), ``tables()`` (blocks of
rows as Arrow tables of text columns, each with the input offset it has reached) and
``bytes_consumed``. The sheet's XML is streamed out of the zip a piece of whole rows at a time, so
memory stays flat whatever the sheet's length; the cells of a piece are read by
:mod:`.sheetcells` and gathered into blocks sized by cells by :mod:`.sheetblocks`. Progress is exact: each
block ends on a row, and its offset is the share of the sheet's XML read so far (within a piece cut into
several blocks, the piece's share by cells), scaled to the size of the file (the last block reaches the file size).

Before anything is read, the container is checked (:func:`open_workbook`): an encrypted workbook
and an old .xls (both OLE2 files, not zips), a zip that holds no workbook, and a workbook bomb
(parts that would unpack to more than the limits below, or at a ratio no real sheet has) get
one sentence that says what to do. Rows and columns beyond Excel's (1,048,576 × 16,384) are
refused, and a part can never unpack to more than its declared size (the zip module stops there).

A workbook can also be opened from some of its bytes (a :class:`~.sparse.SparseFile`: what the New
task page's browser sends for a preview): its parts are then read as far as their bytes were sent,
and a sheet whose row count those bytes do not show has ``rows`` None.

The header row is found (:func:`find_header`): a title, notes or blank rows above the table are
skipped; or it is given as Excel numbers rows. Rows entirely empty are skipped, as a CSV's blank
lines are. A value in a column the header leaves without a name is refused, naming its cell.
"""

from __future__ import annotations

import html
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, cast

from ..errors import InvalidInput, NotSent
from .sheetcells import MAX_ROWS
from .sheetnumbers import AGAIN
from .sparse import SentPart, SparseFile

#: A sheet's XML may unpack to at most this. Excel's largest sheet of 6 columns is 256 MB of XML
#: (bench/workbook.py), read at about 30 MB of XML per CPU second: the limit bounds a sheet's time to about a minute.
MAX_SHEET_XML = 2 << 30
#: The shared strings are held in memory (each cell refers to one by its number): bounded.
MAX_STRINGS_XML = 256 << 20
#: The other parts read (workbook, relationships, styles) are small in any real workbook.
MAX_PART_XML = 16 << 20
#: No real sheet compresses better than this (about 8× for typical data, 30× for the most repetitive);
#: a zip bomb does (~1,000×). Checked above :data:`RATIO_FROM` bytes, as Apache POI's ZipSecureFile does.
MAX_RATIO = 100
RATIO_FROM = 16 << 20
#: All of a workbook's parts together may unpack to at most this, and it may have at most this many sheets.
MAX_WORKBOOK_XML = 4_000_000_000
MAX_SHEETS = 1_000
#: Sheets without a ``<dimension>`` have their rows counted by reading them through, for the choice of sheet:
#: at most this much XML in all, so a workbook of many such sheets is listed in a second (the rest: not counted).
ROW_COUNT_XML = 128 << 20

_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_RELS = "http://schemas.openxmlformats.org/"


@dataclass(frozen=True)
class Sheet:
    """A worksheet: its name, whether it is visible, and its rows (the last one's number, as Excel numbers rows;
    None when the bytes of a preview's :class:`~.sparse.SparseFile` do not show it)."""

    name: str
    visible: bool
    rows: int | None
    part: str


@dataclass
class Workbook:
    """An opened workbook: its zip, its worksheets in order, what it takes to read their cells."""

    zip: zipfile.ZipFile
    sheets: list[Sheet]
    date1904: bool
    styles_part: str | None
    strings_part: str | None
    #: The sheet the workbook opens on in Excel (its active tab), if that is a worksheet.
    active: str | None = None

    @property
    def partial(self) -> bool:
        """Opened from some of the file's bytes (a preview's :class:`~.sparse.SparseFile`), not the whole file."""
        return isinstance(self.zip.fp, SparseFile)

    def sheet(self, name: str | None) -> Sheet:
        """The sheet called ``name``; by default the one the workbook opens on (its active tab, as Excel
        shows it on opening: the sheet it was saved on), else the first visible one — unless that one holds
        a few rows of notes (at most :data:`NOTES_ROWS`) and another visible sheet a table (at least
        :data:`TABLE_ROWS` rows, ten times as many): then the sheet with the most rows."""
        if name is None:
            visible = [s for s in self.sheets if s.visible]
            if not visible:
                raise InvalidInput("the workbook has no visible worksheet — " + AGAIN)
            opened = next((s for s in visible if s.name == self.active), visible[0])
            return _table_over_notes(opened, visible)
        for sheet in self.sheets:
            if sheet.name == name:
                return sheet
        names = ", ".join(repr(s.name) for s in self.sheets)
        raise InvalidInput(f"the workbook has no sheet called {name!r}; its sheets are {names}")


#: A sheet of at most this many rows, opened on, is taken for notes when another holds a table.
NOTES_ROWS = 10
#: A sheet of at least this many rows (and ten times the notes') holds a table.
TABLE_ROWS = 100


def _table_over_notes(opened: Sheet, visible: list[Sheet]) -> Sheet:
    if opened.rows is None or opened.rows > NOTES_ROWS:
        return opened
    tables = [s for s in visible if s.rows is not None and s.rows >= max(TABLE_ROWS, 10 * opened.rows)]
    return max(tables, key=lambda s: s.rows or 0) if tables else opened  # the first of the largest


def check_signature(start: bytes) -> None:
    """Refuse, in words staff understand, a file that is no .xlsx from its first bytes."""
    if start.startswith(_OLE2):
        raise InvalidInput(_ole2_message(start))
    if not start.startswith(b"PK\x03\x04"):
        raise InvalidInput("this is not an Excel workbook (.xlsx): " + AGAIN)


def _ole2_message(data: bytes) -> str:
    """An OLE2 file is an encrypted (password-protected) .xlsx, or an Excel 97-2003 .xls."""
    if "EncryptedPackage".encode("utf-16-le") in data or "EncryptionInfo".encode("utf-16-le") in data:
        return (
            "the workbook is protected with a password (encrypted), so it cannot be read — open it in Excel, "
            "remove the password (File › Info › Protect Workbook › Encrypt with Password), save it and upload it again"
        )
    return (
        "this is an old Excel 97-2003 workbook (.xls) — open it in Excel and save it as 'Excel Workbook (.xlsx)' "
        "(File › Save As), then upload that"
    )


def open_workbook(source: str | os.PathLike[str] | IO[bytes], count_rows: bool = True) -> Workbook:
    """Open and check a workbook: its signature, its zip, its parts and their sizes; list its sheets, with
    their rows counted (``count_rows``, for a choice of sheet: within :data:`ROW_COUNT_XML`) or not (None)."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as file:
            start = _start(file)
    else:
        start = _start(source)
    check_signature(start)
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, NotImplementedError, ValueError) as e:  # a version, an offset no zip has
        raise InvalidInput("the workbook is damaged (not a complete zip file) — " + AGAIN) from e
    names = set(archive.namelist())
    unpacked = sum(info.file_size for info in archive.infolist())
    if unpacked > MAX_WORKBOOK_XML:
        raise InvalidInput(
            f"the workbook would unpack to {unpacked / 1e9:,.1f} GB, more than the {MAX_WORKBOOK_XML / 1e9:,.1f} GB "
            "s3task reads — save the sheet you need as a workbook of its own and upload that"
        )
    if "xl/workbook.bin" in names:
        raise InvalidInput("this is an Excel binary workbook (.xlsb) — " + AGAIN)
    main = _office_document(archive, names)
    if main is None:
        raise InvalidInput(_not_a_workbook(names))
    return _workbook(archive, main, names, [ROW_COUNT_XML] if count_rows else [0])


#: Other Office files are zips too: named as what they are, not as "a zip file".
_OTHER_OFFICE = {"word/document.xml": "a Word document (.docx)", "ppt/presentation.xml": "a PowerPoint file (.pptx)"}


def _not_a_workbook(names: set[str]) -> str:
    for part, what in _OTHER_OFFICE.items():
        if part in names:
            return (
                f"this is {what}, not an Excel workbook — copy its table into Excel, save it as .xlsx or .csv "
                "and upload that"
            )
    return "this is a zip file but not an Excel workbook (it holds no workbook) — " + AGAIN


def _start(file: IO[bytes]) -> bytes:
    start = file.read(1 << 20)
    if start.startswith(_OLE2):
        start += file.read(MAX_PART_XML)  # an OLE2 file's directory may be anywhere: look at the rest too
    file.seek(0)
    return start


def _office_document(archive: zipfile.ZipFile, names: set[str]) -> str | None:
    if "_rels/.rels" in names:
        for kind, target, _id in _relations(read_part(archive, "_rels/.rels")):
            if kind.endswith("/officeDocument"):
                part = target.lstrip("/")
                return part if part in names and part.endswith(".xml") and "workbook" in part.lower() else None
    return "xl/workbook.xml" if "xl/workbook.xml" in names else None


def _relations(xml: bytes) -> list[tuple[str, str, str]]:
    """Each relationship of a .rels part: its type, target and id."""
    found = re.findall(rb"<(?:\w+:)?Relationship\b([^>]*)", xml)
    return [(_attribute(a, b"Type"), _attribute(a, b"Target"), _attribute(a, b"Id")) for a in found]


def _attribute(attributes: bytes, name: bytes) -> str:
    match = re.search(rb"\b" + name + rb'="([^"]*)"', attributes)
    return match.group(1).decode("utf-8", "replace") if match else ""


def _workbook(archive: zipfile.ZipFile, main: str, names: set[str], budget: list[int]) -> Workbook:
    folder = PurePosixPath(main).parent
    rels_part = str(folder / "_rels" / (PurePosixPath(main).name + ".rels"))
    targets: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for kind, target, rid in _relations(read_part(archive, rels_part)) if rels_part in names else []:
        part = target.lstrip("/") if target.startswith("/") else str(folder / target)
        targets[rid], kinds[rid] = part, kind.rsplit("/", 1)[-1]
    by_kind = {kind: targets[rid] for rid, kind in kinds.items()}
    xml = read_part(archive, main)
    sheets = []
    rows: dict[str, int | None] = {}  # by part: a sheet listed many times is counted once
    view = re.search(rb"<(?:\w+:)?workbookView\b([^>]*)", xml)
    tab = _attribute(view.group(1), b"activeTab") if view else ""
    active_tab = int(tab) if re.fullmatch(r"[0-9]{1,6}", tab) else 0  # it counts every tab, chart sheets too
    active = None
    listed = re.findall(rb"<(?:\w+:)?sheet\b([^>]*)", xml)
    if len(listed) > MAX_SHEETS:
        raise InvalidInput(
            f"the workbook has {len(listed):,} sheets, more than the {MAX_SHEETS:,} s3task reads — "
            "copy the sheet you need into a workbook of its own and upload that"
        )
    for index, attributes in enumerate(listed):
        rid = _attribute(attributes, b"r:id") or _attribute(attributes, b"id")
        part = targets.get(rid, "")
        if kinds.get(rid) != "worksheet" or part not in names:
            continue  # a chart sheet or a dialog sheet holds no cells
        name = html.unescape(_attribute(attributes, b"name"))
        if index == active_tab:
            active = name
        hidden = _attribute(attributes, b"state") in ("hidden", "veryHidden")
        if part not in rows:
            rows[part] = _used_rows(archive, part, budget)
        sheets.append(Sheet(name, not hidden, rows[part], part))
    if not sheets:
        raise InvalidInput("the workbook has no worksheet — " + AGAIN)
    date1904 = bool(re.search(rb'date1904="(?:1|true)"', xml))
    return Workbook(archive, sheets, date1904, by_kind.get("styles"), by_kind.get("sharedStrings"), active)


def read_part(archive: zipfile.ZipFile, name: str, limit: int = MAX_PART_XML) -> bytes:
    """A small part, whole, after checking what it declares it unpacks to."""
    with open_part(archive, name, limit) as part:
        return part.read()


def open_part(archive: zipfile.ZipFile, name: str, limit: int) -> IO[bytes]:
    """A part as a stream, refused first if its declared size or compression ratio is a bomb's."""
    try:
        info = archive.getinfo(name)
    except KeyError as e:  # a part the workbook's own lists name, missing from its zip
        raise InvalidInput(DAMAGED) from e
    if info.file_size > limit or (info.file_size > RATIO_FROM and info.file_size > MAX_RATIO * info.compress_size):
        raise InvalidInput(
            f"the workbook's part {name} would unpack to {info.file_size / 1e6:,.0f} MB "
            f"from {info.compress_size / 1e6:,.1f} MB, which no real workbook does (a 'zip bomb'), so it is not read"
        )
    try:
        stream = archive.open(info)
    # RuntimeError: an encrypted zip member; ValueError: a member's offset before the file's start
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, ValueError) as e:
        raise InvalidInput(DAMAGED) from e
    return cast(IO[bytes], CheckedPart(SentPart(stream) if isinstance(archive.fp, SparseFile) else stream))


DAMAGED = "the workbook is damaged or packed in a way Excel does not write — " + AGAIN


class CheckedPart:
    """A part's stream whose damage found while reading it (a CRC that does not match, data that does not
    unpack) is the workbook's one sentence, a bad input, never a crash retried as if the store had failed."""

    def __init__(self, stream: IO[bytes] | SentPart) -> None:
        self._stream = stream

    def read(self, n: int = -1) -> bytes:
        try:
            return self._stream.read(n)
        except (zipfile.BadZipFile, zlib.error, EOFError) as e:
            raise InvalidInput(DAMAGED) from e

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> CheckedPart:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _used_rows(archive: zipfile.ZipFile, part: str, budget: list[int]) -> int | None:
    """The number of a sheet's last row: from the ``<dimension>`` at its start (Excel writes one), or else
    the last row's number, the sheet streamed through (openpyxl's and xlsxwriter's fast modes write none)
    while ``budget`` (the XML left to read for counting, in one list shared by the workbook's sheets) lasts.
    None: not counted (no budget left, or the bytes a preview was sent end before either shows)."""
    if budget[0] <= 0:
        return None
    try:
        return _last_row(archive, part, budget)
    except NotSent:
        return None


def _last_row(archive: zipfile.ZipFile, part: str, budget: list[int]) -> int | None:
    with open_part(archive, part, MAX_SHEET_XML) as stream:
        data = stream.read(64 << 10)
        budget[0] -= len(data)
        match = re.search(rb'<(?:\w+:)?dimension\b[^>]*\bref="[A-Z]*\d+:[A-Z]*(\d+)"', data)
        if match:
            return min(int(match.group(1)), MAX_ROWS)
        last_row, tail = 0, b""
        while data:
            if budget[0] < 0:
                return None
            chunk = tail + data
            at = chunk.rfind(b"<row ") if b"<row " in chunk else chunk.rfind(b":row ")
            if at >= 0 and (found := re.match(rb'[<:]row\b[^>]*?\br="(\d+)"', chunk[at:])):
                last_row = int(found.group(1))
            tail, data = chunk[-256:], stream.read(4 << 20)
            budget[0] -= len(data)
    return min(last_row, MAX_ROWS)


def list_sheets(source: str | os.PathLike[str] | IO[bytes]) -> list[Sheet]:
    """The workbook's worksheets in order (for a picker): name, visible, rows."""
    book = open_workbook(source)
    try:
        return book.sheets
    finally:
        book.zip.close()
