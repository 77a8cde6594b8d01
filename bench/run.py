"""Run every benchmark of issue 8 and publish the figures.

    .venv/bin/python bench/run.py            # everything (about 15 minutes here), writes BENCHMARKS.md
    .venv/bin/python bench/run.py --quick    # small sizes, about a minute: the CI smoke test

Results go to ``<out>/results.json`` (``bench/out/`` by default, gitignored);
the full run also writes ``BENCHMARKS.md`` and ``bench/throughput-memory.png``.
Generated inputs live in ``bench/out/data/`` and are reused across runs.

Exit status: 0, or 1 when a *gross* regression check fails (memory not flat,
a ratio collapsed far below what this machine measured, requests per task or
per idle poll multiplied). Timing noise never fails a run: every timing check
has a wide margin, and the issue's targets are reported, not enforced.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make `bench` and `s3task` importable
    sys.path.insert(0, str(ROOT))

from bench import costs, data, listing, pickup, report, startup, targets, throughput  # noqa: E402
from bench import harness as h  # noqa: E402
from bench import passthrough as _passthrough  # noqa: E402  (registers the pass-through here too)
from bench import profile as prof  # noqa: E402

PASS = _passthrough.NAME
EMAIL = "email_enrichment"

FULL = {
    "sizes": {10: 5, 100: 3, 1000: 2},  # MB -> rounds (best of)
    "memory_extra": 2000,
    "s3_sizes": {10: 3, 100: 2},
    "task_life_mb": (1, 100),
    "idle_window": 60.0,
    "listing_sizes": (100, 10_000),
    "listing_repeats": 5,
    "latency_ms": 20.0,
    "pickup_tasks": 20,
    "profile_mb": 100,
    "fixed_tasks": 10,
    "startup_rounds": 5,
}
QUICK = {
    "sizes": {16: 1, 64: 1},
    "memory_extra": None,
    "s3_sizes": {},
    "task_life_mb": (1,),
    "idle_window": 6.5,
    "listing_sizes": (60, 600),
    "listing_repeats": 3,
    "latency_ms": 0.0,
    "pickup_tasks": 3,
    "profile_mb": None,
    "fixed_tasks": 0,
    "startup_rounds": 2,
}

#: Every section of the full run on small inputs: for working on the benchmark itself (not for figures).
SMOKE = {
    **FULL,
    "sizes": {8: 1, 24: 1},
    "memory_extra": 40,
    "s3_sizes": {8: 1},
    "task_life_mb": (1, 24),
    "idle_window": 6.5,
    "listing_sizes": (60, 600),
    "listing_repeats": 2,
    "pickup_tasks": 3,
    "profile_mb": 24,
    "fixed_tasks": 2,
    "startup_rounds": 2,
}


def machine() -> dict[str, Any]:
    import boto3
    import moto
    import numpy
    import pandas
    import pyarrow

    cpu = _proc_field("/proc/cpuinfo", "model name")
    mem_gb = int((_proc_field("/proc/meminfo", "MemTotal") or "0 kB").split()[0]) / 1024 / 1024

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": round(mem_gb, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "pandas": pandas.__version__,
        "pyarrow": pyarrow.__version__,
        "numpy": numpy.__version__,
        "boto3": boto3.__version__,
        "moto": moto.__version__,
        "git_commit": git("rev-parse", "--short", "HEAD").strip(),
        "uncommitted_in_s3task": [line[3:] for line in git("status", "--porcelain", "s3task").splitlines() if line],
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


def _proc_field(path: str, name: str) -> str:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(name):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def step(title: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {title}", flush=True)


def run(mode: str, out: Path, sections: set[str]) -> dict[str, Any]:
    cfg = {"quick": QUICK, "full": FULL, "smoke": SMOKE}[mode]
    out.mkdir(parents=True, exist_ok=True)
    data_dir = ROOT / "bench" / "out" / "data"
    res: dict[str, Any] = {"mode": mode, "machine": machine(), "config": _jsonable(cfg)}
    started = time.monotonic()

    if "throughput" in sections:
        measure_throughput(res, cfg, data_dir, out)

    if "profile" in sections and cfg["profile_mb"]:
        res["profile"] = profile(cfg["profile_mb"], data_dir, out)

    if "requests" in sections:
        measure_requests(res, cfg, data_dir, out, listing_too="listing" in sections)
    if "listing" in sections:
        step(f"listing, {' vs '.join(map(str, cfg['listing_sizes']))} tasks on the local store")
        res.setdefault("listing", {})["local"] = listing.on_local(out, cfg["listing_sizes"], cfg["listing_repeats"])

    if "pickup" in sections:
        res["pickup"] = measure_pickup(cfg, out, quick=mode == "quick")

    if "startup" in sections:
        step(f"start-up: worker.py --once, the CLI, a worker's first claim; best of {cfg['startup_rounds']}")
        res["startup"] = startup.measure(out, tiny_csv(out), cfg["startup_rounds"])

    res["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    res["seconds"] = round(time.monotonic() - started, 1)
    res["targets"] = targets.targets(res)
    res["checks"] = targets.checks(res)
    return res


def measure_throughput(res: dict[str, Any], cfg: dict[str, Any], data_dir: Path, out: Path) -> None:
    """Sections 1 and 2: ``res["throughput"]`` (local store, fixed cost, S3 on moto) and ``res["memory_extra"]``."""
    step("inputs")
    paths = {mb: data.ensure(data_dir, mb) for mb in cfg["sizes"]}
    local = h.local_site(out / "store-local")
    res["throughput"] = {"local": []}
    if cfg["fixed_tasks"]:
        step(f"per-task fixed cost, local store, {cfg['fixed_tasks']} two-row tasks per handler")
        fixed = throughput.measure_fixed(local, tiny_csv(out), cfg["fixed_tasks"], out)
        res["throughput"]["fixed_local"] = fixed
    for mb, rounds in cfg["sizes"].items():
        step(f"throughput, local store, {mb} MB, best of {rounds}")
        res["throughput"]["local"].append(throughput.measure_size(local, paths[mb], rounds, out))
    if cfg["memory_extra"]:
        mb = cfg["memory_extra"]
        step(f"memory, local store, {mb} MB pass-through")
        big = data.ensure(data_dir, mb)
        res["memory_extra"] = throughput.measure_memory_only(local, big, out)
    if cfg["s3_sizes"]:
        moto = h.MotoServer()
        try:
            s3 = h.s3_site(moto)
            res["throughput"]["s3_moto"] = []
            for mb, rounds in cfg["s3_sizes"].items():
                step(f"throughput, S3 (moto over HTTP), {mb} MB, best of {rounds}")
                path = data.ensure(data_dir, mb)
                res["throughput"]["s3_moto"].append(throughput.measure_size(s3, path, rounds, out))
        finally:
            moto.stop()


def measure_requests(res: dict[str, Any], cfg: dict[str, Any], data_dir: Path, out: Path, listing_too: bool) -> None:
    """Section 3, ``res["requests"]``, on a counting moto server; with ``listing_too`` the listing on that
    same server too (``res["listing"]``)."""
    moto = h.MotoServer()
    try:
        paths = [data.ensure(data_dir, mb) for mb in cfg["task_life_mb"]]
        step(
            f"requests: an idle worker for {cfg['idle_window']:.0f} s, then one {EMAIL} task of "
            + " and of ".join(f"{mb} MB" for mb in cfg["task_life_mb"])
            + ", create → download"
        )
        res["requests"] = {"prices_per_1000": costs.PRICE_PER_1000}
        res["requests"].update(costs.measure(moto, paths, EMAIL, out, cfg["idle_window"]))
        if listing_too:
            step(f"listing, {' vs '.join(map(str, cfg['listing_sizes']))} tasks on moto")
            res["listing"] = listing.on_moto(moto, cfg["listing_sizes"], cfg["listing_repeats"], cfg["latency_ms"])
    finally:
        moto.stop()


def measure_pickup(cfg: dict[str, Any], out: Path, quick: bool) -> dict[str, Any]:
    """Section 5: submit → claim of ``worker.py`` (local store; S3 on moto but in quick mode) and of the
    app's embedded worker (S3 on moto and local store)."""
    tiny = tiny_csv(out)
    n = cfg["pickup_tasks"]
    step(f"pickup latency, {n} tasks, local store, default poll interval")
    result = {"local": pickup.measure(h.local_site(out / "store-pickup"), tiny, n, out)}
    moto = h.MotoServer()
    try:
        if not quick:
            step(f"pickup latency, {n} tasks, S3 (moto), default poll interval")
            result["s3_moto"] = pickup.measure(h.s3_site(moto), tiny, n, out)
        # The app's embedded worker: moto first, so that the attempts' fork server (started by
        # the first attempt of this process) has the moto endpoint in its environment.
        step(f"pickup latency, {n} tasks, the app's embedded worker, S3 (moto) and local store")
        result["embedded_s3_moto"] = pickup.measure_embedded(h.s3_site(moto), tiny, n)
        result["embedded_local"] = pickup.measure_embedded(h.local_site(out / "store-embedded"), tiny, n)
    finally:
        moto.stop()
    return result


