"""The Streamlit pages, driven with ``streamlit.testing.v1.AppTest`` (no browser).

Each test runs ``app.py`` on a fresh local store with the embedded worker off,
so a task stays where the test put it. Users are told apart through a trusted
proxy header (Streamlit's ``server.trustedUserHeaders``), the way a deployment
behind a sign-in proxy tells them apart; work a worker would do is done with
the core's own lifecycle functions.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # app.py's own helpers (ui/) live next to it, not in the installed package

import app_pages  # noqa: E402
from app_pages import CSV, HEADER, goto, listed, run_as_worker, submitted, texts  # noqa: E402
from badinput import Case, corpus  # noqa: E402
from dialects import FILES, ROWS  # noqa: E402
from procs import run, worker_args  # noqa: E402

from s3task import handlers  # noqa: E402
from s3task.csvio import CsvReader, InputFormat  # noqa: E402
from s3task.csvio.sheetreader import WorkbookReader  # noqa: E402
from s3task.errors import InvalidInput  # noqa: E402
from s3task.handlers import Param, TaskType  # noqa: E402
from s3task.tasks import Actor, TaskService  # noqa: E402
from ui import format as fmt  # noqa: E402
from ui.csvfile import PREVIEW_ROWS, PROBE_BYTES, inspect_upload  # noqa: E402
from ui.direct import Chosen  # noqa: E402
from ui.identity import is_loopback, resolve  # noqa: E402

# The pages' fixtures (tests/app_pages.py): a fresh local store, the embedded worker off, users told apart.
app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir


class FormDemo(TaskType):
    """A task type that declares one parameter of every kind, so the form is fully exercised."""

    name = "form-demo"
    title = "Form demo"
    description = "Only for tests."
    params: ClassVar[tuple[Param, ...]] = (
        Param("label", "str", default="x", help="a text"),
        Param("limit", "int", default=5),
        Param("ratio", "float", default=0.5),
        Param("strict", "bool", default=False),
        Param("mode", "choice", default="b", choices=("a", "b")),
    )

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        return chunk


@pytest.fixture
def form_demo() -> Iterator[type[TaskType]]:
    handlers.register(FormDemo)
    yield FormDemo
    handlers._REGISTRY.pop(FormDemo.name, None)


@pytest.fixture
def through_app(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamlit's own uploader (the fallback to the browser's direct upload, tests/browser/test_direct_transfer.py)."""
    monkeypatch.setenv("S3TASK_DIRECT_UPLOAD", "0")


def task_page(at: AppTest, task_id: str) -> AppTest:
    at.query_params["id"] = task_id
    return goto(at, "pages/task.py")


def buttons(at: AppTest) -> list[str]:
    return [b.label for b in at.button]


# --- landing, sidebar, identity ----------------------------------------------------


def test_first_visit_says_what_to_do(app: Callable[..., AppTest]) -> None:
    at = app().run()
    assert not at.exception
    assert "No tasks yet" in at.info[0].value and "New task" in at.info[0].value
    # As the New task page says: a workbook is taken as well as a CSV (issue 36 item 20).
    assert "CSV files and Excel workbooks" in at.info[0].value
    assert "upload a CSV file or an Excel workbook" in at.info[0].value
    assert "Start a new task" in buttons(at)
    sidebar = texts(at.sidebar)
    assert "local (operator)" in sidebar and "Development mode" in sidebar
    assert "No worker has been seen" in sidebar


def test_refuses_to_serve_without_identity_off_loopback(app: Callable[..., AppTest], options) -> None:
    options(address="0.0.0.0")
    at = app().run()
    assert not at.exception
    assert "cannot let you in" in at.title[0].value
    assert "0" in at.error[0].value and "127" in at.error[0].value
    assert not at.button and not at.file_uploader  # no page content at all


def test_oidc_asks_to_sign_in(app: Callable[..., AppTest]) -> None:
    at = app()
    at.user = {"is_logged_in": False}
    at.run()
    assert buttons(at) == ["Sign in to continue"]
    assert "Upload a CSV file or an Excel workbook" in texts(at)


