"""The issue-23 customer list: quoted notes with line breaks, so lines and Excel rows differ."""

from __future__ import annotations

HEADER = "customer_id,name,email,phone,city,country,signup,segment,notes"


def customers(n: int = 20_000, stray_line: int | None = None) -> bytes:
    """``n`` customers C00001…; every 7th has a two-line note in quotes. With ``stray_line``, the row
    that starts on that line of the file has a note opened with a quote that is never closed."""
    out = [HEADER]
    line = 2
    for i in range(1, n + 1):
        notes = f'"Called twice\nasked for invoice {i}"' if i % 7 == 0 else "ok"
        if line == stray_line:
            notes = '"Promised a callback'
        out.append(f"C{i:05d},Name {i},c{i}@example.com,555-{i:04d},Town,NL,2024-01-01,retail,{notes}")
        line += notes.count("\n") + 1
    return ("\n".join(out) + "\n").encode()
