"""Workbooks as staff have them, read as rows of text: the reader of s3task.csvio.sheetreader.

The files are written by two writers that are not the reader, xlsxwriter and openpyxl, the way an
export looks: a title above the table, a blank row, the header in row 3, number formats (a code
under ``00000``, a date, a date-time, a decimal, a percentage, a whole number), a formula, a merged
range, an error value and booleans, and a second sheet. What is read is what Excel shows. Then
the workbooks that cannot be read, each refused with one sentence: encrypted, .xls, a zip that
is no workbook, an empty sheet, bombs (built small here: a huge declared size, a huge ratio).
"""

from __future__ import annotations

import datetime
import io
import struct
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest
import xlsxwriter  # type: ignore[import-untyped]
from openpyxl import Workbook as OpenpyxlWorkbook

from s3task.csvio.sheetnumbers import CODE, DATE, DATETIME, GENERAL, PERCENT, TIME, style_of
from s3task.csvio.sheetreader import WorkbookReader
from s3task.csvio.workbook import list_sheets
from s3task.errors import InvalidInput

TITLE = "Customer export, March 2026"
HEADER = ["Code", "Name", "Joined", "Last seen", "Amount", "Count", "Share", "Active", "Total", "Check"]
#: What Excel shows in the data rows, as the reader must give it.
SHOWN = [
    ["00123", "Müller & Söhne", "2026-03-01", "2026-03-01T14:30:00", "0.1", "42", "12.5%", "TRUE", "84", "#N/A"],
    ["04711", "", "1999-12-31", "2000-01-01T00:00:05", "1234.5678", "-7", "100%", "FALSE", "-14", "ok"],
]
WHEN = datetime.datetime(2026, 3, 1, 14, 30)


def xlsxwriter_book(path: Path) -> Path:
    """A hidden first sheet, then the export: title merged over the table, blank row, header in row 3."""
    book = xlsxwriter.Workbook(str(path))
    lookup = book.add_worksheet("Lookup")
    sheet = book.add_worksheet("Customers")
    lookup.write_row(0, 0, ["key", "value"])
    lookup.hide()
    sheet.activate()
    code, day = book.add_format({"num_format": "00000"}), book.add_format({"num_format": "yyyy-mm-dd"})
    stamp, share = book.add_format({"num_format": "dd/mm/yyyy hh:mm"}), book.add_format({"num_format": "0%"})
    sheet.merge_range(0, 0, 0, len(HEADER) - 1, TITLE)
    sheet.write_row(2, 0, HEADER)
    for row, (number, name, joined, seen, amount, count, part, active, total, check) in enumerate(
        [
            (123, "Müller & Söhne", datetime.date(2026, 3, 1), WHEN, 0.1, 42, 0.125, True, 84, "#N/A"),
            (
                4711,
                None,
                datetime.date(1999, 12, 31),
                datetime.datetime(2000, 1, 1, 0, 0, 5),
                1234.5678,
                -7,
                1,
                False,
                -14,
                "ok",
            ),
        ],
        start=3,
    ):
        sheet.write_number(row, 0, number, code)
        if name:
            sheet.merge_range(row, 1, row + 1, 1, name)  # over two rows: the value in the top cell only
        sheet.write_datetime(row, 2, joined, day)
        sheet.write_datetime(row, 3, seen, stamp)
        sheet.write_number(row, 4, amount)
        sheet.write_number(row, 5, count)
        sheet.write_number(row, 6, part, share)
        sheet.write_boolean(row, 7, active)
        sheet.write_formula(row, 8, f"=F{row + 1}*2", None, total)  # the value Excel saved with the formula
        sheet.write_formula(row, 9, "=NA()" if check == "#N/A" else '="ok"', None, check)
    book.close()
    return path