@pytest.mark.parametrize(
    ("kwargs", "mode", "name", "operator", "problem"),
    [
        ({"address": "127.0.0.1"}, "dev", "local", True, None),
        ({"address": "::1"}, "dev", "local", True, None),
        ({"address": "0.0.0.0"}, "none", None, False, "listens on 0.0.0.0"),
        ({"address": None}, "none", None, False, "every network interface"),
        ({"headers": HEADER, "user": {"user": "ann"}, "address": "0.0.0.0"}, "header", "ann", False, None),
        ({"headers": HEADER, "user": {"user": "boss"}}, "header", "boss", True, None),
        ({"headers": HEADER, "user": {}}, "header", None, False, "X-Remote-User"),
        (
            {"auth": True, "user": {"is_logged_in": True, "email": "e@x.org", "email_verified": True}},
            "oidc",
            "e@x.org",
            False,
            None,
        ),
    ],
)
def test_identity_resolution(kwargs, mode, name, operator, problem) -> None:
    who = resolve(
        auth_configured=kwargs.get("auth", False),
        user=kwargs.get("user", {}),
        trusted_headers=kwargs.get("headers", {}),
        address=kwargs.get("address"),
        operators=["boss"],
    )
    assert who.mode == mode
    assert (who.actor.name if who.actor else None) == name
    assert (who.actor.operator if who.actor else False) == operator
    assert (problem in who.problem) if problem else who.problem is None
    assert is_loopback("localhost") and not is_loopback("192.168.1.2")


# --- New task ------------------------------------------------------------------------


def test_new_task_renders_the_form_of_each_task_type(app, form_demo) -> None:
    at = goto(app(), "pages/new_task.py")
    for task_type in (t for t in handlers.all_types() if not t.made_from_results):  # a comparison: from a task page
        at.selectbox(key="type_0").set_value(task_type).run()
        assert not at.exception
        shown = {w.label for kind in ("text_input", "number_input", "checkbox", "selectbox") for w in getattr(at, kind)}
        for param in task_type.params:
            if param.type == "steps":  # a step list is built step by step (ui/step_builder.py), not typed in
                assert "Next step" in shown
                continue
            assert param.name.replace("_", " ").capitalize() + (" *" if param.required else "") in shown
        assert task_type.description[:20] in texts(at)
    at.selectbox(key="type_0").set_value(FormDemo).run()
    assert next(s for s in at.selectbox if s.label == "Mode").value == "b"
    assert next(n for n in at.number_input if n.label == "Limit").value == 5
    assert next(c for c in at.checkbox if c.label == "Strict").value is False


def test_task_types_from_the_handlers_setting_are_offered(app, monkeypatch) -> None:
    monkeypatch.setenv("S3TASK_HANDLERS", "plugin_types")
    at = goto(app(), "pages/new_task.py")
    assert not at.exception
    offered = [getattr(t, "name", t) for t in at.selectbox(key="type_0").options]
    assert any("plugin_shout" in str(t) or "Shout (plug-in)" in str(t) for t in offered), offered


@pytest.mark.parametrize(
    ("filename", "content", "says"),
    [
        ("empty.csv", b"", "The file is empty"),
        # A zip is read as a workbook whatever its name (as submit and the worker read it): this one is cut short.
        ("book.csv", b"PK\x03\x04\x14\x00\x06\x00rest-of-a-zip", "The workbook is damaged (not a complete zip file)"),
        ("blob.csv", b"a,b\n\x00\x01\x02\n", "binary data"),
        ("cut.csv", "\ufeffa\tb\n1\t2\n".encode("utf-16-le")[:-1], "ends in the middle of a character"),
        ("dupes.csv", b"a,a\n1,2\n", "the header row repeats column names: 'a' (columns 1, 2)"),
        ("ragged.csv", b"a,b\n1,2\n3\n", "row 3 (a 3): 1 value where the header has 2 columns"),
        ("quote.csv", b'a,b\n1,"2\n', "row 2 (a 1): a quote opened in `b` on line 2 is never closed"),
        ("doc.csv", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "This is a PDF"),
        ("old.csv", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(64), "old-style Excel or Word file"),
    ],
)
def test_new_task_refuses_files_that_are_not_usable_csv(app, through_app, filename, content, says) -> None:
    at = goto(app(), "pages/new_task.py")
    at.text_input[0].input("t")
    at.file_uploader[0].set_value((filename, content, "text/csv")).run()
    assert says in at.error[0].value.replace("\\", "").replace("\u2060", "")
    assert next(b for b in at.button if b.label == "Submit").disabled
    assert not at.dataframe