def tiny_csv(out: Path) -> Path:
    tiny = out / "tiny.csv"
    tiny.write_bytes(b"id,email\n1,a@example.com\n2,b@example.com\n")
    return tiny


def profile(mb: int, data_dir: Path, out: Path) -> dict[str, Any]:
    """py-spy on a real worker for one task of each handler (local store), and pass-through on moto."""
    if prof.available() is None:
        return {"skipped": "py-spy is not installed (pip install py-spy)"}
    path = data.ensure(data_dir, mb)
    result: dict[str, Any] = {"size_mb": mb, "rate_hz": 200}
    runs = [("local", PASS), ("local", EMAIL), ("s3_moto", PASS)]
    moto = None
    try:
        for kind, handler in runs:
            step(f"profile (py-spy), {handler}, {kind}, {mb} MB")
            if kind == "local":
                site = h.local_site(out / "store-profile")
            else:
                moto = moto or h.MotoServer()
                site = h.s3_site(moto)
            task_id = h.create_task(site, path, handler)
            h.submit(site, task_id)
            raw = out / f"pyspy-{kind}-{handler}.txt"
            run = h.run_once(site, out / f"worker-profile-{kind}-{handler}.log", wrap=prof.command(raw, 200))
            task = run.tasks.get(task_id)
            stages = prof.attempt_stages(raw, 200) if raw.exists() else {}
            if kind == "local":
                h.drop_task(site, task_id)
            result[f"{kind}/{handler}"] = {
                "seconds": round(task.seconds, 3) if task and task.seconds else None,
                **stages,
            }
    finally:
        if moto is not None:
            moto.stop()
    return result