def openpyxl_book(path: Path) -> Path:
    """The export as the first sheet, a second sheet after it."""
    book = OpenpyxlWorkbook()
    sheet = book.active
    sheet.title = "Data"
    sheet["A1"] = TITLE
    sheet.merge_cells(start_row=1, start_column=1, end_row=1, end_column=len(HEADER))
    sheet.append([])
    sheet.append(HEADER)
    sheet.append([123, "Müller & Söhne", datetime.date(2026, 3, 1), WHEN, 0.1, 42, 0.125, True, "=F4*2", "#N/A"])
    sheet.append(
        [
            4711,
            None,
            datetime.date(1999, 12, 31),
            datetime.datetime(2000, 1, 1, 0, 0, 5),
            1234.5678,
            -7,
            1,
            False,
            "=F5*2",
            "ok",
        ]
    )
    sheet.merge_cells("B4:B5")
    for row in (4, 5):
        sheet.cell(row, 1).number_format = "00000"
        sheet.cell(row, 3).number_format = "yyyy-mm-dd"
        sheet.cell(row, 4).number_format = "yyyy-mm-dd hh:mm:ss"
        sheet.cell(row, 7).number_format = "0.0%"
    book.create_sheet("Other").append(["a", "b"])
    book.save(path)
    return path


def read_all(path: Path, **options: object) -> tuple[WorkbookReader, list[list[str]]]:
    reader = WorkbookReader(path, **options)  # type: ignore[arg-type]
    tables = [table for table, _end in reader.tables()]
    table = pa.concat_tables(tables) if tables else reader.empty_table()
    return reader, [list(row.values()) for row in table.to_pylist()]


def test_xlsxwriter_export_reads_as_excel_shows_it(tmp_path: Path) -> None:
    reader, rows = read_all(xlsxwriter_book(tmp_path / "export.xlsx"))
    assert (reader.sheet, reader.header_row, reader.names) == ("Customers", 3, HEADER)
    assert rows == SHOWN


def test_openpyxl_export_reads_as_excel_shows_it(tmp_path: Path) -> None:
    reader, rows = read_all(openpyxl_book(tmp_path / "export.xlsx"))
    assert (reader.sheet, reader.header_row, reader.names) == ("Data", 3, HEADER)
    # openpyxl saves no value with a formula (Excel computes it on opening): the cell reads empty.
    expected = [[*row[:8], "", row[9]] for row in SHOWN]
    assert rows == expected


def test_sheets_are_listed_with_their_rows_and_the_first_visible_is_the_default(tmp_path: Path) -> None:
    path = xlsxwriter_book(tmp_path / "export.xlsx")
    sheets = list_sheets(path)
    assert [(s.name, s.visible, s.rows) for s in sheets] == [("Lookup", False, 1), ("Customers", True, 5)]
    reader, rows = read_all(path, sheet="Lookup")
    assert (reader.names, rows) == (["key", "value"], [])
    with pytest.raises(InvalidInput, match="no sheet called 'Nope'; its sheets are 'Lookup', 'Customers'"):
        WorkbookReader(path, sheet="Nope")
    second = openpyxl_book(tmp_path / "second.xlsx")
    assert [(s.name, s.visible) for s in list_sheets(second)] == [("Data", True), ("Other", True)]
    assert read_all(second, sheet="Other")[0].names == ["a", "b"]
    fast = OpenpyxlWorkbook(write_only=True)  # writes no <dimension>: the rows are counted
    for name, count in (("Short", 3), ("Long", 2_500)):
        sheet = fast.create_sheet(name)
        for i in range(count):
            sheet.append([f"row {i}", "x" * 2_000])  # ~5 MB of XML: counted over several reads
    fast.save(tmp_path / "fast.xlsx")
    assert [(s.name, s.rows) for s in list_sheets(tmp_path / "fast.xlsx")] == [("Short", 3), ("Long", 2_500)]


def test_an_explicit_header_row_is_taken_as_excel_numbers_rows(tmp_path: Path) -> None:
    path = xlsxwriter_book(tmp_path / "export.xlsx")
    reader, rows = read_all(path, header_row=4)
    assert reader.header_row == 4 and reader.names[:2] == ["00123", "Müller & Söhne"]
    assert rows == [SHOWN[1]]
    with pytest.raises(InvalidInput, match="row 2 of sheet 'Customers' is empty"):
        WorkbookReader(path, header_row=2)


