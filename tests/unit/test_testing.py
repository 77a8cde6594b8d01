"""s3task.testing: a plug-in author tests a task type in five lines, and gets a memory:// store."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pandas as pd
import pytest
from procs import run

from s3task import handlers
from s3task.errors import InvalidInput, UnknownTaskType
from s3task.handlers import Param, TaskType
from s3task.layout import Layout
from s3task.progress import Progress
from s3task.states import Status
from s3task.store import open_store
from s3task.store.base import PutMode
from s3task.tasks import Actor, TaskService
from s3task.testing import MemoryStore, clear_memory_stores, run_task_type


class Upper(TaskType):
    """Not registered: run_task_type registers it for the call."""

    name = "test_upper"
    title = "Upper"
    description = "Upper-cases every cell."
    error_column = None

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        return chunk.apply(lambda column: column.str.upper())


# --- the README's example, as a plug-in author writes it ------------------------------------------


def test_upper() -> None:
    result = run_task_type(Upper, "name\nann\n")
    assert result.rows["name"].tolist() == ["ANN"]


# --- what a result holds --------------------------------------------------------------------------


class NeedsEmail(TaskType):
    """Row errors are data: a row without an email gets an error, the others pass."""

    name = "test_needs_email"
    title = "Needs an email"
    description = "Flags rows without an email."
    params = (Param("column", default="email"),)

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        out = chunk.copy()
        out["error"] = chunk[self.values["column"]].map(lambda v: "" if "@" in v else "no email")
        return out


def test_counts_rows_and_raw_output() -> None:
    csv = "id,email\n1,a@x.org\n2,\n3,=cmd\n"
    result = run_task_type(NeedsEmail, csv)
    assert result.progress == Progress(
        processed_count=3, success_count=1, error_count=2, bytes_processed=len(csv), row_count=3, protected_count=1
    )
    # All text, as the worker writes it: "007"-style values and empty cells stay, formulas get a quote.
    assert result.rows.to_dict("list") == {
        "id": ["1", "2", "3"],
        "email": ["a@x.org", "", "'=cmd"],
        "error": ["", "no email", "no email"],
    }
    assert result.output == (  # a BOM first, so that Windows Excel reads UTF-8
        b'\xef\xbb\xbf"id","email","error"\r\n"1","a@x.org",""\r\n"2","","no email"\r\n"3","\'=cmd","no email"\r\n'
    )


def test_params_are_checked_and_defaulted_as_on_submit() -> None:
    result = run_task_type(NeedsEmail, "id,mail\n1,a@x.org\n", {"column": "mail"})
    assert result.rows["error"].tolist() == [""]
    with pytest.raises(InvalidInput, match="has no parameter 'colour'"):
        run_task_type(NeedsEmail, "id,email\n", {"colour": "red"})


def test_header_only_input_gives_a_header_only_output() -> None:
    result = run_task_type(NeedsEmail, "id,email\n")
    assert list(result.rows.columns) == ["id", "email", "error"] and result.rows.empty
    assert result.progress.processed_count == 0


class Totals(TaskType):
    """Keeps state across blocks and writes one row at the end."""

    name = "test_totals"
    title = "Totals"
    description = "Counts rows and blocks."
    error_column = None

    def __init__(self, params: dict[str, object]) -> None:
        super().__init__(params)
        self.rows = self.blocks = 0

    def process(self, chunk: pd.DataFrame) -> None:
        self.rows += len(chunk)
        self.blocks += 1 if len(chunk) else 0
        return None

    def finish(self) -> pd.DataFrame:
        return pd.DataFrame({"rows": [self.rows], "blocks": [self.blocks]})


def test_a_small_block_size_feeds_the_handler_several_blocks() -> None:
    csv = "n\n" + "".join(f"{i}\n" for i in range(1000))
    one = run_task_type(Totals, csv)
    many = run_task_type(Totals, csv, block_size=256)
    assert one.rows.to_dict("list") == {"rows": ["1000"], "blocks": ["1"]}
    assert many.rows["rows"].tolist() == ["1000"] and int(many.rows["blocks"][0]) > 1


# --- task types by name, and the registry left as it was ------------------------------------------


def test_a_registered_name_runs_and_bytes_are_accepted() -> None:
    result = run_task_type("copy", b"a,b\n007,\n")
    assert result.rows.to_dict("list") == {"a": ["007"], "b": [""]}  # copy adds no column


def test_an_unregistered_class_is_registered_only_for_the_call() -> None:
    run_task_type(Upper, "name\nann\n")
    with pytest.raises(UnknownTaskType):
        handlers.get(Upper.name)


def test_a_class_shadowing_a_registered_name_is_undone_after_the_call() -> None:
    builtin_copy = handlers.get("copy")

    class NotCopy(Upper):
        name = "copy"

    assert run_task_type(NotCopy, "a\nx\n").rows["a"].tolist() == ["X"]
    assert handlers.get("copy") is builtin_copy


def test_an_unknown_name_or_a_non_task_type_is_refused() -> None:
    with pytest.raises(UnknownTaskType, match="no task type named 'nope'"):
        run_task_type("nope", "a\n1\n")
    with pytest.raises(TypeError, match="TaskType subclass"):
        run_task_type(int, "a\n1\n")  # type: ignore[arg-type]


# --- failures reach the caller ----------------------------------------------------------------------


class Picky(TaskType):
    name = "test_picky"
    title = "Picky"
    description = "Needs an id column."

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        if "id" not in chunk.columns:
            raise InvalidInput("the file has no id column")
        return chunk


def test_a_task_type_raising_invalid_input_raises_it_to_the_caller() -> None:
    with pytest.raises(InvalidInput, match=r"^the file has no id column$"):
        run_task_type(Picky, "name\nann\n")
    assert run_task_type(Picky, "id\n1\n").rows["id"].tolist() == ["1"]


def test_a_handler_bug_is_raised_as_itself() -> None:
    class Broken(Upper):
        name = "test_broken"

        def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
            raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        run_task_type(Broken, "a\n1\n")


@pytest.mark.parametrize(
    ("csv", "message"),
    [
        (
            'id,name\n1,ann\n2,"bob\n3,cy\n',
            'row 3 (id 2): a quote opened in `name` on line 3 is never closed — the value there starts with " '
            'and no " ends it, so the rest of the file would be read as that one value (a " inside a value is '
            'written twice: "")',
        ),
        (
            b"id,name\n1,ann\n2,\xff\n",
            "line 3: not UTF-8 text — save the file as 'CSV UTF-8' and upload it again, or submit it again with "
            "its text encoding chosen (Excel's plain 'CSV' is Windows (Western European) text)",
        ),
    ],
)
def test_a_bad_csv_gives_the_workers_message_with_the_line(csv: str | bytes, message: str) -> None:
    with pytest.raises(InvalidInput) as info:
        run_task_type(Upper, csv)
    assert str(info.value) == message  # what the worker records as the task's last_error


# --- memory:// through open_store --------------------------------------------------------------------


@pytest.fixture
def fresh_memory() -> Iterator[None]:
    clear_memory_stores()
    yield
    clear_memory_stores()


def test_memory_store_round_trip_through_the_task_service(fresh_memory: None) -> None:
    store, layout = open_store("memory://t")
    assert isinstance(store, MemoryStore) and layout == Layout()
    service, ann = TaskService(store, layout), Actor("ann")
    created = service.create(ann, "June import", "copy")
    assert created.upload_url is None  # like the local store: no presigned URLs
    service.upload_input(ann, created.record.task_id, b"id,email\n1,a@x.org\n")
    service.submit(ann, created.record.task_id)
    # One name, one store for the whole process: a second open sees the same tasks.
    again, _ = open_store("memory://t")
    record = TaskService(again, layout).get(ann, created.record.task_id)
    assert record.status == Status.QUEUED
    assert record.input_size_bytes == len(b"id,email\n1,a@x.org\n")
    assert again.list_keys(layout.active_root) == [layout.active_key(record.task_id)]


def test_memory_urls_name_a_store_and_an_optional_prefix(fresh_memory: None) -> None:
    a, layout = open_store("memory://a/my/prefix")
    b, _ = open_store("memory://b")
    assert layout.prefix == "my/prefix" and a is not b
    assert "'a'" in a.description and "this process only" in a.description
    with pytest.raises(ValueError, match="names no store"):
        open_store("memory://")
    a.put("k", b"x", PutMode.CREATE)
    assert open_store("memory://a")[0].get("k").body == b"x"
    clear_memory_stores()
    assert open_store("memory://a")[0].list_keys("") == []


def test_importing_needs_neither_pytest_nor_moto() -> None:
    code = (
        "import sys, s3task.testing\n"
        "bad = sorted(m for m in ('pytest', 'moto', 'boto3') if m in sys.modules)\n"
        "assert not bad, bad\n"
    )
    run([sys.executable, "-c", code], timeout=60, check=True)
