"""What staff read is in words, not in the code's (issue 36 item 18): a recipe was "local's: email_enrichment"
where its type's title belongs, a Word document was refused as "a zip file", a count said "1 rows".

The tests gather what the pages say — every page through AppTest: tasks of every type (the step list's
"steps" too) completed, failed, cancelled, waiting, queued and running, a correction, the result searched and
its rows with errors; the task list, the sidebar and the Workers page; the New task page with a CSV, a workbook
and files it refuses, each type chosen — and what the CLI prints, its lines and its errors (list, show, submit,
download, cancel, retry, steps check, recipe). Each text is checked: no task type's internal name where its
title belongs, no snake_case identifier, no Python repr ("None", "[]", "{'", "TaskRecord(", "a bool"), no
raw state value, no exception class name, and every count next to the right form of its noun ("1 row",
"2 rows"; no "row(s)").

The files here hold no text that would be a finding, so what is found is the app's own words. Allowed: a
result's own column names (``email_domain``, which the type's description names so staff find it in the
file), what is in a code span or a path, and on the CLI the names an operator types (a type or step name,
a parameter, a record's field in ``show``'s dump of it).
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from app_pages import app, goto, options, service, store_dir  # noqa: F401
from streamlit.testing.v1 import AppTest
from workbooks import bad_workbooks, xlsxwriter_book
from worked import work

from s3task import cli, errors, handlers, lifecycle, processing
from s3task.progress import Progress
from s3task.record import TaskRecord
from s3task.records import update_record
from s3task.steps.reading import all_kinds
from s3task.tasks import Actor, TaskService
from s3task.worker.presence import Presence
from ui.corrections import fix_key

ANN, BOSS = Actor("ann"), Actor("boss", operator=True)

# --- what is checked --------------------------------------------------------------------------------------

#: The task types' internal names, each with the title that belongs where it would be shown.
TYPE_NAMES = {t.name: t.title for t in handlers.all_types()}
#: A type's name standing alone as a label: in brackets or quotes, after a colon or a "·", or as the whole text.
LONE = re.compile(r"(?:^|[(:·“\"'‘]\s*)(" + "|".join(map(re.escape, TYPE_NAMES)) + r")(?=\s*(?:[)·”\"'’,.;:]|$))", re.M)
#: An identifier of the code: two or more lower-case words joined by "_" (email_enrichment, task_type).
SNAKE = re.compile(r"(?<![\w/.@-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/@-]|\.\w)")
#: What Python prints for its values and its types, never words.
REPRS = re.compile(
    r"(?:(?<=[a-z,:=] )|(?<=[=(\[]))None\b|^None$|\bTrue\b|\bFalse\b|\[\]|\{\}|\{'|\['"
    r"|\b[A-Z][A-Za-z]+\((?:[a-z_]+=|\))|<[\w.]+ object at 0x|\bnan\b|\bNaN\b|Traceback"
    r"|\ban? (?:bool|int|float|str|NoneType)\b",
    re.M,
)  # "None" where a value is ("not None", "value: None"), not a sentence's first word ("None listed: …")
#: A state's value where its words belong ("abandoned": the task was cancelled).
STATE_VALUES = re.compile(r"\babandoned\b|\bfailed_for_good\b")
#: Nouns staff read next to a count, and their plurals.
NOUNS = {
    "row": "rows", "cell": "cells", "error": "errors", "task": "tasks", "column": "columns", "value": "values",
    "step": "steps", "sheet": "sheets", "file": "files", "problem": "problems", "worker": "workers",
    "correction": "corrections", "match": "matches", "character": "characters", "byte": "bytes", "part": "parts",
    "attempt": "attempts", "recipe": "recipes", "second": "seconds", "minute": "minutes", "day": "days",
    "hour": "hours", "line": "lines", "upload": "uploads", "time": "times", "page": "pages",
}  # fmt: skip
_SINGULARS = {plural: singular for singular, plural in NOUNS.items()}
#: A count and the word after it ("1 rows", "1,000 row"), not part of a longer number, a date, an id or a range.
COUNTED = re.compile(r"(?<![\w.,:/–-])(\d{1,3}(?:,\d{3})+|\d+)\s+([a-z]+)\b(?![-/(])")
#: A plural left to the reader.
BRACKET_PLURAL = re.compile(r"\w\((?:s|es)\)")
#: Code spans, paths, URLs and file names: code and places on purpose, not words.
NOT_WORDS = re.compile(
    r"`[^`]*`|(?:https?://|\./|/)\S+|\S+/\S+|\S+\.(?:csv|xlsx|xlsm|json|parquet|txt|py)\b|--[a-z][\w-]*"
)


def exception_names() -> set[str]:
    """Class names of the exceptions the code may raise: Python's, the core's, the readers' (pyarrow, zipfile)."""
    import pyarrow  # noqa: F401  (its exception classes, ArrowInvalid…)

    names: set[str] = set()
    todo: list[type] = [BaseException]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo += cls.__subclasses__()
    names |= {n for n in dir(errors) if n[:1].isupper()} | {zipfile.BadZipFile.__name__}
    # A single word that is English too ("Warning", "Exception") is no class name to staff.
    return {n for n in names if len(re.findall(r"[A-Z]", n)) >= 2 or n.endswith("Error")}


