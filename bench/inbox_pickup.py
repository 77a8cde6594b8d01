"""Inbox pickup (issue 33): a file dropped into a recipe's inbox, to its task made, to its task running.

    .venv/bin/python bench/inbox_pickup.py [--interval 3] [--drops 4] [--stores local,s3] [--report] [--quick]

A real ``worker.py`` runs polling every second (``--poll-interval 1``; its default is 3 s) and with
``S3TASK_INBOX_INTERVAL`` set to ``--interval``, on the local store and on S3 (the benchmark's moto server
over HTTP, ``bench/motoserver.py``). The benchmark saves a recipe (a ``copy`` of a two-row CSV, as ``alice``)
and lets the worker run the recipe's first task, so that its fork server is up. Then, ``--drops`` times, it
waits a random part of an interval (so that the drops fall at every phase of the sweeps) and drops one small
CSV into the recipe's inbox as another system would: on the local store a plain file write into the inbox's
folder (what ``cp`` does), on S3 one PUT. Three times per file, each on this machine's clock:

``dropped``
    when the write returned (the file is in the store);
``made``
    the task's ``created_at`` (the sweeper made it, as the recipe's owner; it is queued in the same sweep);
``running``
    the task's ``started_at``: the worker claimed it.

Each is reported as seconds and as a share of the sweep interval: the promise (docs/INBOXES.md) is that a file
is made into a task within one interval on S3 (two on the local store, where a file is taken once its size and
time held from one sweep to the next), and it then starts at the worker's next poll. Keeps the figures in
``bench/inbox_pickup.json`` and writes the section "Inbox pickup" of ``BENCHMARKS.md`` (``bench/kept.py``);
``--report`` only rewrites that section, ``--quick`` (one drop on the local store, 1 s sweeps, nothing written
but ``--out``) is the smoke test in tests/system/test_bench_quick.py. About a minute with the defaults (3 s
sweeps, 4 files a store).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make `bench` and `s3task` importable
    sys.path.insert(0, str(ROOT))

from bench import harness as h  # noqa: E402
from bench.kept import replace_kept  # noqa: E402
from s3task.store.base import PutMode  # noqa: E402

FIGURES = ROOT / "bench" / "inbox_pickup.json"
BEGIN, END = "<!-- kept: inbox-pickup -->", "<!-- /kept -->"
CSV = b"id,email\n1,a@example.com\n2,b@example.com\n"
STORES = {"local": "local store", "s3": "S3 (moto)"}
#: Sweeps a file waits at most before it is made into a task: the local store's two-sweep rule.
PROMISED_SWEEPS = {"local": 2, "s3": 1}
#: The worker's poll interval (its default is 3 s). A sweep runs between two polls, so a sweep interval shorter
#: than the poll interval is the poll interval: the sweeps here must be a few polls apart to be measured.
POLL_SECONDS = 1.0


def _at(stamp: str | None) -> float:
    """A record's ISO time (``2026-12-03T16:44:09.229Z``) as epoch seconds."""
    if not stamp:
        raise RuntimeError("the task has no such time yet")
    return datetime.fromisoformat(stamp).timestamp()


def _drop(site: h.Site, key: str, body: bytes) -> float:
    """Drop a file as another system would; the moment the write returned."""
    if site.kind == "local":
        path = Path(site.url) / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)  # as `cp` writes it: in place, not an atomic rename
    else:
        site.store.put(key, body, PutMode.OVERWRITE)
    return time.time()


def _until(condition: Any, deadline: float, what: str) -> Any:
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _one_file(site: h.Site, worker: h.WorkerProcess, prefix: str, name: str, allowed: float) -> dict[str, float]:
    """Drop ``name`` and follow it: seconds from the drop to its task made, and to its task running."""
    dropped = _drop(site, prefix + name, CSV)
    deadline = time.monotonic() + allowed
    # The worker's log names the task a file became, then its claim: no store request meanwhile.
    taken = re.compile(rf"inbox \S+: {re.escape(name)}: task (\w{{26}})")
    found = _until(lambda: taken.search(worker.log_text()), deadline, f"{name} to become a task")
    task_id = found.group(1)
    _until(lambda: task_id in worker.events(), deadline, f"the task of {name} to be claimed")
    task = site.service.get(h.ALICE, task_id)
    made, running = _at(task.created_at), _at(task.started_at)
    return {"made_s": made - dropped, "running_s": running - dropped, "poll_s": running - made}


