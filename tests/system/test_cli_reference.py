"""``s3task submit FILE --steps STEPS.json --reference NAME=PATH`` (s3task/cli_reference.py) with a real
``worker.py`` on a local store: the reference file becomes a copy task of its own ("Reference: managers.csv"),
the command waits for the worker to copy it, puts its id in the lookup and submits the list, which the worker
runs with the lookup reading that result. Without a worker the wait ends at its deadline in one line naming the
reference task (left queued for a worker), and no steps task is made; a NAME no lookup has is refused before
anything is sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import wait_for
from procs import ROOT, child_env, cli
from support import csv_bytes
from test_steps_doors import MANAGERS, ORDERS, lookup_list, rows_of

from s3task.layout import Layout
from s3task.states import Status
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ANN = Actor("ann")
POLL = 0.2  # the worker's poll interval here (--poll-interval)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, TaskService]:
    (tmp_path / "orders.csv").write_bytes(ORDERS)
    (tmp_path / "managers.csv").write_bytes(MANAGERS)
    (tmp_path / "steps.json").write_text(json.dumps({"steps": lookup_list("managers")}))
    return tmp_path, TaskService(LocalStore(tmp_path / "store"), Layout())


def submit(tmp_path: Path, *more: str, timeout: float = 60):
    args = ["--store", str(tmp_path / "store"), "submit", "orders.csv", "--name", "orders", "--steps", "steps.json"]
    env = child_env(path=(ROOT,), S3TASK_USER="ann")
    return cli(*args, *more, cwd=tmp_path, env=env, timeout=timeout)


def managers_found(service: TaskService, task_id: str, wait: float) -> list[tuple[str, str]]:
    """Each customer of the steps task's result and the manager its lookup found, once the task has completed."""
    record = wait_for(
        lambda: (r := service.get(ANN, task_id, fresh=True)).status == Status.COMPLETED and r,
        timeout=wait,
        what="the steps task completed",
    )
    return [(r["Customer"], r["Manager"]) for r in rows_of(service.store.get(record.output_object_path).body)]


def test_a_reference_file_becomes_a_task_the_worker_copies_and_the_lookup_reads(
    files: tuple[Path, TaskService], procs, startup: float
) -> None:
    tmp_path, service = files
    procs.worker(str(tmp_path / "store"), "--poll-interval", str(POLL), worker_id="w1")
    # The worker's start (measured), its poll, and a copy of three rows: what the command may wait.
    wait = 30 + startup + 2 * POLL
    done = submit(tmp_path, "--reference", "managers=managers.csv", "--reference-wait", str(wait), timeout=wait + 30)
    assert done.returncode == 0, done.stderr
    task_id = done.stdout.strip()
    (reference,) = [t for t in service.list(ANN).tasks if t.task_name == "Reference: managers.csv"]
    assert (reference.task_type, reference.status, reference.row_count) == ("copy", Status.COMPLETED, 3)
    assert f"reference managers.csv: task {reference.task_id}, waiting for a worker to copy it" in done.stderr
    lookup = service.steps.parameters(service.get(ANN, task_id))["steps"][3]
    assert lookup["reference"] == reference.task_id
    assert managers_found(service, task_id, wait) == [("Ada", "Mo"), ("Cy", "Li"), ("Dee", "")]


def test_a_semicolon_reference_in_windows_1252_is_read_as_the_app_reads_a_file(
    files: tuple[Path, TaskService], procs, startup: float
) -> None:
    # Found after stop 41: a reference was read as UTF-8 with commas whatever it was (a European Excel's CSV was
    # refused for lacking the key column "Account"). Its delimiter and encoding are now found from it, in the
    # early check and in its copy task alike.
    tmp_path, service = files
    (tmp_path / "managers.csv").write_bytes("Account;Manager\r\nA1;Zoë\r\nC3;Li\r\n".encode("windows-1252"))
    procs.worker(str(tmp_path / "store"), "--poll-interval", str(POLL), worker_id="w1")
    wait = 30 + startup + 2 * POLL
    done = submit(tmp_path, "--reference", "managers=managers.csv", "--reference-wait", str(wait), timeout=wait + 30)
    assert done.returncode == 0, done.stderr
    task_id = done.stdout.strip()
    assert managers_found(service, task_id, wait) == [("Ada", "Zoë"), ("Cy", "Li"), ("Dee", "")]


