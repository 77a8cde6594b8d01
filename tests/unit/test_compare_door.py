"""A comparison made at the door (``service.compares``, s3task/tasks/comparisons.py) and run as a task of its own
(s3task/handlers/compare.py), in this process: what is refused before any task exists, in words; the input a
manifest of the two results, never a copy; a cancel and ``repair`` leaving both compared results as they were;
POST /api/tasks with the type compare; the CLI's ``--on-worker``; the task page's offer and answer (AppTest)."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import requests
from app_pages import app, options, page_links, run_as_worker, service, store_dir, texts  # noqa: F401
from apps.http_server import serve
from streamlit.testing.v1 import AppTest
from support import csv_bytes
from worked import work

from s3task import cli, lifecycle, processing
from s3task.compare import compare
from s3task.compare.stored import result_tables
from s3task.config import Settings
from s3task.errors import InvalidInput, S3TaskError
from s3task.handlers.compare import CompareContext
from s3task.layout import Layout
from s3task.records import update_record
from s3task.store.base import PutMode
from s3task.tasks import Actor, TaskService
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token

ANN, BOB = Actor("ann"), Actor("bob")
OLD = [["id", "name", "price"], ["1", "Ann", "10.0"], ["2", "Ben", "20"], ["3", "Cy", "30"]]
NEW = [["id", "name", "price"], ["1", "Ann", "10"], ["2", "Benjamin", "25"], ["4", "Zoë", "=1+1"]]


def finished(tasks: TaskService, rows: list[list[str]], name: str, actor: Actor = ANN) -> str:
    made = tasks.create(actor, name, "copy", None).record.task_id
    tasks.upload_input(actor, made, csv_bytes(rows))
    tasks.submit(actor, made)
    return work(tasks, made).task_id


def run_comparison(tasks: TaskService, task_id: str) -> Any:
    """What a worker does with a queued comparison (s3task/worker/child.py), in this process."""
    store, layout = tasks.store, tasks.layout
    held: dict[str, Any] = {}

    def claim(r: Any, now: object) -> Any:
        new, held["lease"] = lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)
        return new

    record = update_record(store, layout, task_id, claim)
    key = layout.output_key(task_id, record.attempt_id)

    def keep(summary: dict[str, Any]) -> None:
        store.put(Layout.summary_key_of(key), json.dumps(summary).encode(), PutMode.OVERWRITE)

    with tempfile.TemporaryDirectory() as scratch, store.open_read(record.input_object_path) as source:
        context = CompareContext(
            64, scratch, lambda p, m, label: result_tables(store, layout, p, m, label), keep, engine=compare
        )
        sink = io.BytesIO()
        counts = processing.run(record.task_type, dict(record.payload), source, sink, lambda _p: None, context=context)
    store.put(key, sink.getvalue(), PutMode.CREATE, content_type="text/csv")
    return update_record(
        store,
        layout,
        task_id,
        lambda r, now: lifecycle.complete(
            r, now, lease=held["lease"], output_path=key, progress=counts, row_count=counts.row_count
        ),
    )


@pytest.fixture
def two(service: TaskService) -> tuple[TaskService, str, str]:  # noqa: F811
    return service, finished(service, OLD, "March"), finished(service, NEW, "April")


def compare_tasks(tasks: TaskService) -> list[Any]:
    return [r for r in tasks.list(ANN).tasks if r.task_type == "compare"]


def outputs(tasks: TaskService, *task_ids: str) -> dict[str, tuple[str, bytes]]:
    found = {}
    for task_id in task_ids:
        got = tasks.store.get(tasks.get(ANN, task_id).output_object_path or "")
        found[task_id] = (got.etag, got.body)
    return found


def test_the_answer_is_the_highlighter_with_its_summary_beside_it(two) -> None:
    tasks, a, b = two
    made = tasks.compares.create(ANN, a, b, "id")
    assert made.status == "queued" and made.task_name == "Compare March with April"
    assert tasks.store.get(made.input_object_path).body.decode().splitlines()[0] == "side,task_id,etag,size"
    done = run_comparison(tasks, made.task_id)
    rows = list(csv.reader(io.StringIO(tasks.store.get(done.output_object_path).body.decode("utf-8-sig"))))
    # The formula-looking cell is compared as produced (=1+1) and guarded again in the highlighter.
    assert rows == [
        ["@@", "id", "name", "price"],
        ["->", "1", "Ann", "10.0->10"],
        ["->", "2", "Ben->Benjamin", "20->25"],
        ["+++", "4", "Zoë", "'=1+1"],
        ["---", "3", "Cy", "30"],
    ]
    summary = tasks.compares.summary(ANN, made.task_id)
    assert summary is not None and summary["rows"] == {"added": 1, "removed": 1, "changed": 2, "unchanged": 0}
    assert summary["old_task"] == a and summary["new_task"] == b and summary["highlighted"] == 4
    assert tasks.compares.preview(ANN, made.task_id, 2)[:3] == rows[:3]
    assert done.processed_count == 6 and done.row_count == 4
    tasks.ensure_output(ANN, made.task_id, "xlsx")  # the generic Excel copy: the highlighter as a plain table


@pytest.mark.parametrize(
    ("which", "keys", "words"),
    [
        ("unknown", "id", "there is no task '7YBQ17X6RD2PBM8RGR9WKH4CX5' to compare"),
        ("bad id", "id", "parameter 'old_task'"),
        ("itself", "id", "a result cannot be compared with itself"),
        ("queued", "id", "has no result to compare (it is queued)"),
        ("bob's", "id", "belongs to bob: you may compare only results you may download"),
        ("no key", "sku", "the key column 'sku' is not in the other result"),
        ("no keys", " , ", "name at least one key column"),
    ],
)
def test_what_can_be_known_is_refused_before_any_task_exists(two, which: str, keys: str, words: str) -> None:
    tasks, a, b = two
    other = {
        "unknown": "7YBQ17X6RD2PBM8RGR9WKH4CX5",
        "bad id": "../x",
        "itself": b,
        "queued": tasks.submit_file(ANN, "waiting", "copy", None, csv_bytes(OLD)).task_id,
        "bob's": finished(tasks, OLD, "Bob's", BOB),
        "no key": finished(tasks, [["code", "name"], ["1", "x"]], "Codes"),
        "no keys": a,
    }[which]
    with pytest.raises(InvalidInput) as refused:
        tasks.compares.create(ANN, other, b, keys)
    assert words in str(refused.value)
    assert compare_tasks(tasks) == []


def test_results_of_any_size_may_be_compared_and_only_by_who_may_download_them(two, monkeypatch) -> None:
    tasks, a, b = two
    from s3task.tasks import references

    monkeypatch.setattr(references, "MAX_REFERENCE_ROWS", 1)  # a lookup's cap: not a comparison's
    assert tasks.compares.create(ANN, a, b, "id").status == "queued"
    # The generic door checks who may read both results too (a manifest uploaded by hand names no one else's).
    with pytest.raises(S3TaskError, match="only they or an operator can compare it"):
        tasks.create(BOB, "not mine", "compare", {"old_task": a, "new_task": b, "keys": "id"})


def test_an_uploaded_file_is_no_comparisons_input(two) -> None:
    tasks, a, b = two
    with pytest.raises(InvalidInput, match="a comparison's input is made when the comparison is"):
        tasks.submit_file(ANN, "by hand", "compare", {"old_task": a, "new_task": b, "keys": "id"}, csv_bytes(OLD))
    assert compare_tasks(tasks) == []


def repair(store_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["--store", str(store_path), "repair"]) == 0
    return capsys.readouterr().out


def test_a_cancel_and_a_repair_leave_both_compared_results_intact(two, store_dir: Path, capsys) -> None:  # noqa: F811
    tasks, a, b = two
    before = outputs(tasks, a, b)
    queued = tasks.compares.create(ANN, a, b, "id")
    tasks.cancel(ANN, queued.task_id)
    # One waiting for its input (made at the generic door, its manifest not sent yet): a cancel drops what was
    # sent of its own input, and repair deletes a file such a cancel left; neither ever reaches a result.
    waiting = tasks.create(ANN, "by hand", "compare", {"old_task": a, "new_task": b, "keys": "id"}).record
    assert waiting.input_object_path == tasks.layout.input_key(waiting.task_id)
    tasks.upload_input(ANN, waiting.task_id, tasks.store.get(queued.input_object_path).body)
    tasks.cancel(ANN, waiting.task_id)
    repair(store_dir, capsys)
    assert outputs(tasks, a, b) == before
    assert {tasks.get(ANN, t, fresh=True).status for t in (a, b)} == {"completed"}
    assert {tasks.get(ANN, t).status for t in (queued.task_id, waiting.task_id)} == {"abandoned"}
    # A comparison run to its end, then repaired: the same.
    done = run_comparison(tasks, tasks.compares.create(ANN, a, b, "id").task_id)
    repair(store_dir, capsys)
    assert outputs(tasks, a, b) == before and done.status == "completed"


def test_post_api_tasks_with_the_type_compare(two, store_dir: Path) -> None:  # noqa: F811
    tasks, a, b = two
    settings = Settings.load({"store": str(store_dir)}, {})
    auth = {"Authorization": "Bearer t"}
    with serve(create_app(settings, service=tasks, tokens=TokenTable({hash_token("t"): ANN}))) as base:
        body = {"name": "What changed", "type": "compare", "parameters": {"old_task": a, "new_task": b, "keys": "id"}}
        got = requests.post(f"{base}/api/tasks", json=body, headers=auth, timeout=30)
        assert got.status_code == 201, got.text
        assert got.json()["task"]["status"] == "queued" and got.json()["upload"] is None
        body["parameters"]["keys"] = "sku"
        refused = requests.post(f"{base}/api/tasks", json=body, headers=auth, timeout=30)
        assert refused.status_code == 400 and "the key column 'sku' is not in" in refused.json()["message"]
    assert [r.task_name for r in compare_tasks(tasks)] == ["What changed"]


def test_the_cli_queues_it_on_a_worker(two, store_dir: Path, capsys) -> None:  # noqa: F811
    tasks, a, b = two
    args = ["--store", str(store_dir), "--as", "ann", "compare", a, b, "--key", "id", "--on-worker"]
    assert cli.main(args) == 0
    task_id = capsys.readouterr().out.strip()
    assert tasks.get(ANN, task_id).status == "queued" and tasks.get(ANN, task_id).task_type == "compare"


def task_page(make, task_id: str, *, offer_open: bool = False) -> AppTest:
    at = make("ann")
    at.run()
    at.query_params["id"] = task_id
    if offer_open:  # "Compare with another result" opened (it is drawn only then)
        at.session_state[f"cmp_open_{task_id}"] = True
    at = at.switch_page("pages/task.py").run()
    assert not at.exception, at.exception
    return at


def test_the_task_page_offers_a_comparison_and_shows_its_answer(app, two) -> None:  # noqa: F811
    tasks, a, b = two
    closed = task_page(app, b)
    assert "Compare with another result" in [e.label for e in closed.expander]
    assert not [s for s in closed.selectbox if s.key == f"cmp_other_{b}"]  # nothing read until it is opened
    at = task_page(app, b, offer_open=True)
    other = at.selectbox(key=f"cmp_other_{b}")
    assert other.value == a  # the only other completed result with these columns
    keys = at.multiselect(key=f"cmp_keys_{b}_{a}")
    assert keys.value == ["id"]  # suggested: filled and unique in both
    assert "Filled and unique in both results: id, name" in texts(at)
    at.button(key=f"cmp_go_{b}").click().run()
    assert not at.exception, at.exception
    made = compare_tasks(tasks)
    assert len(made) == 1 and made[0].payload == {"old_task": a, "new_task": b, "keys": "id"}
    assert at.query_params["id"] == made[0].task_id  # its page opened, queued
    assert "Compare March with April" in texts(at)
    run_comparison(tasks, made[0].task_id)
    page = task_page(app, made[0].task_id)
    assert [m.value for m in page.metric][-4:] == ["1", "1", "2", "0"]  # after the status's rows read and written
    said = texts(page)
    assert "compared by id: 1 row added, 1 row removed, 2 rows changed, 0 rows unchanged" in said
    assert "price changed in 2 rows" in said
    per_column, shown = (d.value for d in page.dataframe[:2])  # then the timeline's table
    assert dict(zip(per_column["column"], per_column["rows changed"], strict=True)) == {"name": 1, "price": 2}
    assert list(shown["change"]) == ["->", "->", "+++", "---"] and list(shown["name"])[1] == "Ben->Benjamin"
    assert "Compare with another result" not in [e.label for e in page.expander]  # not offered on a comparison


def test_the_earlier_run_of_the_same_recipe_is_offered_first(app, service: TaskService) -> None:  # noqa: F811
    """Last month's file of a recipe comes before a more recent result that merely has the same columns, and a
    later result after every earlier one (the box asks for the older one)."""
    march = finished(service, OLD, "March")
    recipe = service.recipes.save(ANN, "Prices monthly", march)

    def run(name: str, with_recipe: bool = True) -> str:
        made = service.create(ANN, name, "copy", None, recipe=recipe if with_recipe else None).record.task_id
        service.upload_input(ANN, made, csv_bytes(NEW))
        service.submit(ANN, made)
        return work(service, made).task_id

    april = run("April")
    lookalike = run("Same columns, no recipe", with_recipe=False)  # newer than April, its columns the same
    may = run("May")
    # march was made before the recipe existed: it is matched by its columns.
    assert [r.task_id for r in service.compares.candidates(ANN, may)] == [april, lookalike, march]
    at = task_page(app, may, offer_open=True)
    other = at.selectbox(key=f"cmp_other_{may}")
    assert other.value == april
    assert other.format_func(april).startswith("an earlier run of its recipe · April")
    assert other.format_func(lookalike).startswith("Same columns, no recipe")
    # On April's page, the later May and the lookalike come after March, May said to be a later run.
    assert [r.task_id for r in service.compares.candidates(ANN, april)] == [march, may, lookalike]
    earlier = task_page(app, april, offer_open=True).selectbox(key=f"cmp_other_{april}")
    assert earlier.value == march and earlier.format_func(may).startswith("a later run of its recipe · May")


def fills(book_bytes: bytes) -> list[list[tuple[str, str]]]:
    """Each cell of the workbook's sheet: (its text, its fill colour, "" for none)."""
    import openpyxl

    sheet = openpyxl.load_workbook(io.BytesIO(book_bytes)).active
    cells = []
    for row in sheet.iter_rows():
        colour = [(c.fill.fgColor.rgb or "") if c.fill and c.fill.fill_type == "solid" else "" for c in row]
        cells.append([(str(c.value or ""), col[-6:] if col else "") for c, col in zip(row, colour, strict=True)])
    return cells


