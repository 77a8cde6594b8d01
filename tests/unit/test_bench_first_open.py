"""bench/first_open.py: BENCHMARKS.md's section comes from bench/first_open.json, and a py-spy profile is read as
shares of the page's script thread."""

from __future__ import annotations

import json
from pathlib import Path

from bench import first_open

ROOT = Path(__file__).resolve().parents[2]


def test_benchmarks_md_holds_the_section_of_the_figures_on_record() -> None:
    figures = json.loads((ROOT / "bench" / "first_open.json").read_text())
    assert first_open.section(figures) in (ROOT / "BENCHMARKS.md").read_text()


def test_the_section_is_replaced_not_repeated(tmp_path: Path) -> None:
    figures = json.loads((ROOT / "bench" / "first_open.json").read_text())
    md = tmp_path / "BENCHMARKS.md"
    md.write_text("# Benchmarks\n\n## 1. Throughput\n\ntext\n\n## How it is measured\n\n- how\n")
    first_open.write_section(figures, md)
    label = next(iter(figures["runs"]))
    figures["runs"][label]["best"]["task_cold"] = 99.0  # a new run's figures
    first_open.write_section(figures, md)
    text = md.read_text()
    assert text.count("## First open of a task page") == 1 and text.count("<!-- /kept -->") == 1
    assert "| 99.0 · " in text and text.endswith("## How it is measured\n\n- how\n")


def test_a_profile_counts_the_script_threads_samples_only() -> None:
    script = "thread (1): ScriptRunner.scriptThread;ScriptRunner._run_script_thread (streamlit/script_runner.py:443)"
    raw = "\n".join([
        f"{script};<module> (ui/services.py:16);<module> (.venv/lib/site-packages/pandas/__init__.py:46) 3",
        f"{script};preview (ui/result.py:257) 1",
        "thread (2): MainThread;select (selectors.py:468) 50",  # the server waiting: not the page's
    ])  # fmt: skip
    top = {row["frame"]: row for row in first_open.heaviest(raw) if "frame" in row}
    assert top["pandas/__init__.py <module>"] == {"frame": "pandas/__init__.py <module>", "total": 0.75, "own": 0.75}
    assert top["ui/result.py preview"]["total"] == 0.25
    assert first_open.heaviest(raw)[-1] == {"samples": 4}
