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
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # app.py's own helpers (ui/) live next to it, not in the installed package

from badinput import Case, corpus  # noqa: E402

from s3task import handlers, lifecycle  # noqa: E402
from s3task.csvio import CsvReader  # noqa: E402
from s3task.errors import InvalidInput  # noqa: E402
from s3task.handlers import Param, TaskType  # noqa: E402
from s3task.layout import Layout  # noqa: E402
from s3task.record import update_record  # noqa: E402
from s3task.store.base import PutMode  # noqa: E402
from s3task.store.local import LocalStore  # noqa: E402
from s3task.tasks import Actor, TaskService  # noqa: E402
from ui import format as fmt  # noqa: E402
from ui.csvfile import PREVIEW_ROWS, PROBE_BYTES, inspect_upload  # noqa: E402
from ui.direct import Chosen  # noqa: E402
from ui.identity import is_loopback, resolve  # noqa: E402

APP = str(ROOT / "app.py")
CSV = b"name,age\nann,007\nbob,42\n"
HEADER = {"X-Remote-User": "user"}


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
def options() -> Iterator[Callable[..., None]]:
    """Set Streamlit config options for one test (restored afterwards)."""
    saved: dict[str, object] = {}

    def set_(**values: object) -> None:
        for name, value in values.items():
            key = "server." + name
            saved.setdefault(key, st_config.get_option(key))
            st_config.set_option(key, value)

    set_(address="127.0.0.1")
    yield set_
    for key, value in saved.items():
        st_config.set_option(key, value)


@pytest.fixture
def store_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "store"
    monkeypatch.setenv("S3TASK_STORE", str(path))
    monkeypatch.setenv("S3TASK_EMBEDDED_WORKER", "0")
    monkeypatch.setenv("S3TASK_OPERATORS", "boss")
    for name in ("S3TASK_PAGE_SIZE", "S3TASK_DOWNLOAD_CAP_MB"):
        monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture
def through_app(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamlit's own uploader (the fallback to the browser's direct upload, tests/test_direct_transfer.py)."""
    monkeypatch.setenv("S3TASK_DIRECT_UPLOAD", "0")


@pytest.fixture
def service(store_dir: Path) -> TaskService:
    """The test's own view of the store (the app has its own cached service)."""
    return TaskService(LocalStore(store_dir), Layout())


@pytest.fixture
def app(store_dir: Path, options: Callable[..., None]) -> Callable[..., AppTest]:
    """``app(user)`` → an AppTest for that user (via the trusted header), or the dev user if None."""

    def make(user: str | None = None) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=15)
        if user is not None:
            options(trustedUserHeaders=HEADER)
            at.user = {"user": user}
        return at

    return make


def goto(at: AppTest, page: str) -> AppTest:
    """Open a page the way the app does: the entrypoint runs first and registers the pages."""
    if not at._registered_pages:
        at.run()
    return at.switch_page(page).run()


def task_page(at: AppTest, task_id: str) -> AppTest:
    at.query_params["id"] = task_id
    return goto(at, "pages/task.py")


def submitted(service: TaskService, user: str, name: str, data: bytes = CSV) -> str:
    return service.submit_file(Actor(user), name, "copy", None, data).task_id


def run_as_worker(service: TaskService, task_id: str, output: bytes | None = None, error: str | None = None) -> None:
    """Do what a worker does: claim, then complete with ``output`` or fail with ``error``."""
    store, layout = service.store, service.layout
    update_record(store, layout, task_id, lambda r, now: lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)[0])
    record = service.get(Actor("w"), task_id)
    lease = lifecycle.Lease(record.attempt_id, record.lease_token or "", "w1")
    if error is not None:
        update_record(
            store, layout, task_id, lambda r, now: lifecycle.fail(r, now, lease=lease, error=error, permanent=True)
        )
        return
    key = layout.output_key(task_id, record.attempt_id)
    store.put(key, output or b"", PutMode.CREATE)
    rows = pd.read_csv(io.BytesIO(output or b""), dtype=str, keep_default_na=False)
    errors = int((rows.get("error", pd.Series(dtype=str)) != "").sum())
    progress = lifecycle.Progress(len(rows), len(rows) - errors, errors, record.input_size_bytes or 0)
    update_record(
        store,
        layout,
        task_id,
        lambda r, now: lifecycle.complete(r, now, lease=lease, output_path=key, progress=progress, row_count=len(rows)),
    )


def texts(node) -> str:
    """Everything a page (or its sidebar) says, as one string, Markdown escapes removed."""
    parts = []
    for kind in ("title", "markdown", "caption", "info", "warning", "error", "success", "text", "subheader"):
        parts += [str(e.value) for e in getattr(node, kind)]
    return "\n".join(parts).replace("\\", "").replace("\u2060", "")


def buttons(at: AppTest) -> list[str]:
    return [b.label for b in at.button]


# --- landing, sidebar, identity ----------------------------------------------------


