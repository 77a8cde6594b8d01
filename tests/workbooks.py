"""Workbooks as staff have them, written by two writers that are not s3task's reader (xlsxwriter, openpyxl),
and the workbooks that cannot be read, for the tests that send them through the doors (CLI, API, worker).

Each export has a title above the table (merged across it), a blank row, the header in row 3, number
formats (a code under ``00000``, a date, a date-time, a decimal, a percentage, a whole number), a
formula with its saved value, a merged range over two rows, an error value, booleans, and a second
sheet. :data:`SHOWN` is what Excel shows in its data rows.
"""

from __future__ import annotations

import datetime
import io
import re
import struct
import zipfile
import zlib
from pathlib import Path

import xlsxwriter  # type: ignore[import-untyped]
from openpyxl import Workbook

TITLE = "Customer export, March 2026"
HEADER = ["Code", "Name", "Joined", "Last seen", "Amount", "Count", "Share", "Active", "Total", "Check"]
#: What Excel shows in the data rows (rows 4 and 5).
SHOWN = [
    ["00123", "Müller & Söhne", "2026-03-01", "2026-03-01T14:30:00", "0.1", "42", "12.5%", "TRUE", "84", "#N/A"],
    ["04711", "", "1999-12-31", "2000-01-01T00:00:05", "1234.5678", "-7", "100%", "FALSE", "-14", "ok"],
]
#: What the openpyxl export reads as: its formulas have no saved value.
OPENPYXL_SHOWN = [[*row[:8], "", row[9]] for row in SHOWN]
#: The second sheet, after the export: its own header in row 1.
PRICES = [["sku", "price"], ["A-1", "9.99"], ["B-2", "120"]]
_ROWS = [
    (123, "Müller & Söhne", datetime.date(2026, 3, 1), datetime.datetime(2026, 3, 1, 14, 30), 0.1, 42, 0.125, True),
    (4711, None, datetime.date(1999, 12, 31), datetime.datetime(2000, 1, 1, 0, 0, 5), 1234.5678, -7, 1, False),
]


def xlsxwriter_book(path: Path) -> Path:
    """Sheets "Customers" (the export) and "Prices"; the formulas carry the values Excel would save."""
    book = xlsxwriter.Workbook(str(path))
    sheet = book.add_worksheet("Customers")
    code, day = book.add_format({"num_format": "00000"}), book.add_format({"num_format": "yyyy-mm-dd"})
    stamp, share = book.add_format({"num_format": "dd/mm/yyyy hh:mm"}), book.add_format({"num_format": "0.0%"})
    sheet.merge_range(0, 0, 0, len(HEADER) - 1, TITLE)
    sheet.write_row(2, 0, HEADER)
    for row, (number, name, joined, seen, amount, count, part, active) in enumerate(_ROWS, start=3):
        sheet.write_number(row, 0, number, code)
        if name:
            sheet.merge_range(row, 1, row + 1, 1, name)  # over two rows: the value in the top cell only
        sheet.write_datetime(row, 2, joined, day)
        sheet.write_datetime(row, 3, seen, stamp)
        sheet.write_number(row, 4, amount)
        sheet.write_number(row, 5, count)
        sheet.write_number(row, 6, part, share)
        sheet.write_boolean(row, 7, active)
        sheet.write_formula(row, 8, f"=F{row + 1}*2", None, count * 2)
        sheet.write_formula(row, 9, "=NA()" if row == 3 else '="ok"', None, "#N/A" if row == 3 else "ok")
    prices = book.add_worksheet("Prices")
    prices.write_row(0, 0, PRICES[0])
    for row, (sku, price) in enumerate(PRICES[1:], start=1):
        prices.write_row(row, 0, [sku, float(price)])
    book.close()
    return path


