"""A small workbook cannot take a process down, nor a workbook of many sheets hold one for minutes, nor a wide
one take many times its CSV's time (issue 36, items 1, 2, 5 and 6): each door that opens a workbook, a real
process, measured.

The doors: ``s3task submit`` (a CLI process), the HTTP API server (its process's peak memory read from
``/proc``), the New task page's preview and the corrections upload (their code, each in a process of its
own), and a real worker, whose attempt process is capped at a few hundred MB: a cap it hit would fail the
attempt as "used more than …", not with the file's own sentence at the first attempt.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from apiclient import TOKEN, api_get, api_submit
from procs import PYTHON, ROOT, Procs, child_env, worker_args
from workbooks import long_text_book, many_sheets_book, wide_table

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.web.tokens import hash_token

#: "A few hundred MB": what any process opening an attacking workbook may reach (a bare interpreter with
#: pandas and pyarrow loaded is about 150 MB). Before the fix the long text took the CLI to 1.99 GB.
PEAK_MB = 400
#: What a door may take to answer a workbook of 1,000 sheets, generous for a busy 2-core machine (each
#: answers in about a second here): before the fix the rows of every sheet were counted first, 15 GB of XML
#: for the reviewer's file (142 s for the CLI, about 50 s on this machine).
ANSWER_SECONDS = 30
REFUSED = "holds a text longer than 32,767 characters, the most a cell in Excel holds"
LAYOUT = Layout()

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="peak memory is read from Linux's /proc")


def measured(
    args: list[str], env: dict[str, str], timeout: float, *, tree: bool = False
) -> tuple[int, str, str, float]:
    """Run a process to its end: its exit code, stdout, stderr and peak RSS in MB.

    The peak is the process's own ``VmHWM``, read while it runs: wait4's ``ru_maxrss`` would count the RSS
    of the test process it was forked from (Linux carries the parent's high-water mark over an exec).
    ``tree``: the highest of it and its descendants' (a worker's attempt runs in a grandchild, forked from
    its fork server)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        deadline, peak = time.monotonic() + timeout, 0.0
        while proc.poll() is None:
            for pid in descendants(proc.pid) if tree else [proc.pid]:
                with contextlib.suppress(OSError, StopIteration):  # it may end between the poll and the read
                    peak = max(peak, peak_of(pid))
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise AssertionError(f"{args[1:4]} still running after {timeout:.0f}s")
            time.sleep(0.02)  # the interval between two looks at its memory, not a wait for a condition
        out.seek(0), err.seek(0)
        return proc.returncode, out.read().decode(), err.read().decode(), peak


def cli_submit(store: Path, book: Path, timeout: float = ANSWER_SECONDS) -> tuple[int, str, str, float]:
    args = [PYTHON, "-m", "s3task", "--store", str(store), "submit", str(book), "--name", book.stem]
    return measured(args, child_env(path=(ROOT,), S3TASK_USER="ada"), timeout)


#: The New task page's preview and the corrections upload, run as their pages run them.
DOOR = """
import io, json, sys
from pathlib import Path
data = Path(sys.argv[2]).read_bytes()
if sys.argv[1] == "preview":
    from ui.inspection import Inspection
    from ui.workbookfile import inspect_workbook
    result = Inspection(Path(sys.argv[2]).name, len(data))
    inspect_workbook(result, io.BytesIO(data), None, 20)
    print(json.dumps({"problem": result.problem, "sheets": len(result.sheets or [])}))
else:
    from s3task.errors import InvalidInput
    from s3task.tasks.corrected_file import read_corrected
    try:
        read_corrected(data, ["id", "note"], ("error", "row in file"), {2})
        print(json.dumps({"problem": None}))
    except InvalidInput as e:
        print(json.dumps({"problem": e.message}))
"""


def page_door(door: str, book: Path) -> tuple[dict[str, object], float]:
    code, out, err, peak = measured([PYTHON, "-c", DOOR, door, str(book)], child_env(), ANSWER_SECONDS)
    assert code == 0 and "Traceback" not in err, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]), peak