def test_the_page_refuses_what_the_worker_refuses_in_its_words_before_anything_is_created(
    app, through_app, service: TaskService
) -> None:
    data = b"id,name,ID,name\n1,2,3,4\n"
    with pytest.raises(InvalidInput) as worker:
        CsvReader(io.BytesIO(data))  # how the worker reads the header
    at = goto(app(), "pages/new_task.py")
    at.text_input[0].input("duplicates")
    at.file_uploader[0].set_value(("duplicates.csv", data, "text/csv")).run()
    assert not at.exception
    assert worker.value.message in texts(at)
    assert next(b for b in at.button if b.label == "Submit").disabled
    assert not at.dataframe
    assert service.list(Actor("boss", operator=True)).tasks == []


def worker_rows(data: bytes, read_as: InputFormat | None = None) -> tuple[list[str], list[list[str]]] | str:
    """The header and rows as the worker reads them (with the format the task carries), or the words it refuses
    the file with."""
    try:
        if read_as is not None and read_as.is_workbook:  # a zip, read as the worker reads a workbook
            reader: CsvReader | WorkbookReader = WorkbookReader(io.BytesIO(data), read_as.sheet, read_as.header_row)
        else:
            reader = CsvReader(io.BytesIO(data), input_format=read_as)
        return reader.names, [list(row.values()) for table, _ in reader.tables() for row in table.to_pylist()]
    except InvalidInput as e:
        return e.message


@pytest.mark.parametrize("case", corpus(), ids=lambda c: c.name)
def test_the_preview_accepts_what_the_worker_reads_and_shows_it_as_the_worker_does(case: Case) -> None:
    """Every file of the bad-input corpus, whole (the uploader) and as the browser's first 64 KB (direct upload).

    The worker reads the file with the format the page read it with (the task carries it): a Latin-1 file the page
    detects as Windows text is read so by the worker too."""
    head = Chosen("f", "x.csv", len(case.data), case.data[:PROBE_BYTES]).preview_bytes()
    for seen, stream in (("whole", io.BytesIO(case.data)), ("head", io.BytesIO(head))):
        found = inspect_upload("x.csv", len(case.data), stream)
        worker = worker_rows(case.data, found.input_format)
        if isinstance(worker, str):
            assert not found.ok, (seen, worker)
            assert worker.lower() in found.problem.lower() or "Excel workbook" in found.problem, (seen, found.problem)
            continue
        names, rows = worker
        assert found.ok, (seen, found.problem)
        assert found.columns == names, seen
        shown = found.preview.values.tolist()
        assert shown == rows[: len(shown)], seen
        if len(case.data) <= PROBE_BYTES:
            assert len(shown) == min(len(rows), PREVIEW_ROWS), seen


def test_a_line_break_in_a_quoted_cell_previews_as_one_cell() -> None:
    """Also when the browser's first 64 KB end inside such a cell (the preview showed an error)."""
    rows = b"".join(b'%d,"line one\nline two"\n' % i for i in range(3))
    data = b"id,text\n" + rows + b'3,"' + b"long\n" * 20_000 + b'"\n4,end\n'
    head = Chosen("f", "notes.csv", len(data), data[:PROBE_BYTES]).preview_bytes()
    found = inspect_upload("notes.csv", len(data), io.BytesIO(head))
    assert found.ok, found.problem
    assert found.columns == ["id", "text"]
    assert found.preview.values.tolist() == [[str(i), "line one\nline two"] for i in range(3)]


def test_a_blank_line_before_the_header_is_read_as_the_worker_reads_it(app, through_app) -> None:
    at = goto(app(), "pages/new_task.py")
    at.text_input[0].input("t")
    at.file_uploader[0].set_value(("blank.csv", b'\n\nid,text\n1,"a\nb"\n', "text/csv")).run()
    assert not at.error
    assert at.dataframe[0].value.values.tolist() == [["1", "a\nb"]]
    assert not next(b for b in at.button if b.label == "Submit").disabled


