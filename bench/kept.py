"""A benchmark's own section of BENCHMARKS.md, between its ``<!-- kept: NAME -->`` and ``<!-- /kept -->`` lines,
written again from its figures (or added before "How it is measured" the first time)."""

from __future__ import annotations

from pathlib import Path


def replace_kept(md: Path, begin: str, end: str, block: str) -> None:
    """Put ``block`` (which starts with ``begin`` and ends with ``end`` and a newline) where the section was."""
    text = md.read_text()
    start = text.find(begin)
    if start >= 0:
        stop = text.index(end, start) + len(end) + 1
        text = text[:start] + block + text[stop:]
    else:
        text = text.replace("## How it is measured", block + "\n## How it is measured", 1)
    md.write_text(text)
