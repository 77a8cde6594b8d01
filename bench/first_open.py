"""The first open of a completed task's page (issue 36 item 17: 11.6 s for a 50,000-row task; goal 3 s cold).

    .venv/bin/python bench/first_open.py [--rows 50000] [--rounds 3] [--profile] [--tree LABEL=DIR …] [--report]

A local store gets one completed task of ``--rows`` customers (10 columns; one address in 100 not valid,
so the task has rows with errors and its page offers their correction), made with the core: submitted
through :class:`s3task.tasks.TaskService` and worked by ``worker.py --once``, the real worker. Each app process
is a fresh ``streamlit run app.py`` (the embedded worker on, as ``./run.sh`` runs it) over a copy of that store
as the worker left it (no copy of the result made yet), and once it answers its health check a real Chromium
(Playwright, Debian's ``/usr/bin/chromium``) opens pages on it. A time runs from the page's first HTTP request
(``page.goto``) until what a person waits for is on the screen — on the task page, the result's first rows (the
preview grid and the line under it, "Showing the first 100 of 50,000 rows."); on the home page (Tasks), its
table — and, second figure, until the page's script has finished (the whole page drawn). The app process's CPU
seconds over the same time are kept too: on a shared machine they move far less than wall time does.

Each round, per checkout:

- **task page, cold**: ``/task?id=…`` as a fresh process's first page, in a browser that has opened the app
  before (its files cached, as a person's browser has them); then **warm**: the same page again, in a new tab;
  then the **home page** in that process (the baseline: the lightest page, same process, browser and minute);
- **home page, cold**: a second fresh process, ``/`` as its first page (the cold baseline: ratios to it tell
  the task page's own cost from the machine's load and from what every page costs);
- **task page, cold, nothing cached**: a third fresh process, in a browser context with an empty cache.

``--tree LABEL=DIR`` (repeatable) measures other checkouts of the app — e.g. ``before=/tmp/before`` made with
``git archive`` — in the same run, round by round interleaved; by default this checkout, as ``latest``. Each
figure is the best of the rounds (medians in the JSON). ``--profile`` attaches ``py-spy`` (the bench dependency
group) to one more cold process of each checkout for its first open of the task page, keeps the collapsed
stacks in ``bench/out/first_open/`` and prints the functions of the page's script thread that took most of it.
Prints a Markdown table, keeps the figures in ``bench/first_open.json`` and writes the section "First open of a
task page" of ``BENCHMARKS.md`` (kept there by ``bench/report/`` like the other sections measured by a script of
their own); ``--report`` only rewrites that section. Run by hand, never in CI.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import harness as h  # noqa: E402
from bench.kept import replace_kept  # noqa: E402
from s3task.tasks import Actor  # noqa: E402

#: The app's user in development mode (no sign-in configured, loopback): the task is theirs.
LOCAL = Actor("local", operator=True)

OUT = ROOT / "bench" / "out" / "first_open"
RESULTS = ROOT / "bench" / "first_open.json"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
GOAL_S = 3.0
VIEWPORT = {"width": 1366, "height": 900}
#: The port of every app process of a run (one at a time): the browser's cache holds the app's files by URL.
PORT = h.free_port()
#: How long a page may take before the benchmark gives up on it.
PAGE_TIMEOUT_MS = 120_000
FIRST = "Anna Ben Chloé Dmitri Emma Farid Grace Hiro Ines Jonas Kwame Lena Mateo Nora Omar Priya".split()  # noqa: SIM905
LAST = "Smith Müller García Rossi Dubois Kowalski Nguyen Okafor Silva Tanaka Jensen Novak Haddad".split()  # noqa: SIM905
CITIES = "Berlin Lyon Leeds Porto Gdańsk Turin Ghent Tartu Cork Brno".split()  # noqa: SIM905


def customers(rows: int) -> bytes:
    """``rows`` customers as a CSV export: 10 columns, every hundredth address not valid (no @), seeded."""
    rng = random.Random(17)
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Customer ID", "First name", "Last name", "Email", "Phone", "City", "Joined", "Plan",
                     "Amount", "Note"])  # fmt: skip
    for i in range(rows):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        email = f"{first}.{last}{i}@example.org".lower() if i % 100 != 99 else f"{first} {last} (no address)"
        writer.writerow([
            f"C{i:07d}", first, last, email, f"+44 20 7946 {rng.randrange(10_000):04d}", rng.choice(CITIES),
            f"20{rng.randrange(15, 26)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
            rng.choice(["Basic", "Plus", "Pro"]), f"{rng.uniform(0, 5000):.2f}",
            "called back, prefers email" if i % 7 == 0 else "",
        ])  # fmt: skip
    return out.getvalue().encode()


def make_store(directory: Path, rows: int) -> tuple[h.Site, str]:
    """A local store with one completed ``email_enrichment`` task over ``rows`` customers: submitted through the
    service as the app's development user (so it is on the home page's *Mine*), worked by ``worker.py --once``."""
    site = h.local_site(directory)
    data = customers(rows)
    record = site.service.submit_file(LOCAL, f"Customers ({rows:,} rows)", "email_enrichment", None, data)
    run = h.run_once(site, directory.parent / "worker.log")
    if record.task_id not in run.tasks or site.service.get(LOCAL, record.task_id).status != "completed":
        raise RuntimeError("the task did not complete:\n" + run.log[-3000:])
    return site, record.task_id


# --- the app and the browser ------------------------------------------------------------------------------


@contextmanager
def app_process(
    tree: Path, pristine: Path, log: Path, port: int
) -> Iterator[tuple[str, subprocess.Popen[bytes], float]]:
    """``streamlit run app.py`` of the checkout ``tree`` as ``./run.sh`` starts it (the embedded worker on), on
    ``port`` (the same for every process of a run: a browser's cache holds the app's files by their URL), once its
    health check answers, over a copy of the store ``pristine`` (the task as the worker
    left it: no copy of its result made yet, as when a person first opens it); stopped with SIGTERM afterwards.
    Yields its URL, its process and the seconds from its start to its health check answering."""
    store = OUT / "store"
    if store.exists():
        shutil.rmtree(store)
    shutil.copytree(pristine, store)  # copy2: the local store's extended attributes (ETags) too
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3TASK_")}
    env.update(S3TASK_STORE=str(store), PYTHONPATH=str(tree))
    cmd = [h.PY, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address", "127.0.0.1"]
    cmd += ["--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    url = f"http://127.0.0.1:{port}"
    with open(log, "ab") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=out, stderr=out)
        try:
            _healthy(url, proc, log)
            yield url, proc, time.perf_counter() - started
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    import urllib.request

    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the app did not start: see {log}")
        time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    """CPU time the process has used so far (every thread; not its children: the worker's fork server)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def opened(pid: int, page: Any, url: str, shown: list[Any]) -> dict[str, float]:
    """Open ``url`` in ``page``: seconds from its first request until every locator in ``shown`` is visible
    (``shown``), until the page's script has finished too (``done``: the whole page drawn), and the CPU
    seconds the app process spent until then (``cpu``)."""
    cpu, started = cpu_seconds(pid), time.perf_counter()
    page.goto(url, wait_until="commit")
    for locator in shown:
        locator.first.wait_for(state="visible", timeout=PAGE_TIMEOUT_MS)
    seen = time.perf_counter() - started
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(timeout=PAGE_TIMEOUT_MS)
    return {"shown": seen, "done": time.perf_counter() - started, "cpu": cpu_seconds(pid) - cpu}


def task_page(pid: int, page: Any, url: str, task_id: str, rows: int) -> dict[str, float]:
    """The task page, until its result's first rows are on the screen: the preview grid and the line under it."""
    grid = page.locator(".st-key-result_preview [data-testid='stDataFrame'] canvas")
    line = page.get_by_text(f"Showing the first 100 of {rows:,} rows.")
    return opened(pid, page, f"{url}/task?id={task_id}", [grid, line])


def home_page(pid: int, page: Any, url: str) -> dict[str, float]:
    """The Tasks page, until its task table is on the screen."""
    return opened(pid, page, url + "/", [page.locator("[data-testid='stDataFrame'] canvas")])


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def one_round(chromium: Any, cached: Any, tree: Path, pristine: Path, task_id: str, rows: int) -> dict[str, float]:
    """Three fresh app processes; ``cached``: a browser context that has opened the app before (its files in the
    browser's cache, as a person's browser has them), while a new context starts with none.

    - the task page cold (cached browser), then warm (a new tab), then the home page in the same process;
    - the home page cold (cached browser): the cold baseline;
    - the task page cold in a browser with nothing cached.

    For each: ``…`` seconds to what it shows, ``…_done`` to the whole page, ``…_cpu`` the app's CPU seconds;
    ``start``: seconds from the app's start to its health check answering."""
    took: dict[str, float] = {}

    def keep(name: str, seen: dict[str, float]) -> None:
        took[name], took[name + "_done"], took[name + "_cpu"] = seen["shown"], seen["done"], seen["cpu"]

    log, port = OUT / "app.log", PORT
    with app_process(tree, pristine, log, port) as (url, proc, start):
        took["start"] = start
        keep("task_cold", task_page(proc.pid, cached.new_page(), url, task_id, rows))
        keep("task_warm", task_page(proc.pid, cached.new_page(), url, task_id, rows))
        keep("home_warm", home_page(proc.pid, cached.new_page(), url))
    with app_process(tree, pristine, log, port) as (url, proc, _start):
        keep("home_cold", home_page(proc.pid, cached.new_page(), url))
    with app_process(tree, pristine, log, port) as (url, proc, _start):
        empty = chromium.new_context(viewport=VIEWPORT)
        keep("task_cold_empty_cache", task_page(proc.pid, empty.new_page(), url, task_id, rows))
        empty.close()
    for page in cached.pages:
        page.close()
    return {k: round(v, 3) for k, v in took.items()}


# --- the profile ------------------------------------------------------------------------------------------


def profile(cached: Any, tree: Path, pristine: Path, task_id: str, rows: int) -> dict[str, Any]:
    """The cold open once more, py-spy recording the app process (its active samples): the collapsed stacks
    in ``bench/out/first_open/``, and the functions of the page's script thread that took most of them."""
    spy = shutil.which("py-spy") or str(Path(h.PY).parent / "py-spy")
    stacks = OUT / f"profile-{tree.name}.txt"
    with app_process(tree, pristine, OUT / "app.log", PORT) as (url, proc, _start):
        record = subprocess.Popen(
            [spy, "record", "--pid", str(proc.pid), "--rate", "200", "--format", "raw", "--output", str(stacks),
             "--threads", "--nonblocking"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(1.0)  # py-spy attached
        seen = task_page(proc.pid, cached.new_page(), url, task_id, rows)
        record.send_signal(signal.SIGINT)
        record.wait(60)
    return {**{k: round(v, 3) for k, v in seen.items()}, "top": heaviest(stacks.read_text())}


def heaviest(collapsed: str, shown: int = 30) -> list[dict[str, Any]]:
    """From py-spy's raw output (``frame;frame;… count``): the functions under the script thread that took most
    samples with what they call (``total``) and by themselves (``own``), as shares of that thread's samples."""
    total: dict[str, int] = {}
    own: dict[str, int] = {}
    samples = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if "_run_script_thread" not in stack:
            continue  # the script thread only: the server's loop, the worker and idle threads wait
        count = int(count_text)
        samples += count
        frames = [_frame(f) for f in stack.split(";")[1:]]
        for frame in set(frames):
            total[frame] = total.get(frame, 0) + count
        own[frames[-1]] = own.get(frames[-1], 0) + count
    rows = sorted(total.items(), key=lambda kv: -kv[1])
    return [
        {"frame": frame, "total": round(n / samples, 3), "own": round(own.get(frame, 0) / samples, 3)}
        for frame, n in rows[:shown]
    ] + [{"samples": samples}]


def _frame(text: str) -> str:
    """ "ui/result.py preview" from "preview (ui/result.py:257)"; a library's file by its path in site-packages."""
    name, _, where = text.rpartition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0].split("site-packages/")[-1]
    return f"{path} {name}"


# --- the run ----------------------------------------------------------------------------------------------


def measure(trees: dict[str, Path], rows: int, rounds: int, with_profile: bool) -> dict[str, Any]:
    """Every tree's figures, round by round interleaved (the first tree first in odd rounds, last in even)."""
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "app.log").write_bytes(b"")
    site, task_id = make_store(OUT / "pristine", rows)
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    profiles: dict[str, Any] = {}
    with browser() as chromium:
        cached = chromium.new_context(viewport=VIEWPORT)
        with app_process(next(iter(trees.values())), Path(site.url), OUT / "app.log", PORT) as (url, proc, _s):
            home_page(proc.pid, cached.new_page(), url)  # the browser has opened the app before
        for i in range(rounds):
            for label in list(trees) if i % 2 == 0 else list(trees)[::-1]:
                runs[label].append(one_round(chromium, cached, trees[label], Path(site.url), task_id, rows))
                print(f"round {i + 1}, {label}: {runs[label][-1]}", file=sys.stderr)
        if with_profile:
            profiles = {label: profile(cached, tree, Path(site.url), task_id, rows) for label, tree in trees.items()}
    when = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": _commit(), "rows": rows,
        "rounds": rounds, "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load": f"{os.getloadavg()[0]:.1f}",
    }  # fmt: skip
    out: dict[str, Any] = {}
    for label, found in runs.items():
        best = {k: min(r[k] for r in found) for k in found[0]}
        median = {k: round(statistics.median(r[k] for r in found), 3) for k in found[0]}
        out[label] = {**when, "best": best, "median": median, "runs": found, "profile": profiles.get(label)}
    return out