def test_a_comparisons_excel_copy_colours_the_changes_as_daff_does(two) -> None:
    tasks, a, b = two
    made = tasks.compares.create(ANN, a, b, "id")
    run_comparison(tasks, made.task_id)
    tasks.ensure_output(ANN, made.task_id, "xlsx")
    with tasks.open_output(ANN, made.task_id, "xlsx") as f:
        cells = fills(f.read())
    blue_grey, green, red, blue = "AAAAFF", "7FFF7F", "FF7F7F", "7F7FFF"
    assert cells[0] == [("@@", blue_grey), ("id", blue_grey), ("name", blue_grey), ("price", blue_grey)]
    by_mark = {row[0][0]: row for row in cells[1:] if row[0][0] != "->"}
    changed = [row for row in cells[1:] if row[0][0] == "->"]
    assert by_mark["+++"] == [("+++", green), ("4", green), ("Zoë", green), ("=1+1", green)]  # as text, not run
    assert by_mark["---"] == [("---", red), ("3", red), ("Cy", red), ("30", red)]
    assert [("->", blue), ("2", ""), ("Ben->Benjamin", blue), ("20->25", blue)] in changed


def test_an_added_column_is_coloured_under_its_mark(service: TaskService) -> None:  # noqa: F811
    a = finished(service, [["id", "name"], ["1", "Ann"], ["2", "Ben"]], "Before")
    b = finished(service, [["id", "name", "city"], ["1", "Ann", "Oslo"], ["2", "Bo", "Rome"]], "After")
    made = service.compares.create(ANN, a, b, "id")
    run_comparison(service, made.task_id)
    service.ensure_output(ANN, made.task_id, "xlsx")
    with service.open_output(ANN, made.task_id, "xlsx") as f:
        cells = fills(f.read())
    assert cells[0][0] == ("!", "AAAAAA") and cells[0][3] == ("+++", "AAAAAA")  # the columns' marks
    assert [text for text, _fill in cells[1]] == ["@@", "id", "name", "city"]
    bo = next(row for row in cells[2:] if row[1][0] == "2")
    assert bo[2] == ("Ben->Bo", "7F7FFF") and bo[3][1] == "7FFF7F"  # a changed cell; the added column's