def measure(site: h.Site, interval: float, drops: int, out: Path, seed: int = 33) -> dict[str, Any]:
    """``drops`` files through one store's inbox, a real worker sweeping every ``interval`` seconds."""
    rng = random.Random(seed)
    service = site.service
    first = h.create_task(site, out / "recipe.csv", "copy", name="recipe's first file")
    service.submit(h.ALICE, first)
    recipe = service.recipes.save(h.ALICE, "Weekly export", first)
    prefix = site.layout.inbox_prefix(service.inboxes.id_of(recipe))
    site.env["S3TASK_INBOX_INTERVAL"] = str(interval)
    log = out / f"worker-inbox-{site.kind}.log"
    worker = h.WorkerProcess(site, log, once=False, poll_interval=POLL_SECONDS, worker_id=f"inbox-{site.kind}")
    # The longest a file may take: the promise's sweeps, a poll, and as much again for a loaded machine.
    allowed = 2 * (PROMISED_SWEEPS[site.kind] * interval + POLL_SECONDS) + 30
    files: list[dict[str, float]] = []
    try:
        worker.wait_ready()
        worker.wait_completed(first, timeout=120)  # the fork server is up: what follows is the inbox's own time
        for i in range(drops):
            time.sleep(rng.uniform(0, interval))  # a random phase of the sweep cycle
            files.append(_one_file(site, worker, prefix, f"drop-{i}.csv", allowed))
    finally:
        worker.stop()
        worker.finish(60)
    return _summary(files, interval, store=site.kind)


def _summary(files: list[dict[str, float]], interval: float, store: str) -> dict[str, Any]:
    def of(name: str) -> dict[str, float]:
        values = [f[name] for f in files]
        return {
            "median_s": round(statistics.median(values), 3),
            "max_s": round(max(values), 3),
            "median_intervals": round(statistics.median(values) / interval, 2),
            "max_intervals": round(max(values) / interval, 2),
        }

    return {
        "store": store,
        "interval_s": interval,
        "poll_s": POLL_SECONDS,
        "files": len(files),
        "made": of("made_s"),
        "running": of("running_s"),
        "made_to_running": of("poll_s"),
        "all": [{k: round(v, 3) for k, v in f.items()} for f in files],
    }


def run(interval: float, drops: int, stores: list[str], out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "recipe.csv").write_bytes(CSV)
    load = os.getloadavg()[0]
    started = time.monotonic()
    results = []
    for kind in stores:
        print(f"[{time.strftime('%H:%M:%S')}] inbox pickup, {STORES[kind]}, {drops} files, sweep every {interval:g} s")
        if kind == "local":
            results.append(measure(h.local_site(out / "store-inbox"), interval, drops, out))
            continue
        moto = h.MotoServer()
        try:
            results.append(measure(h.s3_site(moto), interval, drops, out))
        finally:
            moto.stop()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "cpus": os.cpu_count(),
        "load": f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end",
        "seconds": round(time.monotonic() - started, 1),
        "results": results,
    }


def promised_s(result: dict[str, Any]) -> float:
    """The longest a file may wait to be made into a task, as docs/INBOXES.md promises: a sweep runs at the
    worker's first poll after its interval has passed, and the local store takes a file at its second sweep."""
    return float(PROMISED_SWEEPS[result["store"]] * (result["interval_s"] + result["poll_s"]))


def _promise(result: dict[str, Any]) -> str:
    sweeps = PROMISED_SWEEPS[result["store"]]
    bound = f"{sweeps} × ({result['interval_s']:g} s + {result['poll_s']:g} s) = {promised_s(result):g} s"
    return f"{bound}: {'met' if result['made']['max_s'] <= promised_s(result) else '**not met**'}"


