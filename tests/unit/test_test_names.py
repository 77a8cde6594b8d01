"""The suite's test modules have names of their own: pytest imports each by its file name (the tests
folders are not packages), so a second ``test_x.py`` in another folder stops the whole run at collection
("import file mismatch") — and only a run of both folders at once shows it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_no_two_test_modules_share_a_file_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if "__pycache__" not in path.parts:
            where[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not shared, f"rename one of each: {shared}"
