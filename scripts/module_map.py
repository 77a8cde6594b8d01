"""The module map in docs/ARCHITECTURE.md: every module of ``s3task/``, ``ui/`` and ``pages/`` in one line,
taken from the first sentence of its docstring, so the map says what the code says.

    python scripts/module_map.py           # print the map
    python scripts/module_map.py --write   # put it in docs/ARCHITECTURE.md, between its markers
    python scripts/module_map.py --check   # exit 1 if the docs' map is not the code's (a unit test runs it)

A module without a docstring is named as such, and ``--check`` fails on it: each module says what it is.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("s3task", "ui", "pages")
DOC = ROOT / "docs" / "ARCHITECTURE.md"
BEGIN, END = "<!-- module map: scripts/module_map.py --write -->", "<!-- end of module map -->"
NONE = "(no docstring)"
#: The most characters of a sentence the map shows (a longer one is cut at a space, with "…").
LONGEST = 200
#: A sentence ends at a full stop followed by a space (``e.g.`` and ``i.e.`` do not end one).
_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.(\s|$)")


def first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, on one line, without markup of reST roles."""
    if not doc:
        return NONE
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    paragraph = re.sub(r":(?:class|func|mod|meth|data|attr):`~?([^`]+)`", r"`\1`", paragraph)
    found = _END.search(paragraph)
    sentence = paragraph[: found.start()] if found else paragraph
    if len(sentence) > LONGEST:
        sentence = sentence[: sentence.rfind(" ", 0, LONGEST)] + " …"
    return sentence.replace("``", "`").replace("|", "\\|")


def modules(root: Path = ROOT) -> list[tuple[str, str]]:
    """(dotted name, what it is) for every module, packages' ``__init__`` as the package, sorted."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found.append((name, first_sentence(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))))))
    return sorted(found)


def table(rows: list[tuple[str, str]]) -> str:
    lines = ["| module | what it is |", "|---|---|"]
    lines += [f"| `{name}` | {what} |" for name, what in rows]
    return "\n".join(lines)


def with_map(doc: str, rows: list[tuple[str, str]]) -> str:
    start, stop = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    return doc[:start] + "\n" + table(rows) + "\n" + doc[stop:]


def main(argv: list[str]) -> int:
    rows = modules()
    if "--write" in argv:
        DOC.write_text(with_map(DOC.read_text(encoding="utf-8"), rows), encoding="utf-8")
        return 0
    if "--check" in argv:
        bare = [name for name, what in rows if what == NONE]
        stale = with_map(DOC.read_text(encoding="utf-8"), rows) != DOC.read_text(encoding="utf-8")
        for name in bare:
            print(f"{name}: no docstring (say what the module is in its first sentence)", file=sys.stderr)
        if stale:
            print(
                "docs/ARCHITECTURE.md's module map is not the code's: run scripts/module_map.py --write",
                file=sys.stderr,
            )
        return 1 if bare or stale else 0
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
