"""Helpers the test modules share (one copy each)."""

from __future__ import annotations


def csv_rows(n: int) -> bytes:
    """A CSV with a header ``id,name`` and ``n`` rows."""
    return ("id,name\n" + "".join(f"{i},name {i}\n" for i in range(n))).encode()


def csv_bytes(rows: list[list[str]], eol: str = "\n", quote_all: bool = False) -> bytes:
    """RFC 4180 text: a cell is quoted when it holds a comma, a quote, CR or LF (or always, with quote_all)."""

    def cell(value: str) -> str:
        if quote_all or any(c in value for c in ',"\r\n'):
            return '"' + value.replace('"', '""') + '"'
        return value

    return "".join(",".join(map(cell, row)) + eol for row in rows).encode("utf-8")