def test_a_reference_whose_encoding_shows_late_is_read_as_reference_encoding_says(
    files: tuple[Path, TaskService], procs, startup: float
) -> None:
    # Found by the outside review: a reference whose first 64 KB are plain ASCII is taken for UTF-8, and its copy
    # fails at a later "Zoë" in Windows-1252, advising an encoding chosen that no flag could choose for it.
    tmp_path, service = files
    filler = "".join(f"F{n:06d};Pat {'x' * 40}\r\n" for n in range(2_000))  # about 100 KB before the first "ë"
    (tmp_path / "managers.csv").write_bytes(f"Account;Manager\r\nA1;Mo\r\n{filler}C3;Zoë\r\n".encode("cp1252"))
    procs.worker(str(tmp_path / "store"), "--poll-interval", str(POLL), worker_id="w1")
    wait = 30 + startup + 2 * POLL
    failed = submit(tmp_path, "--reference", "managers=managers.csv", "--reference-wait", str(wait), timeout=wait + 30)
    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    said = failed.stderr.strip().splitlines()[-1]
    assert "the reference file managers.csv was not copied" in said and "not UTF-8 text" in said
    assert said.endswith("--reference-encoding and --reference-delimiter say how a reference file is read")

    done = submit(
        tmp_path,
        *("--reference", "managers=managers.csv", "--reference-encoding", "windows-1252"),
        *("--reference-wait", str(wait)),
        timeout=wait + 30,
    )
    assert done.returncode == 0, done.stderr
    assert managers_found(service, done.stdout.strip(), wait) == [("Ada", "Mo"), ("Cy", "Zoë"), ("Dee", "")]


def test_without_a_worker_the_wait_ends_at_its_deadline_naming_the_reference_task(
    files: tuple[Path, TaskService],
) -> None:
    tmp_path, service = files
    done = submit(tmp_path, "--reference", "managers=managers.csv", "--reference-wait", "0")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    (reference,) = service.list(ANN).tasks
    assert (reference.task_name, reference.status) == ("Reference: managers.csv", Status.QUEUED)
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(
            f"task {reference.task_id} (Reference: managers.csv) was not copied within 0 s: is a worker running? "
            "It stays queued; once it has completed, use its id as the lookup's reference"
        )
    )


def test_a_reference_name_no_lookup_has_is_refused_before_anything_is_sent(files: tuple[Path, TaskService]) -> None:
    tmp_path, service = files
    (tmp_path / "other.csv").write_bytes(csv_bytes([["Account", "Region"], ["A1", "North"]]))
    done = submit(tmp_path, "--reference", "regions=other.csv")
    assert done.returncode != 0
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith("--reference 'regions': no lookup in steps.json has that reference")
    )
    assert service.list(ANN).tasks == []


def test_keys_repeated_further_down_the_reference_are_said_before_the_file_is_sent(
    files: tuple[Path, TaskService], procs, startup: float
) -> None:
    # Found by the outside review: the worker was the first to see a reference's repeated keys. A key repeated past
    # the reference's first rows (the first 64 KB) shows only in its copy, so the copy is made and kept.
    tmp_path, service = files
    filler = [[f"F{n:06d}", "Pat " + "x" * 60] for n in range(2_000)]  # about 140 KB before the repeat
    (tmp_path / "managers.csv").write_bytes(csv_bytes([["Account", "Manager"], ["A1", "Mo"], *filler, ["a 1", "Al"]]))
    procs.worker(str(tmp_path / "store"), "--poll-interval", str(POLL), worker_id="w1")
    wait = 30 + startup + 2 * POLL
    done = submit(tmp_path, "--reference", "managers=managers.csv", "--reference-wait", str(wait), timeout=wait + 30)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    (reference,) = service.list(ANN).tasks  # the reference's copy only: no steps task
    assert (reference.task_name, reference.status) == ("Reference: managers.csv", Status.COMPLETED)
    said = done.stderr.strip().splitlines()[-1]
    assert "the steps cannot run on orders.csv's first rows: Step 4 (Look up columns from a reference table): " in said
    assert "keys repeat in the reference table" in said
    assert said.endswith(f"the reference tasks are kept (managers={reference.task_id}): give their ids as the "
                         "references")  # fmt: skip


@pytest.mark.parametrize(
    ("managers", "words"),
    [
        ([["Account", "Manager"], ["A1", "Mo"], ["a 1", "Al"]], "keys repeat in the reference table"),
        ([["Acct", "Manager"], ["A1", "Mo"]], "Account"),
    ],
    ids=["a repeated key", "a key column it lacks"],
)
def test_what_the_reference_files_first_rows_show_makes_no_task(
    files: tuple[Path, TaskService], managers: list[list[str]], words: str
) -> None:
    # Noticed after the outside review: a column the reference lacks was said only after it had been copied.
    tmp_path, service = files
    (tmp_path / "managers.csv").write_bytes(csv_bytes(managers))
    done = submit(tmp_path, "--reference", "managers=managers.csv", "--reference-wait", "0")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert "the steps cannot run on orders.csv's first rows and the reference files' first rows: Step 4 " in said
    assert words in said and said.endswith("Nothing was submitted")
    assert service.list(ANN).tasks == []  # no reference task, no steps task


