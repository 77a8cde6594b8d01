"""The plot next to BENCHMARKS.md: rows/s and peak RSS against the input size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .fmt import EMAIL, PASS, _local


def plot(res: dict[str, Any], png: Path) -> bool:
    """rows/s and peak RSS against input size; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    from ..targets import memory_curve

    local = sorted(_local(res), key=lambda e: e["size_mb"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    sizes = [e["size_mb"] for e in local]
    series = [
        ("pandas_loop", "pandas loop", "--"),
        ("arrow_loop", "Arrow loop", "--"),
        (PASS, "worker: pass-through", "-"),
        (EMAIL, "worker: email_enrichment", "-"),
    ]
    for key, label, style in series:
        ax1.plot(sizes, [e["rows_per_s"][key] / 1e6 for e in local], style, marker="o", label=label)
    ax1.set_xscale("log")
    ax1.set_xticks(sizes, [f"{x:,}" for x in sizes])
    ax1.set_xlabel("input size (MB)")
    ax1.set_ylabel("million rows / s (best of N)")
    ax1.set_title("Throughput, local store")
    ax1.grid(True, alpha=0.3)
    ax1.legend(fontsize=8)
    mem = memory_curve(res)
    msizes = [p["size_mb"] for p in mem]
    for key, label in (
        (f"child_{PASS}", "attempt: pass-through"),
        (f"child_{EMAIL}", "attempt: email_enrichment"),
        ("worker", "worker process"),
    ):
        pts = [(s, p[key]) for s, p in zip(msizes, mem, strict=True) if p.get(key)]
        if pts:
            ax2.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=label)
    ax2.axhline(300, color="red", linestyle=":", label="target: 300 MB")
    ax2.set_xscale("log")
    ax2.set_xticks(msizes, [f"{x:,}" for x in msizes])
    ax2.set_ylim(0, max(350, max((p.get(f"child_{EMAIL}") or 0) for p in mem) * 1.15))
    ax2.set_xlabel("input size (MB)")
    ax2.set_ylabel("peak RSS (MB)")
    ax2.set_title("Peak memory")
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return True