def test_the_header_is_found_under_a_title_and_notes(tmp_path: Path) -> None:
    book = OpenpyxlWorkbook()
    sheet = book.active
    for row in (["Quarterly report"], ["Source: CRM", "exported by Ann"], [], ["id", "email", "amount"]):
        sheet.append(row)
    for i in range(5):
        sheet.append([i, f"u{i}@example.com", i * 1.5])
    book.save(tmp_path / "notes.xlsx")
    reader, rows = read_all(tmp_path / "notes.xlsx")
    assert (reader.header_row, reader.names) == (4, ["id", "email", "amount"])
    assert rows[0] == ["0", "u0@example.com", "0"] and len(rows) == 5


def test_progress_is_exact_monotone_and_reaches_the_file_size(tmp_path: Path) -> None:
    book = xlsxwriter.Workbook(str(tmp_path / "long.xlsx"))
    sheet = book.add_worksheet()
    sheet.write_row(0, 0, ["n", "text"])
    for i in range(1, 20_001):
        sheet.write_row(i, 0, [i, f"row {i}"])
    book.close()
    reader = WorkbookReader(tmp_path / "long.xlsx", piece_bytes=64 << 10, block_cells=4_000)  # 2,000 rows a block
    ends, count = [], 0
    for table, end in reader.tables():
        ends.append(end)
        count += table.num_rows
        assert reader.bytes_consumed == end
    size = (tmp_path / "long.xlsx").stat().st_size
    assert count == 20_000 and len(ends) > 5
    assert ends == sorted(ends) and ends[-1] == size and ends[0] < size // 2


def test_a_value_outside_the_header_is_refused_naming_its_cell(tmp_path: Path) -> None:
    book = OpenpyxlWorkbook()
    sheet = book.active
    sheet.append(["id", "name"])
    sheet.append([1, "a"])
    sheet.append([2, "b", "stray"])
    book.save(tmp_path / "stray.xlsx")
    with pytest.raises(InvalidInput, match="cell C3 of sheet 'Sheet' holds a value, but the header \\(row 1\\)"):
        read_all(tmp_path / "stray.xlsx")


def test_repeated_header_names_are_refused_with_their_columns(tmp_path: Path) -> None:
    book = OpenpyxlWorkbook()
    book.active.append(["id", "name", "id"])
    book.save(tmp_path / "dupes.xlsx")
    with pytest.raises(InvalidInput, match="repeats column names: 'id' \\(columns A, C\\)"):
        WorkbookReader(tmp_path / "dupes.xlsx")


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("General", GENERAL),
        ("0.00", GENERAL),
        ("#,##0.00 [$€-407]", GENERAL),
        ("00000", CODE),
        ("000-00-0000", CODE),
        ("0%", PERCENT),
        ("yyyy-mm-dd", DATE),
        ("[$-409]mmmm d, yyyy;@", DATE),
        ("dd/mm/yyyy hh:mm", DATETIME),
        ("h:mm:ss AM/PM", TIME),
        ("mm:ss.0", TIME),
        ("mmm-yy", DATE),
        ("yyyy-mm-dd hh:mm:ss.000", DATETIME),
        ("0.00E+00", GENERAL),
        ("@", GENERAL),
        ("0", GENERAL),
        ("[h]:mm:ss", GENERAL),
        ('"Order "0', GENERAL),
    ],
)
def test_number_formats_are_classified_by_what_they_show(code: str, kind: int) -> None:
    assert style_of(code).kind == kind


# --- hand-made parts: what other writers do -----------------------------------------------------------

CONTENT = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="xml" ContentType="application/xml"/></Types>'
)
ROOT_RELS = (
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" '
    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
    'Target="xl/workbook.xml"/></Relationships>'
)
BOOK_RELS = (
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
    'Target="worksheets/sheet1.xml"/>'
    '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" '
    'Target="sharedStrings.xml"/>'
    '<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" '
    'Target="styles.xml"/></Relationships>'
)
#: Cell styles 0: General, 1: Excel's built-in date format (14), 2: its built-in time format (21).
STYLES = (
    '<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><cellXfs count="3">'
    '<xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/><xf numFmtId="21" applyNumberFormat="1"/>'
    "</cellXfs></styleSheet>"
)