@pytest.mark.parametrize(
    ("orders", "steps", "words"),
    [
        (b"", None, "orders.csv: the file is empty"),
        (
            None,
            {"step": "format_dates", "columns": ["Ordered"], "from": "nonsense"},
            "Step 6 (Change date format): Written as now: 'nonsense' is not a date format",
        ),
    ],
)
def test_a_file_or_a_list_that_cannot_be_used_makes_no_reference_task(
    files: tuple[Path, TaskService], orders: bytes | None, steps: dict | None, words: str
) -> None:
    tmp_path, service = files
    if orders is not None:
        (tmp_path / "orders.csv").write_bytes(orders)
    if steps is not None:
        (tmp_path / "steps.json").write_text(json.dumps({"steps": [*lookup_list("managers"), steps]}))
    done = submit(tmp_path, "--reference", "managers=managers.csv", "--reference-wait", "0")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert words in done.stderr.strip().splitlines()[-1]
    assert service.list(ANN).tasks == []


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--reference-encoding", "latin-9"), ("--reference-delimiter", "::")],
    ids=["encoding", "delimiter"],
)
def test_a_reference_flag_that_cannot_be_used_is_named_and_makes_no_task(
    files: tuple[Path, TaskService], flag: str, value: str
) -> None:
    tmp_path, service = files
    done = submit(tmp_path, "--reference", "managers=managers.csv", flag, value, "--reference-wait", "0")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert said.startswith(f"error: {flag}: the input format's ") and repr(value) in said, said
    assert service.list(ANN).tasks == []


def test_a_lookup_naming_a_task_that_cannot_be_read_makes_no_reference_task(
    files: tuple[Path, TaskService],
) -> None:
    # Found by the outside review: the managers reference was copied first, then "regions" refused.
    tmp_path, service = files
    regions = {"step": "lookup", "reference": "regions", "on": ["Region"], "take": ["Area"]}
    (tmp_path / "steps.json").write_text(json.dumps({"steps": [*lookup_list("managers"), regions]}))
    done = submit(tmp_path, "--reference", "managers=managers.csv", "--reference-wait", "0")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "The lookup: there is no task 'regions'" in done.stderr.strip().splitlines()[-1]
    assert service.list(ANN).tasks == []


def test_the_first_rows_are_read_as_the_recipe_reads_the_file(
    files: tuple[Path, TaskService], procs, startup: float
) -> None:
    # Found by the outside review: a recipe's sheet was not used, so the check read the sheet the book opens on.
    import xlsxwriter

    tmp_path, service = files
    book = xlsxwriter.Workbook(str(tmp_path / "orders.xlsx"))
    book.add_worksheet("Cover").write(0, 0, "June orders")
    data = book.add_worksheet("Data")
    for n, row in enumerate([["Customer", "Region", "Ordered", "Account"], ["Ada", "North", "01/02/2024", "A1"]]):
        data.write_row(n, 0, row)
    book.close()
    (tmp_path / "trim.json").write_text(json.dumps({"steps": [{"step": "trim"}]}))
    env = child_env(path=(ROOT,), S3TASK_USER="ann")
    store = ["--store", str(tmp_path / "store")]
    first = cli(*store, "submit", "orders.xlsx", "--name", "June", "--steps", "trim.json", "--sheet", "Data",
                cwd=tmp_path, env=env, timeout=60)  # fmt: skip
    assert first.returncode == 0, first.stderr
    saved = cli(*store, "recipe", "save", "Orders book", "--from", first.stdout.strip(), cwd=tmp_path, env=env,
                timeout=60)  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    procs.worker(str(tmp_path / "store"), "--poll-interval", str(POLL), worker_id="w1")
    wait = 30 + startup + 2 * POLL
    done = cli(*store, "submit", "orders.xlsx", "--name", "July", "--recipe", "Orders book", "--steps", "steps.json",
               "--reference", "managers=managers.csv", "--reference-wait", str(wait), cwd=tmp_path, env=env,
               timeout=wait + 30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lookup = service.steps.parameters(service.get(ANN, done.stdout.strip()))["steps"][3]
    assert lookup["reference"] != "managers" and service.get(ANN, lookup["reference"]).task_name == (
        "Reference: managers.csv"
    )