EXCEPTIONS = exception_names()


def findings(text: str, allowed: Iterable[str] = (), *, typed: bool = False, states: bool = False) -> list[str]:
    """What is wrong with one text shown to staff, as short notes. ``allowed``: identifiers that are words here;
    ``typed``: one of them in quotes is a name as it is typed ('steps'), not a label; ``states``: the text
    shows a record's values (its state as the API has it)."""
    ok = set(allowed)
    plain = NOT_WORDS.sub(" ", text)
    if typed:
        plain = re.sub(r"'(\w+)'", lambda m: " " if m.group(1) in ok else m.group(0), plain)
    found = [f"type name {m.group(1)!r} where “{TYPE_NAMES[m.group(1)]}” belongs" for m in LONE.finditer(plain)]
    found += [f"identifier {m.group(0)!r}" for m in SNAKE.finditer(plain) if m.group(0) not in ok]
    found += [f"Python's {m.group(0)!r}" for m in REPRS.finditer(plain)]
    found += [f"state value {m.group(0)!r}" for m in STATE_VALUES.finditer(plain) if not states]
    found += [f"exception class {w!r}" for w in re.findall(r"\b[A-Z]\w+\b", plain) if w in EXCEPTIONS]
    for m in COUNTED.finditer(plain):
        number, word = int(m.group(1).replace(",", "")), m.group(2)
        if number == 1 and word in _SINGULARS:
            found.append(f"{m.group(0)!r} (one {_SINGULARS[word]})")
        elif number != 1 and word in NOUNS:
            found.append(f"{m.group(0)!r} ({m.group(1)} {NOUNS[word]})")
    found += [f"{m.group(0)!r} (a plural left to the reader)" for m in BRACKET_PLURAL.finditer(plain)]
    return found


def check(said: Iterable[tuple[str, str]], allowed: Iterable[str] = (), **how: bool) -> list[str]:
    """``said``: (where, text) pairs; each finding as "where: note — in: text" (``how``: as for :func:`findings`)."""
    ok = set(allowed)
    notes = {f"{where}: {note} — in: {text[:160]!r}" for where, text in said for note in findings(text, ok, **how)}
    return sorted(notes)


def test_the_check_finds_what_staff_were_shown() -> None:
    """What the newcomer saw, and what the pages say instead."""
    assert findings("“CRM monthly” (local's: email_enrichment)") == [
        "type name 'email_enrichment' where “Check and enrich email addresses” belongs",
        "identifier 'email_enrichment'",
    ]
    assert findings("submitted 'March' (copy)") == ["type name 'copy' where “Copy rows unchanged” belongs"]
    assert findings("17% · 1 rows read") == ["'1 rows' (one row)"]
    assert findings("Showing 1,000 row") == ["'1,000 row' (1,000 rows)"]
    assert findings("3 task(s) could not be read") == ["'k(s)' (a plural left to the reader)"]
    assert findings("parameter 'x' must be a bool, not None") == ["Python's 'a bool'", "Python's 'None'"]
    assert findings("task 1 is abandoned") == ["state value 'abandoned'"]
    assert findings("cannot read it: BadZipFile: File is not a zip file") == ["exception class 'BadZipFile'"]
    for fine in ("Copy rows unchanged", "1 row · 2 rows · 1,000 rows · row 3,002 · 2026-03-01 12:00",
                 "Copy the rows", "None of the rows", "None listed: the whole row is the key.", "a list of pairs",
                 "`GET /api/tasks/{id}/output?variant=exact`",
                 "Profile the columns · created by ann", "Settings for “Prepare the table”"):  # fmt: skip
        assert findings(fine) == [], fine
    assert findings("email_domain", ["email_domain"]) == []