def test_a_refusal_on_the_page_is_said_and_makes_nothing(app, two) -> None:  # noqa: F811
    tasks, a, b = two
    at = task_page(app, b, offer_open=True)
    at.multiselect(key=f"cmp_keys_{b}_{a}").set_value(["name", "price"]).run()
    tasks.store.delete(tasks.get(ANN, a).output_object_path or "")
    at.button(key=f"cmp_go_{b}").click().run()
    assert "The comparison was not started" in texts(at) and "no longer in the store" in texts(at)
    assert compare_tasks(tasks) == []
    with pytest.raises(S3TaskError):
        tasks.compares.create(ANN, a, b, "id")


def test_a_comparison_failed_for_its_keys_says_so_and_offers_no_file_to_correct(app, two) -> None:  # noqa: F811
    tasks, a, b = two
    made = tasks.compares.create(ANN, a, b, "name")
    words = "keys repeat in the new result, so its rows cannot be paired: name 'x' (2 rows)"
    run_as_worker(tasks, made.task_id, error=words, permanent=True)
    page = task_page(app, made.task_id)
    said = texts(page)
    assert "These results cannot be compared as they are" in said and "other key columns" in said
    assert "Start again with a corrected file" not in page_links(page)
    assert "Keep these settings as a recipe" not in [e.label for e in page.expander]
    with pytest.raises(InvalidInput, match="makes no recipe"):
        tasks.recipes.save(ANN, "monthly", made.task_id)


