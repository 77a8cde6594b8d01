"""RELIABILITY.md's "Misuse" table is part of what ``python tests/faults.py report`` writes, so
regenerating the file keeps it, with or without the figures of the last run (issue 26)."""

from __future__ import annotations

from pathlib import Path

import faults

ROOT = Path(__file__).resolve().parents[2]


def test_the_misuse_table_survives_a_regeneration_without_figures() -> None:
    report = faults.render_report({})
    assert "## Misuse" in report
    for tried, *_ in faults.MISUSE:
        assert tried in report
    assert report.count("not measured in the last run") == sum(1 for *_, section in faults.MISUSE if section)


def test_the_committed_report_has_the_table_regeneration_writes() -> None:
    committed = (ROOT / "RELIABILITY.md").read_text()
    for line in faults.render_misuse({}):
        if line.startswith("| ") and "checked (no figure)" in line:
            assert line in committed, line


def test_every_test_the_table_names_exists() -> None:
    for *_, tests, _section in faults.MISUSE:
        for name in tests.split(", "):
            assert (ROOT / name).is_file(), name