def test_first_visit_says_what_to_do(app: Callable[..., AppTest]) -> None:
    at = app().run()
    assert not at.exception
    assert "No tasks yet" in at.info[0].value and "New task" in at.info[0].value
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
    for task_type in handlers.all_types():
        at.selectbox(key="type_0").set_value(task_type).run()
        assert not at.exception
        shown = {w.label for kind in ("text_input", "number_input", "checkbox", "selectbox") for w in getattr(at, kind)}
        for param in task_type.params:
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
        ("book.csv", b"PK\x03\x04\x14\x00\x06\x00rest-of-a-zip", "Excel workbook"),
        ("blob.csv", b"a,b\n\x00\x01\x02\n", "binary data"),
        ("latin.csv", "name\nJosé\n".encode("latin-1"), "line 2: not UTF-8"),
        ("dupes.csv", b"a,a\n1,2\n", "the header row repeats column names: 'a' (columns 1, 2)"),
        ("ragged.csv", b"a,b\n1,2\n3\n", "line 3: expected 2 fields, found 1"),
        ("quote.csv", b'a,b\n1,"2\n', "line 2: unterminated quote"),
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


def worker_rows(data: bytes) -> tuple[list[str], list[list[str]]] | str:
    """The header and rows as the worker reads them, or the words it refuses the file with."""
    try:
        reader = CsvReader(io.BytesIO(data))
        return reader.names, [list(row.values()) for table, _ in reader.tables() for row in table.to_pylist()]
    except InvalidInput as e:
        return e.message


@pytest.mark.parametrize("case", corpus(), ids=lambda c: c.name)
def test_the_preview_accepts_what_the_worker_reads_and_shows_it_as_the_worker_does(case: Case) -> None:
    """Every file of the bad-input corpus, whole (the uploader) and as the browser's first 64 KB (direct upload)."""
    worker = worker_rows(case.data)
    head = Chosen("f", "x.csv", len(case.data), case.data[:PROBE_BYTES]).preview_bytes()
    for seen, stream in (("whole", io.BytesIO(case.data)), ("head", io.BytesIO(head))):
        found = inspect_upload("x.csv", len(case.data), stream)
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
    found = inspect_upload("notes.txt", 3, io.BytesIO(b"a,b"))
    assert not found.ok and "not a .csv file" in found.problem


def test_an_unnamed_task_takes_the_file_name(app, through_app) -> None:
    at = goto(app(), "pages/new_task.py")
    at.file_uploader[0].set_value(("March customers.csv", CSV, "text/csv")).run()
    assert at.text_input[0].value == "March customers"
    assert not next(b for b in at.button if b.label == "Submit").disabled


def test_new_task_previews_then_submits_a_queued_task(app, through_app, service: TaskService) -> None:
    at = goto(app("ann"), "pages/new_task.py")
    submit = next(b for b in at.button if b.label == "Submit")
    assert submit.disabled and "add a task name and a CSV file" in texts(at)
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


# --- Tasks ---------------------------------------------------------------------------


def listed(at: AppTest) -> list[str]:
    return at.dataframe[0].value["name"].tolist() if at.dataframe else []


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


def test_tasks_pages_through_older_and_newer(app, service: TaskService, monkeypatch) -> None:
    monkeypatch.setenv("S3TASK_PAGE_SIZE", "2")
    for name in ("t1", "t2", "t3"):
        submitted(service, "local", name)
    at = app().run()
    assert listed(at) == ["t3", "t2"]
    newer = next(b for b in at.button if b.label == "Newer")
    assert newer.disabled
    next(b for b in at.button if b.label == "Older").click().run()
    assert listed(at) == ["t1"]
    assert next(b for b in at.button if b.label == "Older").disabled
    next(b for b in at.button if b.label == "Newer").click().run()
    assert listed(at) == ["t3", "t2"]


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


def test_failed_task_shows_its_error_as_text_and_can_be_retried(app, service: TaskService) -> None:
    task_id = submitted(service, "ann", "will fail")
    run_as_worker(service, task_id, error="column **age** missing; see [help](http://x.example)")
    at = task_page(app("ann"), task_id)
    assert "will not be retried automatically" in at.error[0].value
    assert at.text[-1].value == "column **age** missing; see [help](http://x.example)"  # st.text: no Markdown
    assert {"Cancel task…", "Retry now"} & set(buttons(at)) == {"Retry now"}  # final failure: retry only
    next(b for b in at.button if b.label == "Retry now").click().run()
    assert service.get(Actor("ann"), task_id).status == "queued"


def test_user_b_cannot_cancel_or_retry_user_a_task(app, service: TaskService) -> None:
    task_id = submitted(service, "ann", "ann's task")
    at = task_page(app("bob"), task_id)
    assert not at.exception
    assert "Cancel task…" not in buttons(at)
    assert "Only ann or an operator" in texts(at)
    boss = task_page(app("boss"), task_id)  # an operator may
    assert "Cancel task…" in buttons(boss)


def test_completed_task_preview_errors_only_and_download(app, service: TaskService) -> None:
    task_id = submitted(service, "ann", "done")
    run_as_worker(service, task_id, output=b"name,age,error\nann,007,\nbob,x,age is not a number\n")
    at = task_page(app("ann"), task_id)
    assert not at.exception
    assert "Completed" in texts(at)
    assert not {"Cancel task…", "Retry now"} & set(buttons(at))
    assert at.dataframe[-1].value["name"].tolist() == ["ann", "bob"]
    assert at.dataframe[-1].value["age"].tolist() == ["007", "x"]
    download = next(b for b in at.button if b.label == "Download result (CSV)")
    download.click().run()  # the URL is made now, for the browser to fetch at once (ui/direct.py)
    url = json.loads(at.get("bidi_component")[-1].proto.json)["url"]
    assert url.startswith("/transfer/")  # the app's signed route streams the file from disk
    at.button_group(key=f"view_{task_id}").set_value("Only rows with errors (1)").run()
    assert at.dataframe[-1].value["error"].tolist() == ["age is not a number"]
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