def _commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the app processes are stopped too
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="one more cold open of each tree under py-spy")
    parser.add_argument(
        "--tree", action="append", default=[], metavar="LABEL=DIR",
        help="a checkout to measure, by a label (repeatable, interleaved); default: this one, as 'latest'",
    )  # fmt: skip
    parser.add_argument("--report", action="store_true", help="only rewrite BENCHMARKS.md from bench/first_open.json")
    args = parser.parse_args()
    kept: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"runs": {}}
    if not args.report:
        trees = dict((label, Path(d).resolve()) for label, _, d in (t.partition("=") for t in args.tree))
        found = measure(trees or {"latest": ROOT}, args.rows, args.rounds, args.profile)
        kept["runs"].update(found)
        RESULTS.write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n")
        print("\n".join(table(kept)))
        for label, run in found.items():
            for row in (run["profile"] or {}).get("top", []):
                print(label, row)
    write_section(kept, ROOT / "BENCHMARKS.md")
    print(f"\nwritten: {RESULTS.relative_to(ROOT)}, BENCHMARKS.md", file=sys.stderr)


# --- the report ------------------------------------------------------------------------------------------

BEGIN, END = "<!-- kept: first-open -->", "<!-- /kept -->"


def table(kept: dict[str, Any]) -> list[str]:
    """Best of the rounds: seconds to what the page shows · to the whole page drawn (the app's CPU seconds)."""
    lines = [
        "| run | task page, cold | task page, cold, nothing in the browser's cache | task page, warm "
        "| home page, same process | home page, cold | app start | task cold ÷ home cold: shown, CPU "
        "| goal: cold ≤ 3 s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, run in kept["runs"].items():
        b = run["best"]

        def cell(name: str, b: dict[str, float] = b) -> str:
            if name not in b:
                return "–"
            return f"{b[name]:.1f} · {b[name + '_done']:.1f} s ({b[name + '_cpu']:.2f} s)"

        lines.append(
            f"| **{label}**: {run['rows']:,} rows, {run['date']}, load {run['load']} "
            f"| {cell('task_cold')} | {cell('task_cold_empty_cache')} | {cell('task_warm')} | {cell('home_warm')} "
            f"| {cell('home_cold')} | {b['start']:.1f} s | {b['task_cold'] / b['home_cold']:.2f}×, "
            f"{b['task_cold_cpu'] / max(b['home_cold_cpu'], 0.01):.2f}× "
            f"| {_goal(b['task_cold'], run['median']['task_cold'])} |"
        )
    return lines


def _goal(best: float, median: float) -> str:
    if median <= GOAL_S:
        return "met"
    return f"met by the best round (median {median:.1f} s)" if best <= GOAL_S else f"not met (median {median:.1f} s)"


def section(kept: dict[str, Any]) -> str:
    lines = [
        BEGIN,
        "## First open of a task page (issue 36 item 17)",
        "",
        "Measured with `.venv/bin/python bench/first_open.py`, not by `bench/run.py`. A local store holds one "
        "completed *Check and enrich email addresses* task over a 10-column customer list (one row in 100 with an "
        "error, so its page offers their correction), made by the service and `worker.py --once`. Every app process "
        "is a fresh `streamlit run app.py` as `./run.sh` starts it (embedded worker on) over a copy of that store as "
        "the worker left it, and Debian's Chromium opens its pages through Playwright. A time runs from the page's "
        "first HTTP request to what a person waits for on the screen — the task page's first rows of the result "
        "(the preview grid and the line under it), the home page's table — then, second figure, to the page's "
        "script finished (the whole page drawn); in brackets, the CPU seconds of the app process meanwhile, which "
        "a shared machine's load moves far less than wall time. *Cold*: a fresh process's first page, in a browser "
        "that has opened the app before (its files cached); *nothing cached*: the same in a new browser context; "
        "*warm*: the same page again in a new tab. The home page is the baseline: in the same process, and cold in "
        "a fresh one, so that the ratio tells the task page's own cost from what every page costs on this machine "
        "at this minute. Best of the rounds, checkouts interleaved round by round (medians in "
        "`bench/first_open.json`).",
        "",
        *table(kept),
        "",
    ]
    lines += kept.get("notes", [])
    lines += [END, ""]
    return "\n".join(lines)


def write_section(kept: dict[str, Any], md: Path) -> None:
    """Replace (or add, before "How it is measured") this section of BENCHMARKS.md."""
    replace_kept(md, BEGIN, END, section(kept))


if __name__ == "__main__":
    main()
