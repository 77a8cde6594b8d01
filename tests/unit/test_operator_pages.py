"""The operators' views that need no worker process, through ``streamlit.testing.v1.AppTest`` (the
fixtures of ``tests/app_pages.py``: a fresh local store, the embedded worker off, users told apart by
a trusted header, ``boss`` an operator): the task list's count columns, the Workers page refused to
staff and in the menu of operators only, a report from another version. (The search and filters, and
the Workers page fed by real ``worker.py`` processes: tests/system/test_operators.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import app_pages
import pytest
from app_pages import run_as_worker, submitted, texts, workers_page
from streamlit.testing.v1 import AppTest

from s3task.tasks import TaskService
from ui import tables

# The pages' fixtures: a fresh local store, the embedded worker off, users told apart by a trusted header.
app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir


def test_count_columns_are_wide_enough_for_any_count(app, service: TaskService) -> None:
    """A count that grows while the list is open keeps its width: the grid sizes a column only once."""
    task_id = submitted(service, "local", "big")
    run_as_worker(service, task_id, output=b"name,age,error\n" + b"a,1,\n" * 3)
    at = app().run()
    columns = json.loads(at.dataframe[0].proto.columns)
    numbers = {name: c for name, c in columns.items() if c.get("type_config", {}).get("type") == "number"}
    assert "rows" in numbers
    for name, column in numbers.items():
        assert column["width"] >= tables.COUNT_WIDTH, name  # "123,456,789,012" is 94 px + 16 px padding


def test_staff_who_open_the_workers_page_are_refused(app, store_dir: Path) -> None:
    at = workers_page(app("ann"))
    assert "This page is for operators only" in at.error[0].value
    assert not [c for c in at.caption if c.value.startswith("Last beat")]
    assert not at.exception


def menu_for(user: str, operator: bool) -> dict[str, str]:
    """An AppTest script: the app's pages as ``nav.pages()`` builds them for this run's user."""
    from unittest import mock

    import streamlit as st

    from s3task.config import Settings
    from s3task.tasks import Actor
    from ui import context, nav, services
    from ui.appsettings import AppSettings
    from ui.identity import Identity

    settings = Settings.load()
    who = Identity("header", actor=Actor(user, operator=operator))
    service, no_worker = services.service_for(settings), services.WorkerStatus(False)
    ctx = context.Context(settings, AppSettings.load(), who, service, no_worker)
    context.put(ctx)
    # The menu as built for this run (st.Page itself needs the page files next to the script).
    with mock.patch.object(nav.st, "Page", lambda path, **kwargs: kwargs):
        pages = nav.pages()
    st.json({page["url_path"]: page.get("visibility", "visible") for page in pages})


@pytest.mark.parametrize(("user", "operator", "visibility"), [("ann", False, "hidden"), ("boss", True, "visible")])
def test_the_workers_page_is_in_the_menu_of_operators_only(store_dir: Path, user, operator, visibility) -> None:
    at = AppTest.from_function(menu_for, args=(user, operator), default_timeout=20).run()
    assert not at.exception
    assert json.loads(at.json[0].value)["workers"] == visibility


def test_a_report_from_another_version_is_shown_without_what_it_lacks(app, service: TaskService) -> None:
    from s3task.record import to_iso
    from s3task.store.base import PutMode

    odd = {"worker_id": "old-box", "last_seen": to_iso(service.store.now()), "task_ids": "not a list"}
    service.store.put(service.layout.worker_key("old-box"), json.dumps(odd).encode(), PutMode.OVERWRITE)
    at = workers_page(app("boss"))
    assert not at.exception
    said = texts(at)
    assert "**1 worker** · 0 busy, 1 idle" in said and "old-box" in said and "Not running a task." in said