# --- what the pages say -----------------------------------------------------------------------------------

#: Fields of an element's message that hold words a person reads.
WORD_FIELDS = {"body", "label", "help", "placeholder", "text", "options", "content", "caption", "alt"}
#: Elements that hold no words of the app's (its own markup, a chart's data).
SILENT = {"html", "arrow_vega_lite_chart", "vega_lite_chart", "json", "code"}


def _words(message: Any) -> Iterator[str]:
    for field, value in message.ListFields():
        items = list(value) if field.is_repeated else [value]
        if field.message_type is not None:
            for item in items:
                yield from _words(item)
        elif field.name in WORD_FIELDS and field.type == field.TYPE_STRING:
            yield from items


def _grid(node: Any) -> Iterator[str]:
    """A grid's headers as its column config names them, their help, and its cells of text (a result's
    cells are the user's: the files here hold no finding)."""
    config = json.loads(node.proto.columns or "{}")
    frame = node.value
    order = list(node.proto.column_order) or [str(c) for c in frame.columns]
    for index, name in enumerate(frame.columns):
        conf = config.get(str(name)) or config.get(f"_pos:{index}") or {}
        if str(name) not in order or conf.get("hidden"):
            continue
        yield str(conf["label"]) if "label" in conf else str(name)
        yield str(conf.get("help") or "")
        for cell in frame[name]:
            if isinstance(cell, str):
                yield cell
            elif isinstance(cell, list):
                yield from map(str, cell)


def page_said(at: AppTest, where: str) -> list[tuple[str, str]]:
    """Every text of the page as (where, text): headings, writing, alerts, widgets' labels, options and help,
    metrics, expanders, grids; an exception on the page is a finding of its own."""
    said: list[tuple[str, str]] = []
    for node in at._tree:
        kind = getattr(node, "type", "")
        if kind in SILENT or getattr(node, "proto", None) is None:
            continue
        if kind == "exception":
            said.append((where, f"Traceback: {node.proto.message}"))
        elif kind == "dataframe":
            said += [(where, s) for s in _grid(node)]
        elif kind == "expander":
            said.append((where, node.label))
        elif kind == "bidi_component":  # the tab's title and the desktop notification (ui/notify.py)
            data = json.loads(node.proto.json or "{}") or {}
            said += [(where, t.get(k, "")) for t in data.get("tasks", []) for k in ("title", "text")]
        else:
            said += [(where, s) for s in _words(node.proto)]
    # As the browser shows it: the Markdown escapes of user text (ui/format.py plain) and word joiners gone.
    return [(where, re.sub(r"\\(.)", r"\1", text).replace("\u2060", "")) for where, text in said if text.strip()]


@functools.cache
def result_words() -> frozenset[str]:
    """The columns of each type's result (the engine run over a file here): a result's own words, which a
    type's description names too, so that staff find them in the file."""
    names = {"name_2", "column_3"}  # how Clean up the table renames repeated and empty column names
    for task_type, payload in PAYLOADS.items():
        out = io.BytesIO()
        processing.run(task_type, dict(payload or {}), io.BytesIO(PEOPLE), out, lambda _p: None)
        names |= set(next(csv.reader(io.StringIO(out.getvalue().decode("utf-8-sig")))))
    return frozenset(names)


def open_task(at: AppTest, task_id: str) -> AppTest:
    """The task's page, in the same session as the pages before it (one run a page)."""
    at.query_params["id"] = task_id
    return goto(at, "pages/task.py")


def press(at: AppTest, label: str) -> AppTest:
    return next(b for b in at.button if b.label == label).click().run()