def peak_of(pid: int) -> float:
    """A running process's peak RSS so far, in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024


def descendants(pid: int) -> list[int]:
    """A running process and all its descendants (each thread's ``children`` in ``/proc``)."""
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        with contextlib.suppress(OSError):  # a process or a thread that has just ended
            for task in Path(f"/proc/{found[-1]}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
    return found


@pytest.fixture(scope="module")
def long_text(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("attack") / "long-text.xlsx"
    path.write_bytes(long_text_book())
    assert path.stat().st_size < 20_000  # the reviewer's was 17 KB
    return path


def test_a_small_workbook_with_one_huge_text_is_refused_by_every_door_within_a_few_hundred_mb(
    tmp_path: Path, procs: Procs, long_text: Path
) -> None:
    code, _out, err, peak = cli_submit(tmp_path / "store", long_text)
    assert code != 0 and "Traceback" not in err and "cell B2 of sheet 'Data' " + REFUSED in err, err
    assert peak < PEAK_MB, f"s3task submit peaked at {peak:.0f} MB"

    for door in ("preview", "corrections"):
        said, peak = page_door(door, long_text)
        assert REFUSED in str(said["problem"]) and "B2" in str(said["problem"]), (door, said)
        assert peak < PEAK_MB, f"the {door} peaked at {peak:.0f} MB"

    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[{hash_token(TOKEN)}]\nuser = "ada"\nrole = "user"\n')
    api = procs.api(env={"S3TASK_STORE": str(tmp_path / "api-store"), "S3TASK_API_TOKENS_FILE": str(tokens)})
    task = api_submit(api.url, long_text.read_bytes())
    assert (task.response.status_code, task.response.json()["code"]) == (400, "invalid_input"), task.response.text
    assert REFUSED in task.response.json()["message"]
    assert api_get(api.url, task.task_id)["status"] == "created"  # it waits for a file that can be read
    assert peak_of(api.pid) < PEAK_MB, f"the API server peaked at {peak_of(api.pid):.0f} MB"


def test_a_huge_text_past_the_rows_a_submit_reads_fails_the_task_for_good_at_its_first_attempt(
    tmp_path: Path,
) -> None:
    """Item 5: the worker's reader refuses it in the file's own words; not retried as if it might pass."""
    book = tmp_path / "deep.xlsx"
    book.write_bytes(long_text_book(after=30_000))  # the header and the first rows are fine: submit passes
    store = tmp_path / "store"
    code, out, err, _peak = cli_submit(store, book)
    assert code == 0, err
    task_id = out.strip().splitlines()[-1]
    env = child_env(S3TASK_MAX_CHILD_MEMORY_MB=str(PEAK_MB), S3TASK_RETRY_BACKOFF_SECONDS="0")
    code, _out, err, peak = measured(worker_args(str(store), "--once"), env, 120)
    assert code == 0 and "Traceback" not in err, err[-3000:]
    record = read_record(LocalStore(store), LAYOUT, task_id)[0]
    assert (record.status, record.final, record.attempt_id, record.failed_attempts) == ("failed", True, 1, 1)
    assert f"cell B{30_002} of sheet 'Data' " + REFUSED in (record.last_error or ""), record.last_error
    assert peak < PEAK_MB


def test_the_reviewers_workbook_of_a_thousand_sheets_is_refused_by_each_door_within_seconds(
    tmp_path: Path, procs: Procs
) -> None:
    """16.7 MB for them, 44 MB here: 1,000 sheets of 15 MB of XML each (15 GB). Each door used to count the
    rows of every sheet before it answered (142 s for the CLI); now the sum of the parts is refused at once."""
    book = tmp_path / "sheets.xlsx"
    book.write_bytes(many_sheets_book())
    too_big = "would unpack to 15.0 GB, more than the 4.0 GB s3task reads"
    code, _out, err, _peak = cli_submit(tmp_path / "store", book)
    assert code != 0 and too_big in err, err
    said, _peak = page_door("preview", book)
    assert too_big in str(said["problem"]), said
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[{hash_token(TOKEN)}]\nuser = "ada"\nrole = "user"\n')
    api = procs.api(env={"S3TASK_STORE": str(tmp_path / "api-store"), "S3TASK_API_TOKENS_FILE": str(tokens)})
    began = time.monotonic()
    task = api_submit(api.url, book.read_bytes())
    assert task.response.status_code == 400 and too_big in task.response.json()["message"], task.response.text
    assert time.monotonic() - began < ANSWER_SECONDS


def test_a_thousand_sheets_within_the_limits_answer_each_door_and_the_worker_reads_one(
    tmp_path: Path, procs: Procs
) -> None:
    """1,000 sheets of 1.6 MB of XML each (1.6 GB in all, no ``<dimension>``): the choice of sheet counts
    rows within a budget, the submit and the worker count none, and the worker reads the one sheet."""
    book = tmp_path / "sheets.xlsx"
    book.write_bytes(many_sheets_book(filler=1_600_000))
    store = tmp_path / "store"
    began = time.monotonic()
    code, out, err, _peak = cli_submit(store, book)
    assert code == 0, err
    task_id = out.strip().splitlines()[-1]
    said, _peak = page_door("preview", book)
    assert said == {"problem": None, "sheets": 1_000}
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[{hash_token(TOKEN)}]\nuser = "ada"\nrole = "user"\n')
    api = procs.api(env={"S3TASK_STORE": str(tmp_path / "api-store"), "S3TASK_API_TOKENS_FILE": str(tokens)})
    task = api_submit(api.url, book.read_bytes())
    assert task.response.status_code == 200, task.response.text
    assert time.monotonic() - began < ANSWER_SECONDS
    # The worker reads the one sheet (the first), well within a stall limit of 30 s.
    code, _out, err, _peak = measured(worker_args(str(store), "--once"), child_env(S3TASK_STALL_TIMEOUT="30"), 120)
    assert code == 0, err[-3000:]
    record = read_record(LocalStore(store), LAYOUT, task_id)[0]
    assert (record.status, record.attempt_id, record.row_count) == ("completed", 1, 100), record.last_error


#: Rows of the wide table: enough for the workbook to take more blocks than the CSV's one, and a test of under a
#: minute on a busy machine.
WIDE_ROWS = 40


def test_a_wide_workbook_is_read_by_the_worker_as_its_csv_is_in_bounded_memory(tmp_path: Path) -> None:
    """Issue 36, item 6: 40 rows × 16,384 columns (the reviewer's 200 rows took 244 s as a workbook; 50 rows 63 s
    as a workbook, 6.4 s as a CSV). Each runs in a worker of its own: the same output, within the same bound
    on memory. How long each takes is a benchmark, not this test's (a busy machine moves it 3×):
    ``bench/workbook.py --wide``, BENCHMARKS.md "A wide sheet through the worker's engine"."""
    book, text = wide_table(WIDE_ROWS)
    store = tmp_path / "store"
    env = child_env(S3TASK_RETRY_BACKOFF_SECONDS="0")
    peaks: dict[str, float] = {}
    outputs = []
    for name, data in (("wide.csv", text), ("wide.xlsx", book)):
        (tmp_path / name).write_bytes(data)
        code, out, err, _peak = cli_submit(store, tmp_path / name, timeout=120)  # not what is measured here
        assert code == 0, err
        task_id = out.strip().splitlines()[-1]
        code, _out, err, peaks[name] = measured(worker_args(str(store), "--once"), env, 300, tree=True)
        assert code == 0 and "Traceback" not in err, err[-3000:]
        record = read_record(LocalStore(store), LAYOUT, task_id)[0]
        assert (record.status, record.row_count) == ("completed", WIDE_ROWS), record.last_error
        assert record.output_object_path
        outputs.append(LocalStore(store).get(record.output_object_path).body)
    csv_peak, peak = peaks["wide.csv"], peaks["wide.xlsx"]
    assert outputs[0] == outputs[1]  # the same table, read the same
    assert peak < PEAK_MB and peak < 1.25 * csv_peak, (
        f"the workbook's attempt peaked at {peak:.0f} MB, CSV {csv_peak:.0f}"
    )
