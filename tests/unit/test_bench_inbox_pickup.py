"""bench/inbox_pickup.py: BENCHMARKS.md's section "Inbox pickup" comes from bench/inbox_pickup.json, rewriting
it replaces it, and each row says whether the sweep kept its promise (one sweep on S3, two on the local store, each
at most an interval and a poll apart)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from bench import inbox_pickup

ROOT = Path(__file__).resolve().parents[2]


def figures() -> dict:
    loaded: dict = json.loads((ROOT / "bench" / "inbox_pickup.json").read_text())
    return loaded


def test_benchmarks_md_holds_the_section_of_the_figures_on_record() -> None:
    assert inbox_pickup.section(figures()) in (ROOT / "BENCHMARKS.md").read_text()


def test_the_section_is_replaced_not_repeated_and_says_when_the_promise_is_missed(tmp_path: Path) -> None:
    md = tmp_path / "BENCHMARKS.md"
    md.write_text("# Benchmarks\n\n## 1. Throughput\n\ntext\n\n## How it is measured\n\n- how\n")
    inbox_pickup.write_section(figures(), md)
    later = copy.deepcopy(figures())
    for result in later["results"]:  # a new run's figures: a file made a second later than promised
        late = inbox_pickup.promised_s(result) + 1
        result["made"].update(max_s=late, max_intervals=late / result["interval_s"])
    inbox_pickup.write_section(later, md)
    text = md.read_text()
    assert text.count("## Inbox pickup") == 1 and text.count("<!-- /kept -->") == 1
    assert text.endswith("## How it is measured\n\n- how\n")
    rows = [line for line in text.splitlines() if line.startswith(("| local store |", "| S3 (moto) |"))]
    assert len(rows) == len(later["results"]) and all(row.endswith(": **not met** |") for row in rows)
    local = next(r for r in later["results"] if r["store"] == "local")
    assert inbox_pickup.promised_s(local) == 2 * (local["interval_s"] + local["poll_s"]), "two sweeps on a local store"
