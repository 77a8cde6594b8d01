"""Files as spreadsheet programs save them, in the dialects people send (tests/unit/test_dialect.py,
tests/system/test_app.py): the same rows, each with the way to read it."""

from __future__ import annotations

from s3task.csvio import InputFormat

ROWS = [
    ["Name", "Straße", "Betrag"],
    ["Müller", "Hauptstraße 5", "€ 1.234,50"],
    ['Jörg; "der Ältere"', "Königsallee 1", "12,00"],
    ["Zoë", "Rue de l'Église", "0,99"],
]


def excel(rows: list[list[str]], delimiter: str, eol: str = "\r\n") -> str:
    """Rows as Excel writes them: a value is quoted when it holds the delimiter, a quote or a line end."""

    def cell(value: str) -> str:
        if any(c in value for c in (delimiter, '"', "\n", "\r")):
            return '"' + value.replace('"', '""') + '"'
        return value

    return "".join(delimiter.join(map(cell, row)) + eol for row in rows)


#: name -> (the file's bytes, what it must be detected as)
FILES = {
    "excel csv, europe": (excel(ROWS, ";").encode("cp1252"), InputFormat(";", "windows-1252")),
    "excel unicode text": (("\ufeff" + excel(ROWS, "\t")).encode("utf-16-le"), InputFormat("\t", "utf-16-le")),
    "excel csv utf-8": (("\ufeff" + excel(ROWS, ",")).encode("utf-8"), InputFormat(",", "utf-8")),
    "pipes": (excel(ROWS, "|", eol="\n").encode("utf-8"), InputFormat("|", "utf-8")),
    "utf-16 big-endian": (("\ufeff" + excel(ROWS, "\t")).encode("utf-16-be"), InputFormat("\t", "utf-16-be")),
}