# --- the tasks: every type, in every state staff meet -----------------------------------------------------

#: Files of no snake_case and no "None": what the pages show of them is no finding.
PEOPLE = b"Name,Email\nAnn Lee,ann@example.org\nBob Ray,not an address\n"
ONE = b"Name,Email\nAnn Lee,ann@example.org\n"
TWICE = b"Name,Email\nAnn Lee,ann@example.org\nAnn Lee,ann@example.org\n,\nCy Day,cy@example.org\n"
#: A row of too many values past the first 64 KB, which submit reads: the worker finds it.
BROKEN = b"Name,Email\n" + b"Ann Lee,ann@example.org\n" * 3_000 + b"Bob Ray,bob@example.org,extra\n"
PAYLOADS: dict[str, dict[str, Any] | None] = {
    "copy": None, "clean": None, "email_enrichment": None, "profile": None, "steps": {"steps": [{"step": "trim"}]},
}  # fmt: skip
TWO_STEPS = {"steps": [{"step": "trim"}, {"step": "remove_duplicates"}]}


def made(tasks: TaskService, name: str, task_type: str, data: bytes, payload: Any = None) -> str:
    return tasks.submit_file(ANN, name, task_type, payload, data).task_id


def claimed(tasks: TaskService, task_id: str) -> tuple[TaskRecord, lifecycle.Lease]:
    store, layout = tasks.store, tasks.layout
    update_record(store, layout, task_id, lambda r, now: lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)[0])
    record = tasks.get(BOSS, task_id)
    return record, lifecycle.Lease(record.attempt_id, record.lease_token or "", "w1")


def failed(tasks: TaskService, task_id: str, memory: bool = False) -> None:
    """Run the task as a worker does until the engine refuses its file (failed for good, in the engine's
    words); ``memory``: the attempt fails as one over its memory cap does (to be retried)."""
    record, lease = claimed(tasks, task_id)
    error, permanent = "the attempt used more than 2048 MB of memory and was stopped", False
    if not memory:
        with tasks.store.open_read(record.input_object_path) as raw:
            source = io.BytesIO(raw.read())
        with pytest.raises(errors.InvalidInput) as refused:
            processing.run(record.task_type, tasks.steps.parameters(record), source, io.BytesIO(), lambda _p: None,
                           input_format=record.read_as)  # fmt: skip
        error, permanent = str(refused.value), True
    update_record(tasks.store, tasks.layout, task_id,
                  lambda r, now: lifecycle.fail(r, now, lease=lease, error=error, permanent=permanent))  # fmt: skip


def running(tasks: TaskService, task_id: str) -> None:
    """Claimed, and one row through, as the worker's heartbeat leaves it."""
    _record, lease = claimed(tasks, task_id)
    seen = Progress(1, 1, 0, 10, row_count=1)
    update_record(tasks.store, tasks.layout, task_id,
                  lambda r, now: lifecycle.heartbeat(r, now, lease=lease, lease_seconds=60, progress=seen))  # fmt: skip


def completed(tasks: TaskService) -> dict[str, str]:
    """A task of every type over two rows (one with an error) and over one row, completed by the engine; the
    clean-up and a list of two steps leaving rows out; a correction of the email task's row with an error."""
    ids: dict[str, str] = {}
    for task_type, payload in PAYLOADS.items():
        for label, data in (("two rows", PEOPLE), ("one row", ONE)):
            ids[f"{task_type}, {label}"] = tid = made(tasks, f"{label} {len(ids)}", task_type, data, payload)
            work(tasks, tid)
    ids["clean, rows left out"] = tid = made(tasks, "Repeats", "clean", TWICE)
    work(tasks, tid)
    ids["steps, two steps"] = tid = made(tasks, "Two steps", "steps", TWICE, TWO_STEPS)
    work(tasks, tid)
    original = ids["email_enrichment, two rows"]
    names, rows = tasks.rows_to_correct(ANN, original)
    fixed = "\n".join([",".join(names), *(",".join([*r[:2], "Bob Ray", "bob@example.org"]) for r in rows)])
    ids["correction"] = tid = tasks.submit_correction(ANN, original, fixed.encode()).task_id
    work(tasks, tid)
    return ids