def test_a_file_that_is_not_named_csv_is_refused() -> None:
    found = inspect_upload("notes.docx", 3, io.BytesIO(b"a,b"))
    assert not found.ok and "not a .csv file" in found.problem
    assert inspect_upload("unicode text.txt", 3, io.BytesIO(b"a,b")).ok  # what Excel names its "Unicode text"


def test_an_unnamed_task_takes_the_file_name(app, through_app) -> None:
    at = goto(app(), "pages/new_task.py")
    at.file_uploader[0].set_value(("March customers.csv", CSV, "text/csv")).run()
    assert at.text_input[0].value == "March customers"
    assert not next(b for b in at.button if b.label == "Submit").disabled


def test_new_task_previews_then_submits_a_queued_task(app, through_app, service: TaskService) -> None:
    at = goto(app("ann"), "pages/new_task.py")
    submit = next(b for b in at.button if b.label == "Submit")
    assert submit.disabled and "add a task name and a CSV or Excel file" in texts(at)
    at.text_input[0].input("People")
    at.file_uploader[0].set_value(("people.csv", CSV, "text/csv")).run()
    assert not at.error
    preview = at.dataframe[0].value
    assert list(preview.columns) == ["name", "age"] and preview["age"].tolist() == ["007", "42"]
    assert "2 columns: name, age" in texts(at)
    next(b for b in at.button if b.label == "Submit").click().run()
    assert not at.exception and not at.error
    task_id = at.query_params["id"]
    record = service.get(Actor("ann"), task_id)
    assert (record.status, record.task_name, record.created_by) == ("queued", "People", "ann")
    assert at.title[0].value == "People"  # now on the task's own page
    assert "Queued" in texts(at)
    assert "this task waits until one starts" in texts(at.main)  # the embedded worker is off and none runs elsewhere


# --- the short form, files from Excel (issue 14, points 9 and 10) ------------------------------


def read(at: AppTest) -> str:
    """What the page says, bold marks taken out."""
    return texts(at).replace("**", "")


def in_order(at: AppTest) -> list[tuple[str, str]]:
    """The main area's elements in page order, as (kind, label or text)."""

    def walk(node) -> Iterator[tuple[str, str]]:
        children = getattr(node, "children", None)
        if children is None:
            yield node.type, str(getattr(node, "label", None) or getattr(node, "value", ""))
            return
        for index in sorted(children):
            yield from walk(children[index])

    return list(walk(at.main))


def position(elements: list[tuple[str, str]], kind: str, text: str = "") -> int:
    return next(i for i, (k, said) in enumerate(elements) if k == kind and text in said)


def pick(at: AppTest, label: str):
    return next(s for s in at.selectbox if s.label == label)


def test_the_form_starts_with_the_file_and_copies_rows_unless_told_otherwise(app, through_app) -> None:
    at = goto(app(), "pages/new_task.py")
    assert not at.exception
    assert pick(at, "What should happen to the rows?").value.name == "copy"  # a type that keeps every row
    elements = in_order(at)
    uploader = position(elements, "file_uploader")
    assert uploader < position(elements, "text_input", "Task name")
    assert uploader < position(elements, "selectbox", "What should happen to the rows?")
    # One line about the type, more on request; no settings for a type that has none.
    assert "Writes every row of the uploaded file to the output unchanged." in read(at)
    assert [e.label for e in at.expander] == ["More about “Copy rows unchanged”"]
    assert "Settings for" not in texts(at) and not at.checkbox and not at.number_input


def test_only_the_chosen_type_s_settings_are_shown(app, through_app) -> None:
    at = goto(app(), "pages/new_task.py")
    at.file_uploader[0].set_value(("people.csv", CSV, "text/csv")).run()
    clean = handlers.get("clean")
    pick(at, "What should happen to the rows?").set_value(clean).run()
    shown = {c.label for c in at.checkbox}
    assert shown == {p.name.replace("_", " ").capitalize() for p in clean.params}
    elements = in_order(at)
    assert position(elements, "file_uploader") < position(elements, "checkbox")  # the file first, settings after
    pick(at, "What should happen to the rows?").set_value(handlers.get("email_enrichment")).run()
    assert not at.checkbox and [t.label for t in at.text_input] == ["Task name"]
    # The email column is one of the file's (none of these is one: the person picks it).
    (column,) = [s for s in at.selectbox if s.label == "Email column"]
    assert column.options == ["— choose a column —", "name", "age"]
    assert "Checks the email address on every row and adds four columns." in read(at)