def openpyxl_book(path: Path) -> Path:
    """The export as sheet "Data", then "Prices". openpyxl saves no value with a formula (Excel computes
    it when it opens the file), so its Total column reads empty (:data:`OPENPYXL_SHOWN`)."""
    book = Workbook()
    sheet = book.active
    sheet.title = "Data"
    sheet["A1"] = TITLE
    sheet.merge_cells(start_row=1, start_column=1, end_row=1, end_column=len(HEADER))
    sheet.append([])
    sheet.append(HEADER)
    for row, (values, shown) in enumerate(zip(_ROWS, SHOWN, strict=True), start=4):
        sheet.append([*values, f"=F{row}*2", shown[9]])
    sheet.merge_cells("B4:B5")
    for row in (4, 5):
        sheet.cell(row, 1).number_format = "00000"
        sheet.cell(row, 3).number_format = "yyyy-mm-dd"
        sheet.cell(row, 4).number_format = "yyyy-mm-dd hh:mm:ss"
        sheet.cell(row, 7).number_format = "0.0%"
    prices = book.create_sheet("Prices")
    prices.append(PRICES[0])
    for sku, price in PRICES[1:]:
        prices.append([sku, float(price)])
    book.save(path)
    return path


# --- what cannot be read ---------------------------------------------------------------------------------

_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)


def _ole2(*streams: str) -> bytes:
    """An OLE2 (compound file) header and a directory naming ``streams``, as Office writes them."""
    return _OLE2 + b"".join(name.encode("utf-16-le").ljust(128, b"\0") for name in streams)


def _not_a_workbook() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("report.csv", "id,name\n1,a\n")
    return out.getvalue()


def _blank(path: Path) -> bytes:
    book = xlsxwriter.Workbook(str(path))
    book.add_worksheet("Blank")
    book.close()
    return path.read_bytes()


def _bomb(path: Path) -> bytes:
    """A real workbook whose sheet is 40 MB of one row repeated, deflated to about 40 kB (a ratio of ~1,000)."""
    good = zipfile.ZipFile(io.BytesIO(xlsxwriter_book(path).read_bytes()))
    row = '<row r="9"><c r="A9"><v>1</v></c></row>'
    sheet = '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    sheet += row * (40_000_000 // len(row)) + "</sheetData></worksheet>"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in good.infolist():
            z.writestr(info.filename, sheet if info.filename == "xl/worksheets/sheet1.xml" else good.read(info))
    return out.getvalue()


def bad_workbooks(tmp: Path) -> dict[str, tuple[bytes, str]]:
    """Each workbook that cannot be read, by name: its bytes, and words of the one sentence it is refused with."""
    return {
        "encrypted": (_ole2("Root Entry", "EncryptionInfo", "EncryptedPackage"), "protected with a password"),
        "xls": (_ole2("Root Entry", "Workbook"), "old Excel 97-2003 workbook (.xls)"),
        "not a workbook": (_not_a_workbook(), "a zip file but not an Excel workbook"),
        "no table": (_blank(tmp / "blank.xlsx"), "sheet 'Blank' is empty — choose the sheet that holds the table"),
        "bomb": (_bomb(tmp / "bomb.xlsx"), "which no real workbook does (a 'zip bomb')"),
    }


# --- what the browser sends of a workbook for the direct upload's preview ---------------------------------


def with_pictures(data: bytes) -> bytes:
    """The same workbook between two 1 MB pictures (stored, not compressed), as a workbook with a logo and a
    chart picture: its parts are neither in the first 64 KB nor in the zip's end, so only the ranges the browser
    picks hold them."""
    picture = bytes(range(256)) * 4096
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as z, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as w:
        w.writestr(zipfile.ZipInfo("xl/media/image1.png"), picture, zipfile.ZIP_STORED)
        for info in z.infolist():
            w.writestr(info, z.read(info))
        w.writestr(zipfile.ZipInfo("xl/media/image2.png"), picture, zipfile.ZIP_STORED)
    return out.getvalue()


