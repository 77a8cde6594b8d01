"""The benchmark's quick mode (``bench/run.py --quick``, issue 8) runs end to end and reports.

It starts real workers, a moto server and the bare baselines on small inputs
(about a minute) and exits non-zero only on a gross regression (memory not
flat, a throughput ratio collapsed, requests multiplied) — never on timing
noise, so it belongs in the normal suite.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from procs import run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_quick_runs_and_reports(tmp_path: Path) -> None:
    proc = run([sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--out", str(tmp_path)], timeout=280)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["mode"] == "quick"
    assert {"machine", "throughput", "requests", "listing", "pickup", "targets", "checks"} <= res.keys()
    for entry in res["throughput"]["local"]:
        assert {"rows_per_s", "ratios", "child_peak_rss_mb", "worker_peak_rss_mb"} <= entry.keys()
        assert set(entry["rows_per_s"]) == {"pandas_loop", "arrow_loop", "store_copy", "bench_passthrough",
                                            "email_enrichment"}  # fmt: skip
        assert entry["child_peak_rss_mb"]["bench_passthrough"] > 0
    life = res["requests"]["task_life"][0]
    assert life["requests"]["PUT"] > 0 and life["dollars_per_1000_tasks"] > 0
    assert res["requests"]["idle"]["per_hour"]["LIST"] > 0
    assert res["listing"]["requests"]["refresh"]["LIST"] == 1
    assert res["pickup"]["local"]["median_s"] >= 0
    assert res["checks"] and all(check["ok"] for check in res["checks"].values())


def test_sections_measured_elsewhere_survive_a_new_report() -> None:
    """BENCHMARKS.md's sections measured by a test or a script of their own are carried into the next full report."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench import report

    current = (Path(__file__).resolve().parents[2] / "BENCHMARKS.md").read_text()
    kept = report.kept_sections(current)
    assert "## 6. Live progress and cancel" in kept and "## 7. The Excel file and the exact CSV" in kept
    assert "## 5. Pickup latency" not in kept  # generated sections are made anew, not kept
    again = report.kept_sections("# Benchmarks\n\n" + kept + "## How it is measured\n")
    assert again == kept


@pytest.mark.slow
def test_inbox_pickup_quick_runs_and_reports(tmp_path: Path) -> None:
    """``bench/inbox_pickup.py --quick``: one file through a real worker's inbox sweep on the local store, made into
    a task and running; the figures go to ``--out`` only (BENCHMARKS.md is left as it is)."""
    before = (ROOT / "BENCHMARKS.md").read_text()
    proc = run(
        [sys.executable, str(ROOT / "bench" / "inbox_pickup.py"), "--quick", "--out", str(tmp_path)], timeout=120
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    [local] = json.loads((tmp_path / "inbox_pickup.json").read_text())["results"]
    assert (local["store"], local["files"], local["interval_s"]) == ("local", 1, 1.0)
    [times] = local["all"]
    assert 0 < times["made_s"] <= times["running_s"], times
    assert (ROOT / "BENCHMARKS.md").read_text() == before
