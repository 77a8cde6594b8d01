"""BENCHMARKS.md's workbook section is made from bench/workbook.json, and rewriting it replaces it."""

from __future__ import annotations

import json
from pathlib import Path

from bench import workbook

ROOT = Path(__file__).resolve().parents[2]


def test_the_section_shows_the_figures_and_is_replaced_not_repeated(tmp_path: Path) -> None:
    figures = json.loads((ROOT / "bench" / "workbook.json").read_text())
    md = tmp_path / "BENCHMARKS.md"
    md.write_text("# Benchmarks\n\n## 1. Throughput\n\ntext\n\n## How it is measured\n\n- how\n")
    workbook.write_section(figures, md)
    once = md.read_text()
    ours = next(r for r in figures["results"] if r["reader"] == "ours" and "wall_ratio" in r)
    assert f"is {ours['wall_ratio']:.1f}× faster than pandas" in once
    assert once.index("## Workbooks") < once.index("## How it is measured")
    figures["results"][0]["seconds"] += 1.0  # a new run's figures
    workbook.write_section(figures, md)
    twice = md.read_text()
    assert twice.count("## Workbooks") == 1 and twice.count("<!-- /kept -->") == 1
    assert f"| {figures['results'][0]['seconds']:.1f} |" in twice
    assert twice.endswith("## How it is measured\n\n- how\n")


def test_benchmarks_md_holds_the_section_of_the_figures_on_record() -> None:
    figures = json.loads((ROOT / "bench" / "workbook.json").read_text())
    assert workbook.section(figures) in (ROOT / "BENCHMARKS.md").read_text()