def handmade(rows: str, strings: str = "", prefix: str = "", date1904: bool = False) -> bytes:
    """A minimal workbook with ``rows`` as its one sheet's sheetData, the elements carrying ``prefix``."""
    p = prefix
    ns = f' xmlns{":" + p[:-1] if p else ""}="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    properties = f'<{p}workbookPr date1904="1"/>' if date1904 else ""
    book = (
        f'<{p}workbook{ns} xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
        f'{properties}<{p}sheets><{p}sheet name="S &amp; P" sheetId="1" r:id="rId1"/></{p}sheets></{p}workbook>'
    )
    sheet = f"<{p}worksheet{ns}><{p}sheetData>{rows}</{p}sheetData></{p}worksheet>"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", CONTENT)
        z.writestr("_rels/.rels", ROOT_RELS)
        z.writestr("xl/workbook.xml", book)
        z.writestr("xl/_rels/workbook.xml.rels", BOOK_RELS)
        z.writestr("xl/worksheets/sheet1.xml", sheet)
        z.writestr("xl/sharedStrings.xml", f"<{p}sst{ns}>{strings}</{p}sst>")
        z.writestr("xl/styles.xml", STYLES)
    return out.getvalue()


def test_prefixed_elements_other_attribute_orders_rich_text_and_escapes() -> None:
    strings = (
        "<x:si><x:t>plain</x:t></x:si>"
        '<x:si><x:r><x:t>ri</x:t></x:r><x:r><x:rPr><x:b/></x:rPr><x:t xml:space="preserve">ch </x:t></x:r>'
        "<x:rPh><x:t>phonetic</x:t></x:rPh></x:si>"
        "<x:si><x:t>line_x000D_&#10;break &lt;b&gt;</x:t></x:si>"
    )
    rows = (
        '<x:row r="1"><x:c r="A1" t="s"><x:v>0</x:v></x:c><x:c t="s" r="B1"><x:v>1</x:v></x:c></x:row>'
        '<x:row r="2"><x:c r="A2" t="s"><x:v>2</x:v></x:c><x:c s="0" t="inlineStr" r="B2"><x:is><x:t>in</x:t>'
        "</x:is></x:c></x:row>"
    )
    reader = WorkbookReader(io.BytesIO(handmade(rows, strings, prefix="x:")))
    assert reader.sheet == "S & P" and reader.names == ["plain", "rich "]
    assert [list(r.values()) for t, _ in reader.tables() for r in t.to_pylist()] == [["line\r\nbreak <b>", "in"]]


def test_dates_in_both_date_systems_and_cells_without_a_reference() -> None:
    header = '<row r="1"><c r="A1" t="inlineStr"><is><t>when</t></is></c><c r="B1" t="inlineStr"><is><t>at</t></is></c></row>'  # noqa: E501
    serials = [(2, 0.5), (1, 0.25), (59, 0), (61, 0.999994)]  # 59: the last day before Excel's made-up 1900-02-29
    rows = "".join(
        f'<row r="{i}"><c r="A{i}" s="1"><v>{day}</v></c><c r="B{i}" s="2"><v>{time}</v></c></row>'
        for i, (day, time) in enumerate(serials, start=2)
    )
    in_1900 = [
        ["1900-01-02", "12:00:00"],
        ["1900-01-01", "06:00:00"],
        ["1900-02-28", "00:00:00"],
        ["1900-03-01", "23:59:59"],
    ]
    assert [list(r.values()) for t in read_all_bytes(handmade(header + rows)) for r in t.to_pylist()] == in_1900
    in_1904 = [r["when"] for t in read_all_bytes(handmade(header + rows, date1904=True)) for r in t.to_pylist()]
    assert in_1904 == ["1904-01-03", "1904-01-02", "1904-02-29", "1904-03-02"]
    no_reference = '<row r="1"><c t="inlineStr"><is><t>a</t></is></c></row>'
    with pytest.raises(InvalidInput, match="cells without a cell reference"):
        WorkbookReader(io.BytesIO(handmade(no_reference)))