def test_a_filtered_views_excel_copy_is_coloured_as_the_whole_comparisons(two) -> None:
    # Found by the outside review: "download this view" of a comparison gave a plain workbook.
    from conftest import wait_for

    from s3task import query

    tasks, a, b = two
    made = tasks.compares.create(ANN, a, b, "id")
    record = run_comparison(tasks, made.task_id)
    question = query.Query(search="Ben")  # only the changed row of Ben (and the header row it matches)
    tasks.prepare_view(ANN, record.task_id, question, "xlsx")
    state = wait_for(lambda: (s := tasks.view_state(ANN, record.task_id, question, "xlsx")).kind != "preparing" and s,
                     what="the view's workbook")  # fmt: skip
    assert state.kind == "ready", state.message
    key = tasks.layout.view_key(record.task_id, record.attempt_id, query.digest(question), "xlsx")
    with tasks.store.open_read(key) as f:
        cells = fills(f.read())
    assert cells[0] == [("@@", "AAAAFF"), ("id", "AAAAFF"), ("name", "AAAAFF"), ("price", "AAAAFF")]
    assert cells[1:] == [[("->", "7F7FFF"), ("2", ""), ("Ben->Benjamin", "7F7FFF"), ("20->25", "7F7FFF")]]


@pytest.mark.parametrize("suffix", ["xlsx", "csv"])
def test_a_view_of_a_comparison_with_columns_added_and_removed_downloads(service: TaskService, suffix: str) -> None:  # noqa: F811
    # Found by the outside review: the marks row over such a comparison names two columns "", and the view's
    # download failed with a KeyError.
    from conftest import wait_for

    from s3task import query

    a = finished(service, [["id", "name", "price"], ["1", "Ann", "10"], ["2", "Ben", "20"]], "Before")
    b = finished(service, [["id", "name", "note"], ["1", "Ann", "x"], ["2", "Bo", "y"]], "After")
    record = run_comparison(service, service.compares.create(ANN, a, b, "id").task_id)
    question = query.Query(search="Bo")
    service.prepare_view(ANN, record.task_id, question, suffix)
    state = wait_for(lambda: (s := service.view_state(ANN, record.task_id, question, suffix)).kind != "preparing"
                     and s, what="the view's file")  # fmt: skip
    assert state.kind == "ready", state.message
    key = service.layout.view_key(record.task_id, record.attempt_id, query.digest(question), suffix)
    with service.store.open_read(key) as f:
        body = f.read()
    if suffix == "xlsx":
        cells = fills(body)
        assert [text for text, _ in cells[0]] == ["!", "", "", "+++", "---"]  # the columns' marks, over all
        (bo,) = cells[1:]
        assert bo[2] == ("Ben->Bo", "7F7FFF") and bo[3][1] == "7FFF7F" and bo[4][1] == "FF7F7F"
    else:
        rows = list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
        # As every view's CSV, for spreadsheets: a cell that would start a formula is kept as text with a '.
        assert rows[0] == ["!", "", "", "'+++", "'---"] and rows[1][:3] == ["'->", "2", "Ben->Bo"]
