"""Generated benchmark inputs: ~10 columns of mixed text and numbers, made fast by repeating a block.

One block of rows is built with numpy (seeded, so every run makes the same
bytes) and written once with pandas; bigger files repeat it (the engine does
not care that rows recur) and end on a row boundary. Files land in
``bench/out/data/`` and are reused across runs.

The columns look like a real export: ids, names, an email address (mostly
valid, some at free providers or role accounts, some broken, some upper case
or padded — what ``email_enrichment`` is for), a company with a comma (so
quoted), a city, a country code, signed amounts (negative numbers start with
``-``, which the formula check must look at), a quantity, a timestamp and a
free-text note that is sometimes quoted, sometimes holds a quoted line break
and now and then starts with ``@`` or ``=`` (neutralised on output).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pandas as pd

BLOCK_ROWS = 100_000
MB = 1_000_000

FIRST = "Anna Ben Chloé Dmitri Emma Farid Grace Hiro Ines Jonas Kwame Lena Mateo Nora Omar Priya Quinn Rosa Sven Tariq"
LAST = "Smith Müller García Rossi Dubois Kowalski Nguyen Okafor Silva Tanaka Jensen Novak Haddad Murphy Ivanova Chen"
COMPANY = [
    "Acme, Inc.",
    "Globex Ltd",
    "Initech",
    "Umbrella Corp",
    "Stark Industries",
    "Wayne Enterprises",
    "Hooli, LLC",
    "Vandelay Imports",
    "Soylent",
    "Tyrell Corporation",
]
CITY = [
    "Berlin",
    "Paris",
    "Lisbon",
    "Madrid",
    "Rome",
    "Vienna",
    "Prague",
    "Warsaw",
    "Dublin",
    "Oslo",
    "Helsinki",
    "Athens",
    "Zürich",
    "Porto",
    "Lyon",
]
COUNTRY = ["DE", "FR", "PT", "ES", "IT", "AT", "CZ", "PL", "IE", "NO", "FI", "GR", "CH"]
DOMAIN = [
    "gmail.com",
    "outlook.com",
    "yahoo.fr",
    "acme.example",
    "globex.co.uk",
    "initech.io",
    "web.de",
    "corp.example",
]
NOTES = [
    "",
    "",
    "",
    "call back next week",
    "prefers email, not phone",
    '"VIP", handle with care',
    "line one\nline two",
    "@channel follow-up",
    "=needs review",
    "ordered 3x; paid by card",
]


def columns() -> list[str]:
    return [
        "id",
        "first_name",
        "last_name",
        "email",
        "company",
        "city",
        "country",
        "amount",
        "quantity",
        "created_at",
        "note",
    ]


def block(rows: int = BLOCK_ROWS, seed: int = 8) -> bytes:
    """``rows`` data rows plus the header, as CSV bytes (LF line ends, minimal quoting)."""
    rng = np.random.default_rng(seed)
    first = np.array(FIRST.split())[rng.integers(0, 20, rows)]
    last = np.array(LAST.split())[rng.integers(0, 16, rows)]
    local = pd.Series(first).str.lower() + "." + pd.Series(last).str.lower()
    local = local.where(rng.random(rows) > 0.05, "info")  # role accounts
    email = local + "@" + np.array(DOMAIN)[rng.integers(0, len(DOMAIN), rows)]
    kind = rng.random(rows)
    email = email.where(kind > 0.03, local)  # no @
    email = email.where((kind < 0.03) | (kind > 0.05), " " + email.str.upper() + " ")  # padded, upper case
    email = email.where((kind < 0.05) | (kind > 0.06), "")  # missing
    seconds = rng.integers(1_600_000_000, 1_760_000_000, rows).astype("datetime64[s]")
    frame = pd.DataFrame(
        {
            "id": np.arange(1, rows + 1),
            "first_name": first,
            "last_name": last,
            "email": email,
            "company": np.array(COMPANY)[rng.integers(0, len(COMPANY), rows)],
            "city": np.array(CITY)[rng.integers(0, len(CITY), rows)],
            "country": np.array(COUNTRY)[rng.integers(0, len(COUNTRY), rows)],
            "amount": np.round(rng.normal(120, 200, rows), 2),
            "quantity": rng.integers(1, 500, rows),
            "created_at": np.datetime_as_string(seconds, unit="s"),
            "note": np.array(NOTES, dtype=object)[rng.integers(0, len(NOTES), rows)],
        }
    )
    buf = io.StringIO()
    frame.to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue().encode()


def ensure(directory: Path, size_mb: int) -> Path:
    """``directory/data-<size>MB.csv`` of about ``size_mb`` MB (10^6 bytes), made once and reused."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"data-{size_mb}MB.csv"
    if path.exists() and _rows_file(path).exists():
        return path
    body = block()
    header, rows = body.split(b"\n", 1)
    target = size_mb * MB
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(header + b"\n")
        written = len(header) + 1
        count = 0
        while written < target:
            piece = rows[: target - written]
            if len(piece) < len(rows):
                piece = piece[: row_end(piece) + 1]
                if not piece:
                    break
                count += _count(header + b"\n" + piece)
            else:
                count += BLOCK_ROWS
            f.write(piece)
            written += len(piece)
    os.replace(tmp, path)  # atomic: concurrent runs never see half a file
    _rows_file(path).write_text(str(count))
    return path


def rows_in(path: Path) -> int:
    """Data rows of a file made by :func:`ensure`."""
    return int(_rows_file(path).read_text())


def _rows_file(path: Path) -> Path:
    return path.with_suffix(".rows")


def row_end(data: bytes) -> int:
    """The last line end in ``data`` that closes a row (outside quotes)."""
    end = data.rfind(b"\n")
    while end >= 0 and data.count(b'"', 0, end) % 2:
        end = data.rfind(b"\n", 0, end)
    return end


def _count(body: bytes) -> int:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    opts = pacsv.ParseOptions(newlines_in_values=True)
    return pacsv.read_csv(pa.py_buffer(body), parse_options=opts).num_rows
