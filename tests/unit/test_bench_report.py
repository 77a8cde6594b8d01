"""BENCHMARKS.md as ``bench/report`` writes it, from a saved results dict (no benchmark is run).

``tests/bench_results.json`` has the shape of ``bench/out/results.json`` (what ``bench/run.py``
saves), filled with the figures of the full run that BENCHMARKS.md publishes, so that every
section of the report has something to say.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import report  # noqa: E402

SECTIONS = [
    "# Benchmarks",
    "## Machine and code",
    "## Headline figures",
    "## The issue's targets",
    "## 1. Throughput against a hand-written script",
    "## Where the time goes",
    "## 2. Memory stays flat",
    "## 3. Requests and money",
    "## 4. Listing cost does not grow with history",
    "## 5. Pickup latency",
    "## Start-up time",
    "## How it is measured",
]


@pytest.fixture
def results() -> dict[str, Any]:
    return json.loads((ROOT / "tests" / "bench_results.json").read_text())


def test_every_section_in_order_with_its_headline_figures(results: dict[str, Any]) -> None:
    text = report.document(results)
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == SECTIONS
    lines = text.splitlines()
    assert (
        "- **Throughput** (1,000 MB, 9,032,479 rows, local store): the worker passes 1.15 M rows/s through a "
        "pass-through task type — 9.13× the bare pandas loop and 0.88× the bare Arrow loop — and runs "
        "`email_enrichment` at 664 k rows/s, 5.26× the pandas loop."
    ) in lines
    assert (
        "- **Money**: a 1 MB task costs 14 requests from create to download, $0.042 per 1,000 tasks; an idle "
        "worker costs $0.44 a month (S3 Standard request prices)."
    ) in lines
    assert "| 100 MB: pass-through CPU-seconds <= 1.15x the Arrow loop's | 1.52 | **missed** |" in lines
    assert (
        "| 100 MB (best of 3) | 903,279 | 7.90 s · 114 k rows/s | 0.705 s · 1.28 M rows/s | 0.396 s · 2.28 M rows/s "
        "| 0.974 s · 927 k rows/s | 1.46 s · 619 k rows/s |"
    ) in lines
    assert "| 15 | download | `GET <id>/output-attempt-1.csv` | the download (presigned GET) |" in lines
    assert "| the app's embedded worker | local store | 20 | 3 s | 0.004 s | 0.005 s | 0.007 s |" in lines
    assert text.endswith("it serialises requests like the test suite does.\n\n")


def test_write_keeps_the_sections_measured_elsewhere(results: dict[str, Any], tmp_path: Path, monkeypatch) -> None:
    md = tmp_path / "BENCHMARKS.md"
    md.write_text((ROOT / "BENCHMARKS.md").read_text())
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # no plot: the document says so
    report.write(results, md, tmp_path / "plot.png")
    text = md.read_text()
    kept = report.kept_sections((ROOT / "BENCHMARKS.md").read_text())
    assert kept and kept + "## How it is measured" in text
    assert "(no plot: matplotlib missing)" in text and "![rows/s" not in text
    assert not (tmp_path / "plot.png").exists()


def test_summary_names_every_target(results: dict[str, Any]) -> None:
    text = report.summary(results)
    assert text.splitlines()[0] == "mode: full, 780 s"
    assert sum(line.startswith("  target ") for line in text.splitlines()) == len(results["targets"])
