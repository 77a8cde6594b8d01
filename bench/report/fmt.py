"""What the report's sections share: the task types' names, the command, number formats and tables."""

from __future__ import annotations

from typing import Any

PASS = "bench_passthrough"
EMAIL = "email_enrichment"
CMD = ".venv/bin/python bench/run.py"
PLOT = "bench/throughput-memory.png"


def _n(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.0f} k"
    return f"{x:.0f}"


def _s(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.3f} s" if x < 1 else f"{x:.2f} s" if x < 10 else f"{x:.1f} s"


def _ms(x: float) -> str:
    return f"{x * 1000:.1f} ms" if x < 0.1 else f"{x * 1000:.0f} ms"


def _x(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}×"


def _table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _cmd(section: str) -> str:
    return f"Reproduce: `{CMD} --only {section}` (figures in `bench/out/results.json`)."


def _req(counts: dict[str, int]) -> str:
    return " + ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _mb(x: float | None) -> str:
    return "–" if x is None else f"{x:.0f} MB"


def fmt_s(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g} s"


def _local(res: dict[str, Any]) -> list[dict[str, Any]]:
    return res.get("throughput", {}).get("local", [])


def _largest(res: dict[str, Any]) -> dict[str, Any]:
    return max(_local(res), key=lambda e: e["size_mb"])