def unfinished(tasks: TaskService) -> dict[str, str]:
    """Tasks of every type failed for good (a bad row) and cancelled; one failed to be retried, queued,
    running, cancelled part way, waiting for its file; a correction still queued and one cancelled."""
    ids: dict[str, str] = {}
    for task_type, payload in PAYLOADS.items():
        ids[f"{task_type}, failed"] = tid = made(tasks, f"Broken {len(ids)}", task_type, BROKEN, payload)
        failed(tasks, tid)
        ids[f"{task_type}, cancelled"] = tid = made(tasks, f"Stopped {len(ids)}", task_type, PEOPLE, payload)
        tasks.cancel(ANN, tid)
    ids["to be retried"] = tid = made(tasks, "Too big", "copy", PEOPLE)
    failed(tasks, tid, memory=True)
    ids["queued"] = made(tasks, "Waiting", "email_enrichment", PEOPLE)
    ids["running"] = tid = made(tasks, "Under way", "clean", PEOPLE)
    running(tasks, tid)
    ids["cancelled part way"] = tid = made(tasks, "Stopped part way", "email_enrichment", PEOPLE)
    running(tasks, tid)
    tasks.cancel(ANN, tid)
    ids["waiting for its file"] = tasks.create(ANN, "No file yet", "profile").record.task_id
    original = made(tasks, "Corrected", "email_enrichment", PEOPLE)
    work(tasks, original)
    names, rows = tasks.rows_to_correct(ANN, original)
    fixed = "\n".join([",".join(names), *(",".join([*r[:2], "Bob Ray", "bob@example.org"]) for r in rows)])
    ids["original of corrections"] = original
    ids["correction queued"] = tasks.submit_correction(ANN, original, fixed.encode()).task_id
    ids["correction cancelled"] = tid = tasks.submit_correction(ANN, original, fixed.encode()).task_id
    tasks.cancel(ANN, tid)
    return ids


# --- the pages --------------------------------------------------------------------------------------------


def test_a_completed_tasks_page_is_in_words(app: Callable[..., AppTest], service: TaskService) -> None:  # noqa: F811
    ids = completed(service)
    said: list[tuple[str, str]] = []
    ann = app("ann")
    for label, tid in ids.items():
        said += page_said(open_task(ann, tid), f"task page ({label})")
    email = ids["email_enrichment, two rows"]
    at = open_task(ann, email)
    next(s for s in at.get("button_group") if "Only rows with errors (1)" in s.options).set_value(
        "Only rows with errors (1)"
    ).run()
    said += page_said(at, "task page (its rows with errors)")
    at.session_state[fix_key(email)] = True  # "Fix the rows with errors here" opened
    said += page_said(at.run(), "task page (its rows with errors to fix here)")
    at = open_task(app("ann"), email)
    next(t for t in at.text_input if t.label == "Search every row").input("ann@").run()
    said += page_said(at, "task page (a search with one match)")
    next(s for s in at.selectbox if s.label == "Sort by").set_value("Name").run()
    said += page_said(at, "task page (a search sorted)")
    for who in ("zed", "boss"):  # another user's task; an operator's details
        at = app(who)
        said += page_said(open_task(at, email), f"task page (email, as {who})")
        said += page_said(open_task(at, ids["profile, two rows"]), f"task page (profile, as {who})")
    found = check(said, result_words())
    assert not found, "\n".join(found)


def test_a_task_that_did_not_complete_is_in_words(app: Callable[..., AppTest], service: TaskService) -> None:  # noqa: F811
    ids = unfinished(service)
    said: list[tuple[str, str]] = []
    ann, zed = app("ann"), app("zed")
    for label, tid in ids.items():
        said += page_said(open_task(ann, tid), f"task page ({label})")
    for label in ("queued", "waiting for its file", "correction queued"):
        said += page_said(open_task(zed, ids[label]), f"task page ({label}, as zed)")
    said += page_said(press(open_task(ann, ids["queued"]), "Cancel task…"), "task page (the cancel asked)")
    at = open_task(app("boss"), ids["email_enrichment, failed"])
    said += page_said(press(at, "Run the same file again"), "task page (failed, run again)")
    for bad in ("not-an-id", "7YBQ1XV696XJJ9C28N7D5D92E0", ""):
        said += page_said(open_task(ann, bad), f"task page (id {bad!r})")
    found = check(said, result_words())
    assert not found, "\n".join(found)


