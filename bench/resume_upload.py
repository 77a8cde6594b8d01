"""Bytes sent when a browser's upload is interrupted and continued (issue 24): BENCHMARKS.md's section.

The figures come from the Chromium tests in ``tests/browser/test_resume_upload_browser.py``: a 64 MiB
CSV goes from the New task page to moto's S3 server over HTTP through a proxy that counts every body
byte reaching the store (``tests/s3proxy.py``), once reloaded mid-upload and continued from the task's
page, once with a part cut part-way at its first try, once with one part cut at every try until the
upload stops (then continued). Each test writes its figures into ``tests/artifacts/resume_upload.json``.

``.venv/bin/python bench/resume_upload.py`` runs those tests, keeps their figures in
``bench/resume_upload.json`` and rewrites the section of BENCHMARKS.md (kept there by ``bench/report/``
like the other sections measured by a script of their own); ``--report`` only rewrites the section
from ``bench/resume_upload.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "tests" / "artifacts" / "resume_upload.json"
RESULTS = ROOT / "bench" / "resume_upload.json"
TESTS = "tests/browser/test_resume_upload_browser.py"
BEGIN, END = "<!-- kept: resume-upload -->", "<!-- /kept -->"
#: The runs, in the order the section shows them, with what each one did.
RUNS = {
    "reload": "the page reloaded mid-upload (after 4 parts were in the store), then Continue upload",
    "cut": "one part's connection cut halfway through it, once: that part retried on its own",
    "cut_until_stopped": "one part cut at every try until the upload stopped, then Continue upload",
}


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def section(out: dict) -> str:
    """BENCHMARKS.md's section on continued uploads, from the tests' figures."""
    lines = [
        BEGIN,
        "## Uploads that stop: the bytes sent to continue them",
        "",
        f"Measured by `{TESTS}` (run by `.venv/bin/python bench/resume_upload.py` on {out['date']}, "
        f"{out['machine']}), not by `bench/run.py`: a {mib(out['runs']['reload']['file_bytes'])} CSV (8 MiB "
        "parts, four at a time) sent by Chromium from the New task page to moto's S3 server over HTTP, every "
        "request body byte counted at a proxy in front of the store, app's own requests included.",
        "",
        "| interruption | parts the store held | bytes sent in all | ÷ file |",
        "|---|---|---|---|",
    ]
    for name, words in RUNS.items():
        run = out["runs"].get(name)
        if run is None:
            continue
        held = run.get("parts_held_at_reload", run.get("parts_held_when_stopped", "–"))
        lines.append(f"| {words} | {held} | {mib(run['bytes_sent_in_all'])} | {run['sent_over_file']:.2f}× |")
    reload = out["runs"].get("reload")
    if reload:
        lines += [
            "",
            f"After the reload, Continue upload sent {mib(reload['bytes_sent_after_reload'])}: the "
            f"{reload['parts'] - reload['parts_held_at_reload']} parts the store did not hold. What is lost to an "
            "interruption is what was in flight: up to four parts, partly sent. The tests fail above 1.3×.",
            "",
        ]
    stopped = out["runs"].get("cut_until_stopped")
    if stopped and "cuts" in stopped:
        lines.append(
            f"The part cut at every try was cut {stopped['cuts']} times before the page gave up: the uploader's "
            "four tries, each resent once more by Chromium itself, as it does when a reused connection resets. "
            "The page then opened the task, which offered Continue upload."
        )
    lines += [END, ""]
    return "\n".join(lines)


def write_section(out: dict, md: Path) -> None:
    """Replace (or add, before "How it is measured") this section of BENCHMARKS.md."""
    text = md.read_text()
    block = section(out)
    start = text.find(BEGIN)
    if start >= 0:
        end = text.index(END, start) + len(END) + 1
        text = text[:start] + block + text[end:]
    else:
        text = text.replace("## How it is measured", block + "\n## How it is measured", 1)
    md.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--report", action="store_true", help="only rewrite BENCHMARKS.md from the kept figures")
    args = parser.parse_args()
    if not args.report:
        FIGURES.unlink(missing_ok=True)
        wanted = "reload or cut_part or keeps_breaking"
        done = subprocess.run([sys.executable, "-m", "pytest", TESTS, "-q", "-k", wanted], cwd=ROOT, check=False)
        if done.returncode:
            sys.exit(done.returncode)
        machine = f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
        out = {"machine": machine, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "runs": json.loads(FIGURES.read_text())}  # fmt: skip
        RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    write_section(json.loads(RESULTS.read_text()), ROOT / "BENCHMARKS.md")


if __name__ == "__main__":
    main()