def browser_ranges(
    data: bytes, limits: dict[str, int] | None = None, probe: int = 64 * 1024
) -> list[tuple[int, bytes]]:
    """The byte ranges ui/direct_upload.js sends of a workbook (a zip), as it picks them: the zip's end with its
    directory, then the small parts whole, the start of the shared strings and of the first sheets, within the
    budget; without the first ``probe`` bytes, which it always sends (``head``). The Chromium tests run the JS."""
    from ui.direct import WORKBOOK_BYTES

    limits = limits or WORKBOOK_BYTES
    if len(data) <= probe:
        return []
    tail_start = max(0, len(data) - 65536 - 22)
    end = data.rfind(b"PK\x05\x06", tail_start)
    ranges = [(max(0, end - 20), data[max(0, end - 20) :])]  # the end record, and where a zip64 locator would be
    dir_size, dir_start = struct.unpack_from("<II", data, end + 12)
    if dir_size > limits["budget"]:
        return ranges
    ranges.append((dir_start, data[dir_start : dir_start + dir_size]))
    order = {"part": 0, "strings": 1, "sheet": 2}
    parts = []
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for info in z.infolist():
            name = info.filename
            kind = (
                "sheet"
                if re.search(r"(^|/)worksheets/[^/]+\.xml$", name, re.I)
                else "strings"
                if re.search(r"(^|/)sharedStrings\.xml$", name, re.I)
                else "part"
                if re.search(r"(^|/)_rels/(workbook\.xml)?\.rels$|(^|/)(workbook|styles)\.xml$", name, re.I)
                else None
            )
            if kind:
                header = 30 + len(info.filename.encode()) + len(info.extra) + 1024
                parts.append((order[kind], _natural(name), kind, info.header_offset, header, info.compress_size))
    budget, sheets = limits["budget"] - dir_size, 0
    for _order, _name, kind, offset, header, size in sorted(parts):
        if kind == "sheet":
            sheets += 1
            if sheets > limits["sheets"]:
                break
        length = min(header + min(size, limits[kind]), budget)
        if length <= header or (kind == "part" and length < header + size):
            continue
        ranges.append((offset, data[offset : offset + length]))
        budget -= length
    return ranges


def _natural(name: str) -> list[object]:
    """As JavaScript's ``localeCompare(…, {numeric: true})`` orders names: sheet2 before sheet10."""
    return [int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", name)]


# --- workbooks that attack the reader's memory and time (issue 36, items 1 and 2) ----------------------------

_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_PACKAGE = "http://schemas.openxmlformats.org/package/2006/relationships"
_OFFICE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def sheets_book(
    sheets: dict[str, str],
    strings: list[str] = (),
    packed: tuple[int, bytes, int, int] | None = None,  # type: ignore[assignment]
) -> bytes:
    """A minimal workbook (the parts Excel needs, no ``<dimension>``): each sheet's ``sheetData`` XML by name,
    and the shared strings its ``t="s"`` cells name by number. ``packed``: that many more sheets, each the
    same deflated worksheet part (its bytes, CRC and size), named Sheet2, Sheet3 … after the others."""
    count = len(sheets) + (packed[0] if packed else 0)
    names = [*sheets, *(f"Sheet{i}" for i in range(len(sheets) + 1, count + 1))]
    listed = "".join(f'<sheet name="{name}" sheetId="{i}" r:id="rId{i}"/>' for i, name in enumerate(names, 1))
    rels = "".join(
        f'<Relationship Id="rId{i}" Type="{_OFFICE}/worksheet" Target="worksheets/sheet{i}.xml"/>'
        for i in range(1, count + 1)
    )
    rels += f'<Relationship Id="rIdS" Type="{_OFFICE}/sharedStrings" Target="sharedStrings.xml"/>'
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            "[Content_Types].xml", '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'
        )
        z.writestr(
            "_rels/.rels",
            f'<Relationships xmlns="{_PACKAGE}"><Relationship Id="rId1" '
            f'Type="{_OFFICE}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        z.writestr(
            "xl/workbook.xml", f'<workbook xmlns="{_NS}" xmlns:r="{_OFFICE}"><sheets>{listed}</sheets></workbook>'
        )
        z.writestr("xl/_rels/workbook.xml.rels", f'<Relationships xmlns="{_PACKAGE}">{rels}</Relationships>')
        for i, data in enumerate(sheets.values(), 1):
            z.writestr(
                f"xl/worksheets/sheet{i}.xml", f'<worksheet xmlns="{_NS}"><sheetData>{data}</sheetData></worksheet>'
            )
        items = "".join(f"<si><t>{text}</t></si>" for text in strings)
        z.writestr("xl/sharedStrings.xml", f'<sst xmlns="{_NS}">{items}</sst>')
        for i in range(len(sheets) + 1, count + 1):  # the same deflated bytes each time: no time to pack gigabytes
            assert packed is not None
            _packed_member(z, f"xl/worksheets/sheet{i}.xml", *packed[1:])
    return out.getvalue()