def test_the_task_list_sidebar_and_workers_page_are_in_words(
    app: Callable[..., AppTest],  # noqa: F811
    service: TaskService,  # noqa: F811
) -> None:
    said = page_said(app("ann").run(), "tasks (none yet)")
    said += page_said(goto(app("boss"), "pages/workers.py"), "workers (none)")
    ids = {**completed(service), "queued": made(service, "Waiting", "profile", PEOPLE)}
    said += page_said(app("ann").run(), "tasks, sidebar (mine)")
    at = app("boss").run()
    said += page_said(at, "tasks (as an operator)")
    at.get("button_group")[0].set_value("Everyone").run()
    said += page_said(at, "tasks (everyone)")
    next(m for m in at.multiselect if m.label == "Type").set_value([TYPE_NAMES["steps"]]).run()
    said += page_said(at, "tasks (filtered by type)")
    next(t for t in at.text_input if t.label == "Search by name").input("Repeats").run()
    said += page_said(at, "tasks (one found)")
    said += page_said(goto(app("zed"), "pages/workers.py"), "workers (not an operator)")
    Presence(service.store, service.layout, "worker-1").beat([ids["queued"]], force=True)
    said += page_said(goto(app("boss"), "pages/workers.py"), "workers (one)")
    said += page_said(app("boss").run(), "sidebar (a worker seen)")
    found = check(said, result_words())
    assert not found, "\n".join(found)


