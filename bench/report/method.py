"""How it is measured: the closing section, the same for every run."""

from __future__ import annotations


def section() -> list[str]:
    return [
        "## How it is measured",
        "",
        "- `bench/run.py` runs everything; `--only throughput,profile,requests,listing,pickup,startup` picks sections, "
        "`--quick` uses small inputs and fails (exit 1) only on a gross regression: peak RSS of the attempt "
        "not flat (> 1.5× between the two quick sizes), a throughput ratio below a third of what this machine "
        "measures, or requests per task or per idle poll multiplied. The issue's targets are reported, "
        "never enforced: timings on a shared machine are too noisy to gate CI on.",
        "- Inputs are generated once (`bench/data.py`, seeded) into `bench/out/data/` (gitignored) by repeating "
        "a 100,000-row block; the bare loops must see the same number of rows as the worker.",
        "- The pass-through task type is `bench/passthrough.py`, loaded by the worker with "
        "`--handlers bench.passthrough` — the plug-in path, end to end.",
        "- Moto runs as its own process (`bench/motoserver.py`) so that it does not share a GIL with the "
        "worker or the benchmark; it serialises requests like the test suite does.",
        "",
    ]
