"""The bad-input corpus, built at test time (nothing binary is checked in).

Each :class:`Case` is an input file and what must happen to it: either the
task fails with :class:`~s3task.errors.InvalidInput` whose message contains
``error``, or it succeeds and the output holds exactly the input's cells
(``rows``, after the documented formula neutralisation). Other test modules
(the worker's) may reuse :func:`corpus`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from support import csv_bytes

FIVE_MB = 5 * 1024 * 1024


@dataclass(frozen=True)
class Case:
    name: str
    data: bytes
    #: Text the InvalidInput message must contain; None when the input is fine.
    error: str | None = None
    #: The cells the output must hold (header first, without the error column); None to skip the check.
    rows: list[list[str]] | None = None
    #: A small block size forces block boundaries into the interesting places.
    block_size: int | None = None


def numbered(n: int, start: int = 1) -> list[list[str]]:
    """``n`` ordinary rows of three columns."""
    return [[str(i), f"name {i}", f"{i * 1.5:.1f}"] for i in range(start, start + n)]


HEADER = ["id", "name", "amount"]


def corpus() -> list[Case]:
    many = numbered(1_202)  # data rows on lines 2 … 1,203: the next line is 1,204
    quoted_newlines = [["id", "text"]] + [
        [str(i), f"first line {i}\nsecond line, with comma\r\nthird"] for i in range(40)
    ]
    formulas = [
        ["=formula", "value"],
        ["=SUM(A1)", "-42"],
        ["+3.5", "-1e5"],
        ["@user", "+x"],
        ["\tindented", "\rreturn"],
        ["-", "plain"],
        ["'quoted", "2024-01-01"],
    ]
    return [
        Case("empty", b"", error="the file is empty"),
        Case("blank lines only", b"\n\r\n\n", error="the file is empty"),
        Case("header only", b"id,name,amount\n", rows=[HEADER]),
        # Excel for Mac's "CSV (Macintosh)": CR between rows, LF inside a quoted cell. Refused, never read
        # as a header swallowing the rows after it (which dropped them without a word).
        Case("mac line ends, LF in a cell", b'name,notes\ra,"line1\nline2"\rb,x\r', error="mixes line endings"),
        Case("CR rows, then LF rows", b"a,b\r1,2\r3,4\n5,6\n", error="mixes line endings"),
        Case("header only, no line end", b"id,name,amount", rows=[HEADER]),
        Case("ordinary", csv_bytes([HEADER, *numbered(50)]), rows=[HEADER, *numbered(50)]),
        Case("no final line end", csv_bytes([HEADER, *numbered(3)])[:-1], rows=[HEADER, *numbered(3)]),
        Case("cells stay text", b"code,n\n007,\n,1e3\n", rows=[["code", "n"], ["007", ""], ["", "1e3"]]),
        Case(
            "ragged: too many fields",
            b"a,b,c,d\n1,2,3,4\n1,2,3,4,5,6\n7,8,9,10\n",
            error="row 3 (a 1): 6 values where the header has 4 columns — a value that contains a comma must be in",
        ),
        Case(
            "ragged: too few fields",
            b"a,b,c\n1,2,3\n4,5,6\n7,8\n",
            error="row 4 (a 7): 2 values where the header has 3 columns — the row is short",
        ),
        Case(
            "ragged after quoted newlines",
            csv_bytes([["a", "b"], ["1", "x\ny\nz"], ["2", "w"]]) + b"3,4,5\n",
            error="row 4 (a 3; line 6 in a text editor): 3 values where the header has 2 columns",
        ),
        Case(
            "ragged in a later block",
            csv_bytes([HEADER, *many]) + b"1,2\n",
            error="row 1,204 (id 1): 2 values where the header has 3 columns",
            block_size=4096,
        ),
        Case(
            "not UTF-8 (latin-1)",
            "name,city\nJosé,Zürich\n".encode("latin-1"),
            error="line 2: not UTF-8 text — save the file as 'CSV UTF-8'",
        ),
        Case(
            "not UTF-8 in a later block",
            csv_bytes([HEADER, *many]) + "9,Müller,1\n".encode("latin-1"),
            error="line 1,204: not UTF-8 text",
            block_size=4096,
        ),
        Case("not UTF-8 in the header", "Straße,Größe\n1,2\n".encode("latin-1"), error="line 1: not UTF-8 text"),
        Case("binary junk", random.Random(3).randbytes(20_000), error="save the file as 'CSV UTF-8'"),
        Case("binary with NULs", b"\x00\x01\x02\x03" * 500 + b"\n" + b"\x00" * 100, error="binary data"),
        Case("an Excel file", b"PK\x03\x04" + random.Random(4).randbytes(5_000), error="Excel"),
        Case("UTF-16", "a,b\n1,2\n".encode("utf-16"), error="UTF-16"),
        Case(
            "unterminated quote",
            csv_bytes([HEADER, *many]) + b'1204,"never closed,1\n1205,x,2\n',
            error="row 1,204 (id 1204): a quote opened in `name` on line 1,204 is never closed",
            block_size=4096,
        ),
        Case(
            "unterminated quote in the header",
            b'a,"b\n1,2\n',
            error="row 1 (the header row): a quote opened in column 2 is never closed",
        ),
        Case(
            "a 5 MB cell",
            csv_bytes([["id", "big", "after"], ["1", "x" * FIVE_MB, "y"], ["2", "small", "z"]]),
            rows=[["id", "big", "after"], ["1", "x" * FIVE_MB, "y"], ["2", "small", "z"]],
            block_size=64 * 1024,
        ),
        Case(
            "a 5 MB quoted cell with newlines",
            csv_bytes([["id", "big"], ["1", "line\n" * (FIVE_MB // 5)], ["2", "z"]]),
            rows=[["id", "big"], ["1", "line\n" * (FIVE_MB // 5)], ["2", "z"]],
            block_size=64 * 1024,
        ),
        Case("duplicate header names", b"id,name,ID,name\n1,2,3,4\n", error="'name' (columns 2, 4)"),
        Case("duplicate empty header names", b"id,,\n1,2,3\n", error="an empty name (columns 2, 3)"),
        Case("formula cells", csv_bytes(formulas), rows=formulas),
        Case(
            "quoted newlines across block boundaries",
            csv_bytes(quoted_newlines),
            rows=quoted_newlines,
            block_size=16,
        ),
        Case("CRLF line ends", csv_bytes([HEADER, *numbered(20)], eol="\r\n"), rows=[HEADER, *numbered(20)]),
        Case("CR line ends", csv_bytes([HEADER, *numbered(20)], eol="\r"), rows=[HEADER, *numbered(20)]),
        Case(
            "UTF-8 BOM",
            b"\xef\xbb\xbf" + csv_bytes([HEADER, ["1", "Zoë", "2"]], eol="\r\n"),
            rows=[HEADER, ["1", "Zoë", "2"]],
        ),
        Case(
            "a BOM inside the file (files joined together)",
            b"a,b\n1,2\n\xef\xbb\xbfa,b\n3,4\n",
            rows=[["a", "b"], ["1", "2"], ["\ufeffa", "b"], ["3", "4"]],
            block_size=1,
        ),
        Case(
            "blank lines between rows",
            b"\n\na,b\n\n1,2\r\n\r\n3,4\n\n",
            rows=[["a", "b"], ["1", "2"], ["3", "4"]],
        ),
        Case(
            "stray quotes inside unquoted values",
            b'item,size\nmonitor,27" wide\n"tv","55"" screen"\ncable,6" long\n',
            rows=[["item", "size"], ["monitor", '27" wide'], ["tv", '55" screen'], ["cable", '6" long']],
            block_size=8,
        ),
        Case(
            "every cell quoted",
            csv_bytes([HEADER, *numbered(30)], quote_all=True),
            rows=[HEADER, *numbered(30)],
            block_size=64,
        ),
    ]


def case(name: str) -> Case:
    return next(c for c in corpus() if c.name == name)
