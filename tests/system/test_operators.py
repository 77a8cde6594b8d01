"""Find and act: the Tasks list's search and filters, and the operators' Workers view.

The pages run through ``streamlit.testing.v1.AppTest`` (the fixtures of ``tests/app_pages.py``:
a fresh local store, the embedded worker off, users told apart by a trusted header, ``boss``
an operator). The Workers view is fed by two real ``worker.py`` processes, whose presence
module writes the objects the page reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import app_pages
import pytest
import worker_handlers  # noqa: F401  (registers the gated task type here too)
from app_pages import CSV, listed, page_links, run_as_worker, submitted, texts, workers_page
from conftest import wait_for
from procs import Proc, Procs
from streamlit.testing.v1 import AppTest

from s3task.records import read_record
from s3task.tasks import Actor, TaskService
from ui import tables

# The pages' fixtures: a fresh local store, the embedded worker off, users told apart by a trusted header.
app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir

POLL = 0.2
#: Seconds a worker process may take to start here (interpreter, pandas and pyarrow imports, the store
#: probe) on a busy 2-core machine; every wait for a worker is this plus its own poll interval.
WORKER_START = 60.0


def shown_caption(at: AppTest) -> str:
    return next(c.value for c in at.caption if "search and filters cover" in c.value.lower())


# --- the Tasks list: search and filters -------------------------------------------------------------------


@pytest.fixture
def many(service: TaskService) -> dict[str, str]:
    """Tasks of several statuses, types and names; newest last."""
    ids = {}
    for name, user in [("March sales", "ann"), ("April sales", "bob"), ("Customer emails", "ann")]:
        ids[name] = submitted(service, user, name)
    ids["Staff list"] = service.submit_file(Actor("ann"), "Staff list", "profile", None, CSV).task_id
    run_as_worker(service, ids["March sales"], output=b"name,age,error\nann,007,\n")
    run_as_worker(service, ids["Customer emails"], error="no column with e-mail addresses")
    return ids


def test_filter_by_status_type_and_name(app, many) -> None:
    at = app("ann").run()
    at.button_group[0].set_value("Everyone").run()
    assert listed(at) == ["Staff list", "Customer emails", "April sales", "March sales"]
    assert shown_caption(at) == "Search and filters cover all 4 of this store's tasks."

    at.multiselect(key="tasks_status").set_value(["Queued"]).run()
    assert listed(at) == ["Staff list", "April sales"]
    assert shown_caption(at).startswith("Showing 2 of 4: search and filters cover all 4")

    at.multiselect(key="tasks_type").set_value([tables.type_title("profile")]).run()
    assert listed(at) == ["Staff list"]

    at.multiselect(key="tasks_status").set_value([]).run()
    at.multiselect(key="tasks_type").set_value([]).run()
    at.text_input(key="tasks_search").input("SALES").run()  # not case-sensitive
    assert listed(at) == ["April sales", "March sales"]
    at.text_input(key="tasks_search").input("sales march").run()  # every word, in any order
    assert listed(at) == ["March sales"]
    at.multiselect(key="tasks_status").set_value(["Failed"]).run()
    assert listed(at) == []
    assert "No task loaded here matches." in texts(at)


def test_filters_say_they_cover_only_the_tasks_loaded(app, many, monkeypatch) -> None:
    monkeypatch.setenv("S3TASK_PAGE_SIZE", "2")
    at = app("ann").run()
    at.button_group[0].set_value("Everyone").run()
    at.text_input(key="tasks_search").input("march").run()
    # March sales is the oldest task: not among the newest two, so not found yet, and the page says why.
    assert listed(at) == []
    assert shown_caption(at) == (
        "Showing 0 of 2: search and filters cover the newest 2 of this store's tasks (loaded so far). "
        "*Load older tasks* extends them."
    )
    assert "Load older tasks to search further back." in texts(at)
    next(b for b in at.button if b.label == "Load older tasks (2 more)").click().run()
    assert listed(at) == ["March sales"]
    assert not [b for b in at.button if b.label.startswith("Load older tasks")]  # nothing older is left
    assert shown_caption(at).startswith("Showing 1 of 4: search and filters cover all 4")


# --- the Workers view ------------------------------------------------------------------------------------


@pytest.fixture
def workers(store_dir: Path, procs: Procs) -> Callable[[str], Proc]:
    def start(worker_id: str) -> Proc:
        args = ["--poll-interval", str(POLL), "--handlers", "worker_handlers"]
        return procs.worker(str(store_dir), *args, worker_id=worker_id)

    return start


def test_operators_see_each_worker_what_it_runs_and_when_it_last_beat(
    app, service: TaskService, workers, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    ids = {
        name: service.submit_file(Actor("ann"), name, "test_gated", {"gate": str(gate)}, CSV).task_id
        for name in ("Held A", "Held B")
    }
    first, second = workers("worker-a"), workers("worker-b")

    def both_running() -> dict[str, str] | None:
        records = {name: read_record(service.store, service.layout, i)[0] for name, i in ids.items()}
        holders = {r.worker_id for r in records.values() if r.status == "running"}
        return {r.task_name: r.worker_id for r in records.values()} if holders == {"worker-a", "worker-b"} else None

    held = wait_for(both_running, timeout=WORKER_START + 4 * POLL, what="each worker holding one task")
    at = workers_page(app("boss"))
    assert not at.exception
    said = texts(at)
    assert "**2 workers** · 2 busy, 0 idle" in said and said.count(":blue-badge[Busy]") == 2
    for name, worker_id in held.items():
        assert worker_id in said
        link = next(target for label, target in page_links(at).items() if label.startswith(name))
        assert link == f"task?id={ids[name]}", link
    beats = [c.value for c in at.caption if c.value.startswith("Last beat ")]
    assert len(beats) == 2 and all(" s ago · 20" in b for b in beats), beats  # relative, then absolute time
    facts = [c.value for c in at.caption if "pid" in c.value]
    assert any(f"pid {first.pid}" in f.replace("\\", "") for f in facts), facts
    assert any(f"pid {second.pid}" in f.replace("\\", "") for f in facts), facts

    # The tasks finish: until a worker's next beat its report still names the task, and the page says
    # what the task's record says now.
    gate.touch()
    wait_for(
        lambda: all(read_record(service.store, service.layout, i)[0].status == "completed" for i in ids.values()),
        timeout=WORKER_START,
        what="both tasks completed",
    )
    at = workers_page(at)
    assert "**2 workers** · 0 busy, 2 idle" in texts(at)  # from the tasks' records, not the reports alone
    reported = [
        task_id
        for key in service.store.list_keys(service.layout.workers_root)
        for task_id in json.loads(service.store.get(key).body)["task_ids"]
    ]
    assert reported, "both workers beat again since their claim (they beat once a minute): nothing to check"
    labels = [label for label in page_links(at) if label.startswith("Held")]
    assert len(labels) == len(reported) and all(label.endswith("now Completed") for label in labels), labels

    # A worker that stops says so, and is shown as stopped until it drops out of the window.
    first.terminate()
    first.wait(WORKER_START)
    at = workers_page(at)
    assert "1 stopped" in texts(at)