def docx() -> bytes:
    """A Word document, as a person may pick it as a workbook."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", "<document/>")
    return out.getvalue()


def test_the_new_task_page_is_in_words(
    app: Callable[..., AppTest],  # noqa: F811
    service: TaskService,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("S3TASK_DIRECT_UPLOAD", "0")  # the whole file through Streamlit's uploader
    march = made(service, "March", "email_enrichment", PEOPLE)
    work(service, march)
    service.recipes.save(ANN, "CRM monthly", march)  # offered for a file with the same columns
    bad = bad_workbooks(tmp_path)
    files = {
        "people.csv": PEOPLE,
        "book.xlsx": xlsxwriter_book(tmp_path / "book.xlsx").read_bytes(),
        "letter.xlsx": docx(),
        "old.xlsx": bad["xls"][0],
        "locked.xlsx": bad["encrypted"][0],
        "archive.xlsx": bad["not a workbook"][0],
        "empty.csv": b"",
        "repeats.csv": b"a,a\n1,2\n",
    }
    said = page_said(goto(app("ann"), "pages/new_task.py"), "new task")
    for name, data in files.items():
        at = goto(app("ann"), "pages/new_task.py")
        at = at.file_uploader[0].set_value((name, data, "text/csv")).run()
        said += page_said(at, f"new task ({name})")
        if name != "people.csv":
            continue
        for task_type in (t for t in handlers.all_types() if not t.made_from_results):  # a comparison: from a task page
            box = next(s for s in at.selectbox if s.label.startswith("What should happen"))
            at = box.set_value(task_type).run()
            said += page_said(at, f"new task ({name}, {task_type.name})")
    at = app("ann")
    at.query_params["from"] = march
    said += page_said(goto(at, "pages/new_task.py"), "new task (from a task)")
    assert "This is a Word document (.docx), not an Excel workbook" in " ".join(t for _, t in said)
    found = check(said, result_words())
    assert not found, "\n".join(found)


# --- the CLI ----------------------------------------------------------------------------------------------


def typed() -> set[str]:
    """What an operator types on the command line, and so reads back as it is typed: type and step names,
    parameters, the record's fields (``show`` prints the record, as ``--json`` does). Every type registered
    now: another test in this process may have registered one of its own."""
    kinds = handlers.all_types()
    return {*(t.name for t in kinds), *all_kinds(), *(p.name for t in kinds for p in t.params), *FIELDS}


FIELDS = set(TaskRecord.__dataclass_fields__)


def cli_said(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    code = cli.main(["--as", "ann", *argv])
    out = capsys.readouterr()
    lines = (out.out + out.err).splitlines()
    if argv[0] == "show":  # the record's own fields, as the JSON has them, after the lines in words
        lines = [line for line in lines if line.split(":", 1)[0].strip() not in FIELDS]
        lines = [line for line in lines if not re.match(r"\s+\d{4}-\d\d-\d\dT", line)]  # the history
    return f"s3task {' '.join(argv)} (exit {code})", "\n".join(lines)


def test_the_cli_is_in_words(
    service: TaskService,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    ids = {**completed(service), **unfinished(service)}
    wrong = [{"step": "keep_columns", "columns": ["Phone"]}, {"step": "nonsense"}]
    files = {
        "people.csv": PEOPLE,
        "book.xlsx": xlsxwriter_book(tmp_path / "b.xlsx").read_bytes(),
        "letter.xlsx": docx(),
        "empty.csv": b"",
        "repeats.csv": b"a,a\n1,2\n",
        "steps.json": json.dumps(PAYLOADS["steps"]["steps"]).encode(),  # type: ignore[index]
        "wrong.json": json.dumps(wrong).encode(),
        "missing.json": json.dumps(wrong[:1]).encode(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    runs: list[list[str]] = [["list"], ["list", "--mine"], *(["show", tid] for tid in ids.values())]
    submit = ["submit", "people.csv", "--name", "P"]
    runs += [submit, *([*submit, "--type", t] for t in (*TYPE_NAMES, "nope")), [*submit, "--resume"]]
    runs += [[*submit, "--steps", "steps.json"], [*submit, "--steps", "wrong.json"]]
    runs += [[*submit, "--steps", "steps.json", "--type", "copy"], [*submit, "--param", "x"]]
    runs += [[*submit, "--type", "clean", "--param", "trim_spaces=maybe"], [*submit, "--param", "bogus=1"]]
    runs += [[*submit, "--type", "email_enrichment", "--column", "phone=Name"], [*submit, "--sheet", "Prices"]]
    runs += [["submit", name, "--name", "F"] for name in ("book.xlsx", "letter.xlsx", "empty.csv", "repeats.csv")]
    runs += [["submit", "nowhere.csv", "--name", "F"]]
    runs += [["recipe", "save", "CRM", "--from", ids["email_enrichment, two rows"]], ["recipe", "list"]]
    runs += [[*submit, "--recipe", "CRM"], [*submit, "--recipe", "CRM", "--type", "copy"], [*submit, "--recipe", "x"]]
    runs += [["recipe", "remove", "CRM"], ["recipe", "remove", "CRM"], ["recipe", "list"]]
    flags = ("--excel", "--errors", "--errors-excel", "--exact", "--parquet", "--combined")
    for label in ("email_enrichment, two rows", "copy, one row", "profile, two rows", "steps, two steps"):
        runs += [["download", ids[label], *flag] for flag in ([], *([f] for f in flags))]
    runs += [["download", ids[label]] for label in ("copy, failed", "copy, cancelled", "running", "correction")]
    runs += [["cancel", ids["queued"]], ["cancel", ids["copy, two rows"]], ["retry", ids["copy, failed"]]]
    runs += [["retry", ids["copy, one row"]], ["show", "not-an-id"], ["show", "7YBQ1XV696XJJ9C28N7D5D92E0"]]
    runs += [["steps", "check", "steps.json"], ["steps", "check", "steps.json", "people.csv"]]
    runs += [["steps", "check", "wrong.json"], ["steps", "check", "missing.json", "people.csv"]]
    runs += [["steps", "check", "steps.json", "letter.xlsx"]]
    said = [cli_said(argv, capsys) for argv in runs]
    words = typed() | result_words()
    values = {"list", "cancel", "retry"}  # a table of the records' fields, a task's new state: values, as in JSON
    found = check([x for x, argv in zip(said, runs, strict=True) if argv[0] not in values], words, typed=True)
    found += check([x for x, argv in zip(said, runs, strict=True) if argv[0] in values], words, typed=True, states=True)
    assert not found, "\n".join(found)
