"""What a browser reports of a chosen file is bounded by the page, not only by the JavaScript that
should send it (found by the outside review: any number and size of ranges were decoded every run)."""

from __future__ import annotations

import base64

from ui.direct import PROBE_BYTES, WORKBOOK_BYTES, Chosen


def state(head: bytes, ranges: list[tuple[int, bytes]]) -> dict:
    encoded = [[at, base64.b64encode(data).decode()] for at, data in ranges]
    return {"id": "f1", "name": "book.xlsx", "size": 10**9, "head": base64.b64encode(head).decode(), "ranges": encoded}


def test_ranges_within_the_budget_are_read_and_beyond_it_none_are() -> None:
    fair = Chosen.from_state(state(b"PK\x03\x04", [(1000, b"x" * 1000), (5000, b"y" * 1000)]))
    assert fair is not None and [at for at, _ in fair.ranges] == [1000, 5000]
    many = Chosen.from_state(state(b"PK\x03\x04", [(i * 10, b"z") for i in range(65)]))
    big = Chosen.from_state(state(b"PK\x03\x04", [(0, b"w" * (2 * WORKBOOK_BYTES["budget"]))]))
    assert many is not None and big is not None and many.ranges == () and big.ranges == ()  # the file, no preview bytes
    long_head = Chosen.from_state(state(b"a" * (PROBE_BYTES * 3), []))
    assert long_head is not None and len(long_head.head) == PROBE_BYTES