def _jsonable(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: ({str(a): b for a, b in v.items()} if isinstance(v, dict) else v) for k, v in cfg.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes only, about a minute (CI)")
    p.add_argument("--smoke", action="store_true", help="every section on small inputs (developing the benchmark)")
    p.add_argument("--out", type=Path, help="where results.json and scratch files go (default bench/out)")
    p.add_argument("--only", help="comma-separated sections: throughput,profile,requests,listing,pickup,startup")
    p.add_argument("--no-report", action="store_true", help="do not rewrite BENCHMARKS.md and the plot")
    p.add_argument(
        "--report", action="store_true", help="only rewrite BENCHMARKS.md and the plot from <out>/results.json"
    )
    args = p.parse_args(argv)
    out = (args.out or ROOT / "bench" / "out").resolve()
    if args.report:
        res = json.loads((out / "results.json").read_text())
        report.write(res, ROOT / "BENCHMARKS.md", ROOT / "bench" / "throughput-memory.png")
        step("wrote BENCHMARKS.md and bench/throughput-memory.png")
        return 0
    all_sections = {"throughput", "profile", "requests", "listing", "pickup", "startup"}
    sections = set(args.only.split(",")) if args.only else all_sections
    mode = "quick" if args.quick else "smoke" if args.smoke else "full"
    res = run(mode, out, sections)
    (out / "results.json").write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n")
    if mode == "smoke":
        report.write(res, out / "BENCHMARKS.md", out / "throughput-memory.png")
    elif mode == "full" and not args.no_report and sections == all_sections:
        report.write(res, ROOT / "BENCHMARKS.md", ROOT / "bench" / "throughput-memory.png")
        step("wrote BENCHMARKS.md and bench/throughput-memory.png")
    print(report.summary(res), flush=True)
    failed = [name for name, check in res["checks"].items() if not check["ok"]]
    if failed:
        print("GROSS REGRESSION: " + "; ".join(failed), file=sys.stderr)
        return 1
    step(f"done in {res['seconds']:.0f} s; results in {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