def test_the_preview_says_how_the_file_is_read_and_rereads_it_with_the_user_s_choice(app, through_app) -> None:
    at = goto(app(), "pages/new_task.py")
    data = FILES["excel csv, europe"][0]
    at.file_uploader[0].set_value(("export.csv", data, "text/csv")).run()
    assert not at.error
    assert "Separated by semicolons · Windows (Western European) text (detected" in read(at)
    preview = at.dataframe[0].value
    assert [list(preview.columns), *preview.values.tolist()] == ROWS
    assert (pick(at, "Values separated by").value, pick(at, "Text encoding").value) == (";", "windows-1252")
    # A wrong choice shows at once, and so does the way back.
    pick(at, "Text encoding").set_value("utf-8").run()
    assert "line 1: not UTF-8 text" in read(at) and not at.dataframe
    assert "the start of the file looks like: Separated by semicolons · Windows (Western European) text" in read(at)
    assert next(b for b in at.button if b.label == "Submit").disabled
    pick(at, "Text encoding").set_value("windows-1252").run()
    assert not at.error and at.dataframe[0].value.values.tolist() == ROWS[1:]


def worker_once(store_dir: Path) -> None:
    """A real worker (worker.py) on the app's store, until no task is left."""
    proc = run(worker_args(str(store_dir), "--once", "--poll-interval", "0.1"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def output_of(service: TaskService, task_id: str) -> list[list[str]]:
    record = service.get(Actor("w"), task_id)
    assert record.status == "completed", record.last_error
    body = service.store.get(record.output_object_path).body.decode("utf-8").removeprefix("\ufeff")
    frame = pd.read_csv(io.StringIO(body), dtype=str, keep_default_na=False)
    return [list(frame.columns), *frame.to_numpy().tolist()]


def test_files_from_excel_are_read_as_previewed_by_a_real_worker(app, through_app, service, store_dir) -> None:
    """Excel's "CSV" in Europe, its "Unicode text" (a .txt), "CSV UTF-8", and a pipe file: form, worker, output."""
    files = {
        "export.csv": "excel csv, europe",
        "unicode text.txt": "excel unicode text",
        "utf8.csv": "excel csv utf-8",
        "pipes.csv": "pipes",
    }
    submitted_ids: dict[str, str] = {}
    for filename, kind in files.items():
        data, expected = FILES[kind]
        at = goto(app("ann"), "pages/new_task.py")
        at.file_uploader[0].set_value((filename, data, "text/plain")).run()
        assert not at.error, (kind, at.error)
        assert expected.describe() in read(at), kind
        preview = at.dataframe[0].value
        assert [list(preview.columns), *preview.values.tolist()] == ROWS, kind
        next(b for b in at.button if b.label == "Submit").click().run()
        assert not at.exception and not at.error, kind
        task_id = at.query_params["id"]
        assert service.get(Actor("ann"), task_id).input_format == expected, kind
        submitted_ids[kind] = task_id
    # And a one-column file whose values hold commas: the guess (commas) is wrong; the user says tabs.
    remarks = b"Remarks, internal\nGood, thanks\nLate, again\n"
    at = goto(app("ann"), "pages/new_task.py")
    at.file_uploader[0].set_value(("remarks.csv", remarks, "text/csv")).run()
    assert "Separated by commas · UTF-8 text (detected" in read(at)
    assert list(at.dataframe[0].value.columns) == ["Remarks", " internal"]
    pick(at, "Values separated by").set_value("\t").run()
    assert "Separated by tabs · UTF-8 text (as chosen" in read(at)
    assert list(at.dataframe[0].value.columns) == ["Remarks, internal"]
    next(b for b in at.button if b.label == "Submit").click().run()
    remarks_id = at.query_params["id"]

    worker_once(store_dir)
    for kind, task_id in submitted_ids.items():
        assert output_of(service, task_id) == ROWS, kind
        record = service.get(Actor("ann"), task_id)
        assert record.bytes_processed == record.input_size_bytes == len(FILES[kind][0]), kind
    assert output_of(service, remarks_id) == [["Remarks, internal"], ["Good, thanks"], ["Late, again"]]


def test_start_again_from_a_task_fills_the_form_in(app, through_app, service: TaskService) -> None:
    ann = Actor("ann")
    source = service.submit_file(
        ann, "Leads June", "clean", {"drop_duplicate_rows": False}, b"a;b\n1;2\n", {"delimiter": "detect"}
    )
    at = app("ann")
    at.query_params["from"] = source.task_id
    at = goto(at, "pages/new_task.py")
    assert not at.exception
    assert "Filled in from the task “Leads June”" in read(at)
    assert at.text_input[0].value == "Leads June"
    assert pick(at, "What should happen to the rows?").value.name == "clean"
    assert next(c for c in at.checkbox if c.label == "Drop duplicate rows").value is False
    assert next(c for c in at.checkbox if c.label == "Trim spaces").value is True
    # The input format comes along: a corrected file is read as the first one was.
    at.file_uploader[0].set_value(("corrected.csv", b"a,b\n1,2\n", "text/csv")).run()
    assert pick(at, "Values separated by").value == ";"
    assert "the start of the file looks like: Separated by commas" in read(at)
    at.text_input[0].input("Leads June, corrected").run()
    pick(at, "Values separated by").set_value(",").run()
    next(b for b in at.button if b.label == "Submit").click().run()
    again = service.get(ann, at.query_params["id"])
    assert (again.task_name, again.task_type, again.payload, again.input_format) == (
        "Leads June, corrected",
        "clean",
        source.payload,
        InputFormat(",", "utf-8"),
    )


def test_new_task_opened_again_without_a_source_starts_empty(app, through_app, service: TaskService) -> None:
    """Filled in from a task, then left: New task opened from the menu is the plain form, not the old one."""
    ann = Actor("ann")
    source = service.submit_file(ann, "prefill src", "clean", {"drop_duplicate_rows": False}, b"a;b\n1;2\n")
    at = app("ann")
    at.query_params["from"] = source.task_id
    at = goto(at, "pages/new_task.py")
    assert pick(at, "What should happen to the rows?").value.name == "clean"
    at.query_params.clear()  # what the menu does: the other page's address has no ?from=
    at = at.switch_page("pages/tasks.py").run()
    at = at.switch_page("pages/new_task.py").run()
    assert not at.exception
    assert "Filled in from" not in read(at)
    assert at.text_input[0].value == ""
    assert pick(at, "What should happen to the rows?").value.name == "copy"
    at.file_uploader[0].set_value(("semi.csv", b"x;y\n1;2\n", "text/csv")).run()
    assert pick(at, "Values separated by").value == ";"  # detected afresh, not the source task's format
    next(b for b in at.button if b.label == "Submit").click().run()
    made = service.get(ann, at.query_params["id"])
    assert (made.task_name, made.task_type, made.payload) == ("semi", "copy", {})


@pytest.mark.parametrize("bad", ["not-an-id", "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"])
def test_start_again_from_a_task_that_is_not_there_shows_the_empty_form(app, through_app, bad: str) -> None:
    at = app()
    at.query_params["from"] = bad
    at = goto(at, "pages/new_task.py")
    assert not at.exception and not at.error
    assert len(at.info) == 1 and f"There is no task '{bad}' to start from, so the form starts empty." in read(at)
    assert at.text_input[0].value == ""
    assert pick(at, "What should happen to the rows?").value.name == "copy"


# --- Tasks ---------------------------------------------------------------------------


def test_tasks_newest_first_with_status_and_progress(app, service: TaskService) -> None:
    for name in ("first", "second", "third"):
        submitted(service, "local", name)
    at = app().run()
    assert listed(at) == ["third", "second", "first"]
    row = at.dataframe[0].value.iloc[0]
    assert row["status"] == ["Queued"] and row["progress"] == 0.0
    assert "Updating every" in texts(at)  # something is live, so the list refreshes


def test_an_open_list_rereads_only_live_tasks(app, service: TaskService, store_dir: Path) -> None:
    done = submitted(service, "local", "done")
    run_as_worker(service, done, output=b"name,age,error\nann,007,\n")
    submitted(service, "local", "waiting")
    at = app().run()
    assert listed(at) == ["waiting", "done"]
    from ui.services import task_service

    app_service = task_service(str(store_dir), 3, 900)  # the app's process-wide service
    reads: list[str] = []
    original = app_service.store.get

    def counting_get(key: str, **kwargs):
        reads.append(key)
        return original(key, **kwargs)

    app_service.store.get = counting_get
    try:
        at.run()  # what each refresh of an open tab costs
    finally:
        del app_service.store.get
    assert listed(at) == ["waiting", "done"]
    status_reads = [k for k in reads if k.endswith("status.json")]
    assert status_reads == [service.layout.status_key(at.dataframe[0].value["id"].iloc[0])]


def test_load_older_extends_the_list(app, service: TaskService, monkeypatch) -> None:
    monkeypatch.setenv("S3TASK_PAGE_SIZE", "2")
    for name in ("t1", "t2", "t3"):
        submitted(service, "local", name)
    at = app().run()
    assert listed(at) == ["t3", "t2"]
    assert "cover the newest 2 of your tasks (loaded so far)" in texts(at)
    next(b for b in at.button if b.label.startswith("Load older tasks")).click().run()
    assert listed(at) == ["t3", "t2", "t1"]
    assert "cover all 3 of your tasks" in texts(at)
    assert not [b for b in at.button if b.label.startswith("Load older tasks")]


def test_mine_and_everyone(app, service: TaskService) -> None:
    submitted(service, "ann", "ann's")
    submitted(service, "bob", "bob's")
    at = app("ann").run()
    assert listed(at) == ["ann's"]
    at.button_group[0].set_value("Everyone").run()
    assert listed(at) == ["bob's", "ann's"]


# --- Task detail ---------------------------------------------------------------------


def test_cancel_needs_confirmation_and_retry_only_for_failed(app, service: TaskService) -> None:
    task_id = submitted(service, "ann", "to cancel")
    at = task_page(app("ann"), task_id)
    assert "Cancel task…" in buttons(at) and "Retry now" not in buttons(at)
    next(b for b in at.button if b.label == "Cancel task…").click().run()
    assert service.get(Actor("ann"), task_id).status == "queued"  # not yet: asks first
    assert "Cancel this task?" in texts(at)
    next(b for b in at.button if b.label == "Yes, cancel the task").click().run()
    assert not at.exception
    assert service.get(Actor("ann"), task_id).status == "abandoned"
    assert "Cancelled" in texts(at) and not {"Cancel task…", "Retry now"} & set(buttons(at))


def page_links(at) -> dict[str, str]:
    """Each page link's label and where it leads (page and query)."""
    return {e.proto.label: f"{e.proto.page}?{e.proto.query_string}" for e in at.get("page_link")}


def test_a_file_that_cannot_be_used_offers_a_fresh_start_not_a_retry(app, service: TaskService) -> None:
    task_id = submitted(service, "ann", "bad file")
    run_as_worker(service, task_id, error="column **age** missing; see [help](http://x.example)")
    at = task_page(app("ann"), task_id)
    assert "cannot be processed as it is" in at.error[0].value
    assert at.text[-1].value == "column **age** missing; see [help](http://x.example)"  # st.text: no Markdown
    assert not {"Cancel task…", "Retry now", "Run the same file again"} & set(buttons(at))  # it would fail again
    link = page_links(at)["Start again with a corrected file"]
    assert link.endswith(f"new_task?from={task_id}"), link
    boss = task_page(app("boss"), task_id)  # an operator may still run the same file (e.g. after a fix)
    next(b for b in boss.button if b.label == "Run the same file again").click().run()
    assert service.get(Actor("ann"), task_id).status == "queued"


def test_a_task_that_kept_failing_can_be_retried(app, service: TaskService) -> None:
    task_id = submitted(service, "ann", "flaky")
    run_as_worker(service, task_id, error="the store timed out", permanent=False)
    record = service.get(Actor("ann"), task_id)
    assert not record.final  # one failed attempt of three: the page says it tries again by itself
    at = task_page(app("ann"), task_id)
    assert "tries again by itself" in at.error[0].value
    assert "Retry now" in buttons(at) and "Start again with a corrected file" not in page_links(at)
    for _ in range(2):  # the other allowed attempts fail too: failed for good, and a retry may help
        service.retry(Actor("ann"), task_id)
        run_as_worker(service, task_id, error="the store timed out", permanent=False)
    assert service.get(Actor("ann"), task_id).final_reason == "attempts"
    at = task_page(app("ann"), task_id)
    assert "kept failing" in at.error[0].value
    assert {"Cancel task…", "Retry now"} & set(buttons(at)) == {"Retry now"}
    next(b for b in at.button if b.label == "Retry now").click().run()
    assert service.get(Actor("ann"), task_id).status == "queued"


def test_staff_see_plain_words_and_operators_see_attempts_and_workers(app, service: TaskService) -> None:
    task_id = submitted(service, "ann", "watched")
    run_as_worker(service, task_id, error="the task's process stopped unexpectedly (exit code -9)", permanent=False)
    staff = task_page(app("ann"), task_id)
    said = texts(staff)
    for operator_word in ("Attempt", "attempt", "w1", "lease", "worker"):
        assert operator_word not in said, operator_word
    timeline = staff.dataframe[-1].value
    assert list(timeline.columns) == ["When", "What"]
    assert timeline["What"].tolist() == ["Created", "Submitted, waiting to start", "Started", "Stopped by a problem"]
    assert not [e for e in staff.expander if e.label == "Details for operators"]
    boss = task_page(app("boss"), task_id)
    (details,) = [e for e in boss.expander if e.label == "Details for operators"]
    assert "Attempt 1" in texts(details) and "1 failed" in texts(details)
    history = details.dataframe[0].value
    assert "Attempt failed" in history["What"].tolist() and "Attempt" in history.columns
    assert any("exit code -9" in note for note in history["Details"])


def test_user_b_cannot_cancel_or_retry_user_a_task(app, service: TaskService) -> None:
    task_id = submitted(service, "ann", "ann's task")
    at = task_page(app("bob"), task_id)
    assert not at.exception
    assert "Cancel task…" not in buttons(at)
    assert "Only ann or an operator" in texts(at)
    boss = task_page(app("boss"), task_id)  # an operator may
    assert "Cancel task…" in buttons(boss)


def test_completed_task_preview_errors_only_and_download(app, service: TaskService) -> None:
    # A task type that marks row errors ("copy" has no error column).
    people = b"name,age,email\nann,007,ann@example.com\nbob,x,bob@example.com\n"  # a type that needs an email column
    task_id = service.submit_file(Actor("ann"), "done", "email_enrichment", None, people).task_id
    run_as_worker(service, task_id, output=b"name,age,error\nann,007,\nbob,x,age is not a number\n")
    at = task_page(app("ann"), task_id)
    assert not at.exception
    assert "Completed" in texts(at)
    assert not {"Cancel task…", "Retry now"} & set(buttons(at))
    assert at.dataframe[0].value["name"].tolist() == ["ann", "bob"]  # the preview, above the timeline
    assert at.dataframe[0].value["age"].tolist() == ["007", "x"]
    download = next(b for b in at.button if b.label == "Download result (CSV)")
    download.click().run()  # the URL is made now, for the browser to fetch at once (ui/direct.py)
    saves = [json.loads(c.proto.json) for c in at.get("bidi_component")]  # one per download button
    (url,) = [save["url"] for save in saves if "url" in save]
    assert url.startswith("/transfer/")  # the app's signed route streams the file from disk
    at.button_group(key=f"view_{task_id}").set_value("Only rows with errors (1)").run()
    errors = at.dataframe[0].value
    assert errors.columns[0] == "error"  # first: read without scrolling past the data
    assert errors["error"].tolist() == ["age is not a number"]
    other = task_page(app("bob"), task_id)
    assert "Only ann or an operator can see" in texts(other)
    assert "Download result (CSV)" not in buttons(other)


def test_task_page_with_a_bad_or_unknown_id(app) -> None:
    assert "not valid" in task_page(app(), "../../etc/passwd").error[0].value
    assert "no task with this id" in task_page(app(), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ").error[0].value


def test_task_names_never_render_as_markdown() -> None:
    shown = fmt.plain("[x](https://evil.example) **b** <i>h</i> :red[r] $m$ a@b.co www.w.org")
    for raw in ("](", "**", "<i>", ":red[", "$m$", "https://", "a@b", "www."):
        assert raw not in shown
    assert shown.replace("\\", "").replace("\u2060", "") == (
        "[x](https://evil.example) **b** <i>h</i> :red[r] $m$ a@b.co www.w.org"
    )