def _commit() -> str:
    git = ["git", "rev-parse", "--short", "HEAD"]
    return subprocess.run(git, cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()


def _cell(figures: dict[str, float]) -> str:
    return (
        f"{figures['median_s']:.2f} s ({figures['median_intervals']:.2f}×) · "
        f"{figures['max_s']:.2f} s ({figures['max_intervals']:.2f}×)"
    )


def section(figures: dict[str, Any]) -> str:
    """The kept section of BENCHMARKS.md for ``figures`` (what :func:`run` returned)."""
    rows = [
        f"| {STORES[r['store']]} | {r['interval_s']:g} s | {r['files']} | {_cell(r['made'])} | "
        f"{_cell(r['running'])} | {r['made_to_running']['median_s']:.2f} s · {r['made_to_running']['max_s']:.2f} s | "
        f"{_promise(r)} |"
        for r in figures["results"]
    ]
    return "\n".join([
        BEGIN,
        "## Inbox pickup: a dropped file to a running task (issue 33)",
        "",
        "Measured with `.venv/bin/python bench/inbox_pickup.py`, not by `bench/run.py`. A real `worker.py` "
        "polling every second (`--poll-interval 1`; the default is 3 s) sweeps the recipes' inboxes every "
        "`S3TASK_INBOX_INTERVAL` seconds, shortened here from the default 300 s so that a run takes a minute (the "
        "sweep's timing scales with it, the poll's does not; a sweep runs between two polls, so an interval below "
        "the poll interval is the poll interval). Each file is dropped at a random moment of the sweep cycle, after "
        "the one before is running: on the local store written straight into the inbox's folder as `cp` does, on "
        "S3 one PUT to moto over HTTP. *Made*: from the write's return to the task's `created_at` (made as the "
        "recipe's owner and queued in the same sweep); *running*: to its `started_at` (the worker's claim). "
        "Median · max, in seconds and (×) as a share of the sweep interval; all on this machine's clock.",
        "",
        f"{figures['date']}, commit {figures['commit']}, {figures['cpus']} CPUs, load average {figures['load']}; "
        f"{figures['seconds']:.0f} s in all:",
        "",
        "| store | sweep interval | files | dropped → made | dropped → running | made → running | made within "
        "(sweeps × (interval + poll)) |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "The promise is on the sweep (docs/INBOXES.md): a sweep runs at the worker's first poll after its interval "
        "has passed, so sweeps are between one interval and one interval and one poll apart, and a file is made "
        "into a task by the next sweep on S3, by the second on the local store (where a `cp` is not atomic, a file "
        "is taken once its size and time held from one sweep to the next). A file dropped just after a sweep can "
        "so wait a little over one interval (over two on the local store): up to a poll interval more each, 1 s "
        "here, 3 s at the defaults, where an interval is 300 s. The task is queued in the same sweep and the worker "
        "claims it at its next poll (the sweep runs just before the worker's wait between polls), so *made → "
        "running* is about one poll interval whatever the sweep interval.",
        "",
        "Reproduce: `.venv/bin/python bench/inbox_pickup.py` (`--interval`, `--drops`, `--stores local,s3`; the "
        "figures in `bench/inbox_pickup.json`).",
        END,
        "",
    ])  # fmt: skip


def write_section(figures: dict[str, Any], md: Path) -> None:
    replace_kept(md, BEGIN, END, section(figures))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--interval", type=float, default=3.0, help="S3TASK_INBOX_INTERVAL, seconds (default 3)")
    p.add_argument("--drops", type=int, default=4, help="files dropped per store (default 4)")
    p.add_argument("--stores", default="local,s3", help="comma-separated: local, s3 (default both)")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "inbox_pickup", help="scratch folder")
    p.add_argument("--report", action="store_true", help="only rewrite BENCHMARKS.md's section from the figures kept")
    p.add_argument("--quick", action="store_true", help="one file on the local store, 1 s sweeps; writes only --out")
    args = p.parse_args(argv)
    if args.report:
        write_section(json.loads(FIGURES.read_text()), ROOT / "BENCHMARKS.md")
        return 0
    if args.quick:
        args.interval, args.drops, args.stores = 1.0, 1, "local"
    figures = run(args.interval, args.drops, args.stores.split(","), args.out.resolve())
    print(section(figures))
    (args.out / "inbox_pickup.json").write_text(json.dumps(figures, indent=1) + "\n")
    if not args.quick:
        FIGURES.write_text(json.dumps(figures, indent=1) + "\n")
        write_section(figures, ROOT / "BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
