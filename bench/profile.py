"""Where an attempt's time goes: py-spy on the real worker, folded into stages of the engine.

``py-spy record --subprocesses --threads --idle --format raw`` samples the
worker and every process below it, so the attempt child (worker → fork
server → child) is profiled as it really runs. Each sample of the child is
put in one stage by its thread (the engine names them: ``s3task-read`` reads
and parses, the main thread converts and runs the task type, ``s3task-write``
checks formulas, encodes and writes to the store) and the frames on its
stack. With ``--idle`` a thread is sampled whether it runs or waits, so a
stage's seconds are wall time of that thread.

Without py-spy (it is optional; ``pip install py-spy``) the same stages are
not available; ``run.py`` says so instead of printing a profile.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections import Counter
from pathlib import Path

#: Per thread role: (stage, function names that put a sample in it); checked leaf → root, first match wins.
STAGES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "processing": [
        ("task type (handler.process)", ("PassThrough.process", "EmailEnrichment.process", "enrich")),
        ("Arrow → pandas (to_pandas)", ("to_pandas", "table_to_dataframe")),
        ("pandas → Arrow text (prepare)", ("CsvWriter.prepare", "to_text_table", "_to_text")),
        ("wait for the writer (one block queued)", ("_Background.submit", "submit")),
        ("wait for the reader (next block parsed)", ("_prefetch",)),
        ("progress messages to the worker", ("on_progress",)),
        (
            "open the input / finish the output object",
            ("open_read", "finish", "seal", "_publish", "fsync_dir", "_Background.__exit__"),
        ),
        ("start-up (imports, open the store, handler)", ("load_module", "open_store", "_load_builtins")),
    ],
    "writer": [
        ("store write (output bytes → store)", ("_SinkFile.write", "StagedFile.write", "_MultipartWriter.write")),
        ("formula check (neutralise)", ("neutralise", "_neutralise_chunk", "_formula_candidates")),
        ("Arrow CSV encode (CSVWriter)", ("CsvWriter.write_table", "CsvWriter.close")),
        ("idle (waiting for a block)", ("_Background._loop", "_loop", "get")),
    ],
    "reader": [
        ("store read (input bytes)", ("CsvReader._read", "_Reader.read")),
        ("row boundaries", ("find_boundary", "scan", "_regular", "scan_exact")),
        ("Arrow parse", ("BlockParser",)),
        ("idle (next block handed over, waiting)", ("_offer", "put")),
        ("cut the next block of whole rows", ("CsvReader.blocks", "CsvReader.tables")),
    ],
    "upload": [
        ("upload a part", ("_send_part",)),
        ("idle", ("Background._run",)),
    ],
}
#: Thread names (``threading.Thread(name=...)``) of each role in the attempt process.
ROLES = {"MainThread": "processing", "s3task-write": "writer", "s3task-read": "reader", "s3task-upload": "upload"}


def available() -> str | None:
    here = Path(sys.executable).parent / "py-spy"
    return str(here) if here.exists() else shutil.which("py-spy")


def command(output: Path, rate: int = 200) -> tuple[str, ...]:
    exe = available()
    if exe is None:
        raise RuntimeError("py-spy is not installed")
    return (
        exe,
        "record",
        "--subprocesses",
        "--threads",
        "--idle",
        "--format",
        "raw",
        "--rate",
        str(rate),
        "-o",
        str(output),
        "--",
    )


_PROCESS = re.compile(r'process (\d+):"[^"]*";?')


def _function(frame: str) -> str:
    return frame.split(" (", 1)[0]


def _stage(frames: list[str], table: list[tuple[str, tuple[str, ...]]]) -> str | None:
    for frame in reversed(frames):
        name = _function(frame)
        for stage, prefixes in table:
            if any(name == p or name.startswith(p + ".") or name.endswith("." + p) for p in prefixes):
                return stage
    return None


def _role_from_frames(frames: list[str]) -> str | None:
    """py-spy does not always know a thread's name: tell the role by what runs at its root."""
    functions = [_function(f) for f in frames[:6]]
    if any(f.endswith("produce") for f in functions):
        return "reader"
    if any(f.endswith("_Background._loop") for f in functions):
        return "writer"
    if any(f == "Background._run" for f in functions):
        return "upload"
    if any(f == "main" for f in functions) or any(f.startswith("<module>") for f in functions):
        return "processing"
    return None


def attempt_stages(raw: Path, rate: int) -> dict:
    """Seconds per stage and thread of the attempt process(es) in a py-spy raw profile."""
    samples: list[tuple[str, str, list[str], int]] = []
    attempt_pids: set[str] = set()
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        pids = _PROCESS.findall(stack)  # the process chain, outermost first (command lines may hold ';')
        pid = pids[-1] if pids else ""
        items = [f for f in _PROCESS.sub("", stack).split(";") if f]
        thread = next((f.split(": ", 1)[1] for f in items if f.startswith("thread (") and ": " in f), "")
        frames = [f for f in items if not f.startswith("thread (")]
        samples.append((pid, thread, frames, int(n)))
        if any(f.startswith("main (") and "s3task/worker/child.py" in f for f in frames):
            attempt_pids.add(pid)
    seconds: dict[str, Counter[str]] = {role: Counter() for role in STAGES}
    for pid, thread, frames, count in samples:
        role = ROLES.get(thread) or _role_from_frames(frames)
        if pid not in attempt_pids or not frames or role is None:
            continue
        seconds[role][_stage(frames, STAGES[role]) or "other"] += count
    to_s = 1.0 / rate
    return {
        "rate_hz": rate,
        "threads_s": {role: {k: round(v * to_s, 3) for k, v in c.most_common()} for role, c in seconds.items() if c},
    }
