"""A file that cannot be read is refused naming the record as staff find it in Excel (issue 23.5):
its row (the header is row 1; a value with line breaks is one row), its first cell, the cause."""

from __future__ import annotations

import csv
import io

import pytest
from customers import customers

from s3task import processing
from s3task.errors import InvalidInput
from s3task.progress import Progress


def run(data: bytes, block_size: int = 4 << 20) -> tuple[str, Progress]:
    seen: list[Progress] = []
    with pytest.raises(InvalidInput) as raised:
        processing.run("copy", {}, io.BytesIO(data), io.BytesIO(), seen.append, block_size=block_size)
    return str(raised.value), seen[-1]


def excel_row(data: bytes, customer: str) -> int:
    """The row Excel shows the customer on: records from the top of the file, the header being row 1."""
    for row, fields in enumerate(csv.reader(io.StringIO(data.decode(), newline="")), 1):
        if fields and fields[0] == customer:
            return row
    raise AssertionError(customer)


@pytest.mark.parametrize("block_size", [4 << 20, 64 << 10], ids=["one block", "many blocks"])
def test_a_stray_quote_on_line_5000_names_its_row_its_customer_and_the_quote(block_size: int) -> None:
    data = customers(20_000, stray_line=5_000)
    assert data.split(b"\n")[4_999].startswith(b"C04375,")  # line 5,000 of the file
    message, counts = run(data, block_size)
    row = excel_row(customers(20_000), "C04375")  # the same file without the stray quote
    assert row == 4_376  # quoted line breaks: the lines above it are more than its rows
    assert message.startswith(
        "row 4,376 (customer_id C04375; line 5,000 in a text editor): a quote opened in `notes` is never closed"
    ), message
    assert 'Add the closing ", or write a " that is part of the text twice' in message
    assert "must be in double quotes" not in message  # the opposite fix
    assert counts.processed_count == 4_374  # every customer before it was read


def test_an_unquoted_comma_is_too_many_values_and_says_to_quote() -> None:
    data = customers(300).replace(b"Name 250,", b"Name 250, Jr.,", 1)
    message, counts = run(data)
    assert message == (
        "row 251 (customer_id C00250; line 286 in a text editor): 10 values where the header has 9 columns — "
        "a value that contains a comma must be in double quotes"
    )
    assert counts.processed_count == 249


def test_a_short_row_says_it_is_short_not_to_quote() -> None:
    data = customers(300).replace(b",retail,ok\nC00101,", b"\nC00101,", 1)
    message, counts = run(data)
    assert message.startswith(
        "row 101 (customer_id C00100; line 115 in a text editor): 7 values where the header has 9 columns — "
        "the row is short"
    ), message
    assert "double quotes" not in message
    assert counts.processed_count == 99


def test_blank_lines_are_rows_as_excel_counts_them_in_every_block() -> None:
    head = b"id,name\n" + b"".join(b"%d,n%d\n\n" % (i, i) for i in range(1, 2_001))  # a blank line after each
    message, counts = run(head + b'2001,"open\n2002,x\n', block_size=1_024)
    assert message.startswith("row 4,002 (id 2001): a quote opened in `name` on line 4,002 is never closed"), message
    assert counts.processed_count == 2_000


def test_an_unclosed_quote_at_the_end_of_the_file_names_its_row() -> None:
    data = customers(50) + b'C00051,"Name 51,x,y,z,NL,2024,retail,ok\n'
    message, _ = run(data)
    assert message.startswith(
        "row 52 (customer_id C00051; line 59 in a text editor): a quote opened in `name` on line 59 is never closed"
    ), message


def test_rows_count_blank_lines_but_not_empty_lines_inside_a_quoted_value() -> None:
    # CRLF; a note with an empty line inside its quotes (one row), then a blank line (a row to Excel).
    data = b"id,note\r\n" + b'1,"first\r\n\r\nthird"\r\n\r\n' * 300 + b"3,y,z\r\n"
    records = list(csv.reader(io.StringIO(data.decode(), newline="")))
    row = records.index(["3", "y", "z"]) + 1  # as Excel numbers it
    assert row == 1 + 300 * 2 + 1
    message, counts = run(data, block_size=256)
    assert message.startswith(f"row {row:,} (id 3; line 1,202 in a text editor): 3 values"), message
    assert counts.processed_count == 300