def table_rows(first: int, count: int) -> str:
    """Rows ``first`` … of a two-column table (an id and a short text), as inline strings."""
    return "".join(
        f'<row r="{r}"><c r="A{r}"><v>{r}</v></c><c r="B{r}" t="inlineStr"><is><t>row {r}</t></is></c></row>'
        for r in range(first, first + count)
    )


def header_row() -> str:
    cells = '<c r="A1" t="inlineStr"><is><t>id</t></is></c><c r="B1" t="inlineStr"><is><t>note</t></is></c>'
    return f'<row r="1">{cells}</row>'


def naming_shared(first: int, count: int, index: int = 0) -> str:
    """Rows whose note is shared string ``index``."""
    return "".join(
        f'<row r="{r}"><c r="A{r}"><v>{r}</v></c><c r="B{r}" t="s"><v>{index}</v></c></row>'
        for r in range(first, first + count)
    )


def long_text_book(chars: int = 15_000_000, cells: int = 40, after: int = 0) -> bytes:
    """The reviewer's workbook: one shared string of ``chars`` characters named by ``cells`` cells (about
    17 KB as a file), under ``after`` ordinary rows (enough, and a submit's look at the first rows passes)."""
    rows = header_row() + table_rows(2, after) + naming_shared(2 + after, cells)
    return sheets_book({"Data": rows}, ["x" * chars])


def many_sheets_book(sheets: int = 1_000, filler: int = 15_000_000) -> bytes:
    """The reviewer's workbook of many sheets: a small table on the first, then sheets of ``filler`` bytes of
    rows each, with no ``<dimension>``, so that counting their rows means reading each through. Theirs was
    16.7 MB of 1,000 sheets: each sheet under 16 MB, where no compression ratio is checked (15 GB in all)."""
    row = '<row r="2"><c r="A2"><v>1</v></c></row>'
    other = f'<worksheet xmlns="{_NS}"><sheetData>{row * (filler // len(row))}</sheetData></worksheet>'.encode()
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = packer.compress(other) + packer.flush()
    return sheets_book(
        {"Table": header_row() + table_rows(2, 100)}, packed=(sheets - 1, packed, zlib.crc32(other), len(other))
    )


def _packed_member(z: zipfile.ZipFile, name: str, packed: bytes, crc: int, size: int) -> None:
    """A member whose deflated bytes are given, written as ``ZipFile.writestr`` writes one."""
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.CRC, info.compress_size, info.file_size = crc, len(packed), size
    assert z.fp is not None
    info.header_offset = z.fp.tell()
    z.fp.write(info.FileHeader())
    z.fp.write(packed)
    z.filelist.append(info)
    z.NameToInfo[name] = info
    z.start_dir = z.fp.tell()  # type: ignore[attr-defined]


def wide_table(rows: int, columns: int = 16_384) -> tuple[bytes, bytes]:
    """The reviewer's wide table (issue 36, item 6) as a workbook and as the same table in a CSV: a header of
    ``columns`` names, then ``rows`` rows of texts (as Excel stores them: shared strings, 500 of them) and
    whole numbers in turn, up to Excel's last column (XFD) by default. Written here, not by xlsxwriter (12 s for
    50 rows of 16,384 columns), in the XML Excel writes; what the reader gives is the CSV's values."""
    from s3task.csvio.sheetcells import column_letters

    letters = [column_letters(j + 1) for j in range(columns)]
    texts = [f"t{k}" for k in range(500)]
    names = [f"col{j + 1}" for j in range(columns)]
    grid = [names]
    xml = ["".join(f'<c r="{letters[j]}1" t="s"><v>{500 + j}</v></c>' for j in range(columns))]
    for r in range(2, rows + 2):
        values = [str((r * 31 + j) % 1000) if j % 2 else texts[(r + j) % 500] for j in range(columns)]
        grid.append(values)
        xml.append(
            "".join(
                f'<c r="{letters[j]}{r}"><v>{v}</v></c>'
                if j % 2
                else f'<c r="{letters[j]}{r}" t="s"><v>{(r + j) % 500}</v></c>'
                for j, v in enumerate(values)
            )
        )
    sheet = "".join(f'<row r="{r}">{cells}</row>' for r, cells in enumerate(xml, 1))
    book = sheets_book({"Wide": sheet}, texts + names)
    return book, "".join(",".join(row) + "\r\n" for row in grid).encode()