def test_rows_and_columns_beyond_excels_are_refused() -> None:
    far_down = '<row r="1"><c r="A1" t="inlineStr"><is><t>a</t></is></c></row><row r="1048577"><c r="A1048577"><v>1</v></c></row>'  # noqa: E501
    with pytest.raises(InvalidInput, match="row 1,048,577, beyond Excel's last"):
        read_all_bytes(handmade(far_down))
    far_right = '<row r="1"><c r="XFE1"><v>1</v></c></row>'
    with pytest.raises(InvalidInput, match="beyond column XFD"):
        read_all_bytes(handmade(far_right))


def read_all_bytes(data: bytes) -> list[pa.Table]:
    return [table for table, _end in WorkbookReader(io.BytesIO(data)).tables()]


# --- what cannot be read ------------------------------------------------------------------------------

OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)


def ole2(*streams: str) -> bytes:
    """An OLE2 (compound file) header and a directory naming ``streams``, as Office writes them."""
    return OLE2 + b"".join(name.encode("utf-16-le").ljust(128, b"\0") for name in streams)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (ole2("Root Entry", "EncryptionInfo", "EncryptedPackage"), "protected with a password .encrypted."),
        (
            ole2("Root Entry", "Workbook", "SummaryInformation"),
            r"old Excel 97-2003 workbook \(.xls\) — open it in Excel",
        ),
        (b"id,name\n1,a\n", r"not an Excel workbook \(.xlsx\)"),
    ],
    ids=["encrypted", "xls", "csv"],
)
def test_files_that_are_no_xlsx_are_refused_in_one_sentence(data: bytes, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        WorkbookReader(io.BytesIO(data))


def test_a_zip_without_a_workbook_and_a_damaged_zip_are_refused() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(InvalidInput, match="a zip file but not an Excel workbook"):
        WorkbookReader(io.BytesIO(out.getvalue()))
    with pytest.raises(InvalidInput, match=r"damaged \(not a complete zip file\)"):
        WorkbookReader(io.BytesIO(out.getvalue()[:-30]))


def test_an_empty_sheet_is_refused(tmp_path: Path) -> None:
    book = xlsxwriter.Workbook(str(tmp_path / "empty.xlsx"))
    book.add_worksheet("Blank")
    book.close()
    with pytest.raises(InvalidInput, match="sheet 'Blank' is empty — choose the sheet that holds the table"):
        WorkbookReader(tmp_path / "empty.xlsx")


def test_a_bomb_by_ratio_is_refused_before_it_is_unpacked() -> None:
    # 40 MB of rows that deflate to about 40 kB: a ratio of ~1,000, where real sheets are 8-30.
    row = '<row r="1"><c r="A1"><v>1</v></c></row>'
    data = handmade(row * (40_000_000 // len(row)))
    assert len(data) < 1_000_000
    with pytest.raises(InvalidInput, match=r"part xl/worksheets/sheet1\.xml would unpack to 40 MB .*zip bomb"):
        WorkbookReader(io.BytesIO(data))


def test_a_bomb_by_declared_size_is_refused_before_it_is_unpacked() -> None:
    data = bytearray(handmade('<row r="1"><c r="A1"><v>1</v></c></row>'))
    name = b"xl/worksheets/sheet1.xml"
    entry = _central_entry(bytes(data), name)
    data[entry + 24 : entry + 28] = struct.pack("<I", 3_000_000_000)  # the declared uncompressed size
    with pytest.raises(InvalidInput, match="would unpack to 3,000 MB"):
        WorkbookReader(io.BytesIO(bytes(data)))


def _central_entry(data: bytes, name: bytes) -> int:
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        length = struct.unpack("<H", data[at + 28 : at + 30])[0]
        if data[at + 46 : at + 46 + length] == name:
            return at
        at = data.find(b"PK\x01\x02", at + 4)
    raise AssertionError(name)


def test_a_refusal_closes_the_zip_but_leaves_the_callers_file_to_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "empty.xlsx"
    book = xlsxwriter.Workbook(str(path))
    book.add_worksheet()
    book.close()
    opened: list[zipfile.ZipFile] = []

    class Recorded(zipfile.ZipFile):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            opened.append(self)

    monkeypatch.setattr(zipfile, "ZipFile", Recorded)
    for source in (path, path.open("rb")):
        with pytest.raises(InvalidInput, match="is empty"):
            WorkbookReader(source)  # type: ignore[arg-type]
    assert len(opened) == 2 and all(z.fp is None for z in opened)  # closed
    assert not source.closed  # type: ignore[union-attr]  # the caller's own file is the caller's to close
    source.close()  # type: ignore[union-attr]


def test_a_macro_workbook_reads_like_any_other(tmp_path: Path) -> None:
    (tmp_path / "vbaProject.bin").write_bytes(OLE2)  # the macros' own container, never read
    book = xlsxwriter.Workbook(str(tmp_path / "macros.xlsm"))
    book.add_worksheet("Orders").write_row(0, 0, ["order", "qty"])
    book.worksheets()[0].write_row(1, 0, ["A-1", 3])
    book.add_vba_project(str(tmp_path / "vbaProject.bin"))
    book.close()
    reader, rows = read_all(tmp_path / "macros.xlsm")
    assert (reader.names, rows) == (["order", "qty"], [["A-1", "3"]])


def test_numbers_read_as_excel_shows_them_ids_in_full_and_saved_results_to_15_digits(tmp_path: Path) -> None:
    """Barcodes and phone numbers are whole numbers of 11-13 digits: Excel shows every digit, so do we.
    Excel saves a computed result with 17 digits (``0.30000000000000004``) and shows it to 15 (0.3)."""
    path = tmp_path / "ids.xlsx"
    book = xlsxwriter.Workbook(str(path))
    sheet = book.add_worksheet("Ids")
    whole, thousands = book.add_format({"num_format": "0"}), book.add_format({"num_format": "#,##0"})
    percent = book.add_format({"num_format": "0%"})
    sheet.write_row(0, 0, ["barcode", "phone", "order", "sum", "share", "price", "zero"])
    sheet.write_number(1, 0, 4006381333931, whole)
    sheet.write_number(1, 1, 49301234567)
    sheet.write_number(1, 2, 123456789012, thousands)
    sheet.write_number(1, 3, 0.1 + 0.2)  # 0.30000000000000004, as Excel saves =0.1+0.2
    sheet.write_number(1, 4, 0.1 + 0.2, percent)
    sheet.write_number(1, 5, 1234.5700000000002)
    sheet.write_number(1, 6, -0.0)
    book.close()
    _reader, rows = read_all(path)
    assert rows == [["4006381333931", "49301234567", "123456789012", "0.3", "30%", "1234.57", "0"]]


def test_a_result_excel_saved_with_17_digits_reads_as_the_15_it_shows() -> None:
    rows = (
        '<row r="1"><c r="A1" t="inlineStr"><is><t>sum</t></is></c><c r="B1" t="inlineStr"><is><t>price</t></is></c>'
        "</row>"
        '<row r="2"><c r="A2"><v>0.30000000000000004</v></c><c r="B2"><v>1234.5700000000002</v></c></row>'
    )
    tables = read_all_bytes(handmade(rows))
    assert [list(r.values()) for t in tables for r in t.to_pylist()] == [["0.3", "1234.57"]]


def test_a_header_of_years_under_a_title_is_found(tmp_path: Path) -> None:
    """Column names that are numbers (years) make the header "mostly numbers"; the title above it is one cell."""
    path = tmp_path / "years.xlsx"
    book = xlsxwriter.Workbook(str(path))
    sheet = book.add_worksheet()
    sheet.write(0, 0, "Sales by year")
    sheet.write_row(2, 0, ["Region", 2021, 2022, 2023])
    sheet.write_row(3, 0, ["North", 10, 12, 15])
    sheet.write_row(4, 0, ["South", 8, 9, 11])
    book.close()
    reader, rows = read_all(path)
    assert reader.header_row == 3 and reader.names == ["Region", "2021", "2022", "2023"]
    assert rows == [["North", "10", "12", "15"], ["South", "8", "9", "11"]]
