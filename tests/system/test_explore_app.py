"""The whole result on a completed task's page, through the app's own page (AppTest): search every row, sort, page.

The output is the issue's 20,000-row customer list as the worker's engine writes it; the task is
completed the way a worker completes one (tests/app_pages.py).
"""

from __future__ import annotations

import base64
import json

from app_pages import app, goto, options, run_as_worker, service, store_dir, texts  # noqa: F401  (fixtures)
from conftest import wait_for
from customers import customers

from s3task.tasks import Actor
from s3task.testing import run_task_type

ANN = Actor("ann")
#: A bound on making a copy of 20,000 rows (under a second here): CI's two cores are shared with other work,
#: where a 30 s wait once ran out. A deadline, not a sleep: a file made sooner ends the wait sooner.
MAKING = 180.0


def customer_page(app, service):  # noqa: F811  (the fixtures)
    data = customers(20_000)
    task_id = service.submit_file(ANN, "Customers", "copy", None, data).task_id
    run_as_worker(service, task_id, output=run_task_type("copy", data).output)
    at = app("ann")
    if not at._registered_pages:
        at.run()
    at.query_params["id"] = task_id
    return goto(at, "pages/task.py"), task_id


def grid(at) -> list[str]:
    return at.dataframe[0].value["customer_id"].tolist()


def test_a_search_finds_the_customer_deep_in_the_file_and_counts_the_matches(app, service) -> None:  # noqa: F811
    at, task_id = customer_page(app, service)
    assert not at.exception
    assert grid(at)[:2] == ["C00001", "C00002"]  # the preview until something is asked
    assert "act on every row of the result (20,000 rows), not only on the rows shown" in texts(at)
    at.text_input(key=f"explore_search_{task_id}").set_value("c15000@").run()
    assert not at.exception
    assert grid(at) == ["C15000"]
    assert "1 matching row of 20,000" in texts(at)


def test_sorting_descending_acts_on_every_row_and_pages_go_on(app, service) -> None:  # noqa: F811
    at, task_id = customer_page(app, service)
    at.selectbox(key=f"explore_sort_{task_id}").set_value("customer_id").run()
    at.selectbox(key=f"explore_order_{task_id}").set_value("Descending").run()
    assert grid(at)[:3] == ["C20000", "C19999", "C19998"]
    assert "20,000 matching rows of 20,000" in texts(at)
    assert "Sorted by customer_id, as text (ignoring case), descending" in texts(at)
    assert "Rows 1–50 of 20,000" in texts(at)
    next(b for b in at.button if b.label == "Next").click().run()
    assert grid(at)[0] == "C19950"
    assert "Rows 51–100 of 20,000" in texts(at)
    for _ in range(9):  # past the pages read together with the first (ui/explore_view.PAGES_AT_ONCE)
        next(b for b in at.button if b.label == "Next").click().run()
    assert grid(at)[0] == "C19500" and len(grid(at)) == 50
    assert "Rows 501–550 of 20,000" in texts(at)
    next(b for b in at.button if b.label == "Previous").click().run()
    assert grid(at)[-1] == "C19501"


def handed(at) -> str | None:
    """The link the page handed to the browser in its last run, if it did (it hands a link once)."""
    saves = [json.loads(c.proto.json) for c in at.get("bidi_component")]
    return next((save["url"] for save in saves if "url" in save), None)


def link_when_made(at, made, what: str) -> str:
    """The link the page hands the browser once the file is made on a background thread of the app.

    A file made before the click's own run reached the downloads is handed in that run, and not again (1 click
    run in 12 beside two CPU hogs did; a clean-clone run failed waiting for it in later runs). Else the file is
    waited for in the store (cheap to look at, unlike a run of the page, which on a busy machine takes the CPU
    the job needs), then the page looks again, as its fragment does every second while the file is being made."""
    if (url := handed(at)) is not None:
        return url
    wait_for(made, timeout=MAKING, interval=0.2, what=f"{what} made in the store")

    def link() -> str | None:
        at.run()
        return handed(at)

    return str(wait_for(link, what=f"{what}'s link handed to the browser"))


def test_download_this_view_gives_the_browser_a_link_to_every_matching_row(app, service) -> None:  # noqa: F811
    at, task_id = customer_page(app, service)
    at.text_input(key=f"explore_search_{task_id}").set_value("invoice").run()
    assert f"{20_000 // 7:,} matching rows of 20,000" in texts(at)
    next(b for b in at.button if b.label == "Download this view (CSV)").click().run()
    made = lambda: [k for k in service.store.list_keys(service.layout.task_prefix(task_id)) if ".view-" in k]  # noqa: E731
    url = link_when_made(at, made, "the view's file")
    assert url.startswith("/transfer/")
    token = url.removeprefix("/transfer/").split(".")[0]
    signed = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert ".view-" in signed["k"] and signed["f"].endswith("-view.csv")  # the view's file, not the whole result


def test_a_column_filter_counts_only_that_columns_matches(app, service) -> None:  # noqa: F811
    at, task_id = customer_page(app, service)
    at.selectbox(key=f"explore_fcol_{task_id}").set_value("name").run()
    at.text_input(key=f"explore_fval_{task_id}").set_value("name 1500").run()
    assert "11 matching rows of 20,000" in texts(at)  # Name 1500 and Name 15000 … Name 15009
    assert grid(at) == ["C01500", *[f"C{15000 + i}" for i in range(10)]]


def test_the_parquet_copy_is_offered_for_pandas_and_scripts(app, service) -> None:  # noqa: F811
    at, task_id = customer_page(app, service)
    assert "`?variant=parquet`, `s3task download ID --parquet`" in at.expander[0].markdown[0].value
    next(b for b in at.button if b.label == "Parquet file (typed columns)").click().run()
    made = lambda: [k for k in service.store.list_keys(service.layout.task_prefix(task_id)) if k.endswith(".parquet")]  # noqa: E731
    url = link_when_made(at, made, "the Parquet copy")
    token = url.removeprefix("/transfer/").split(".")[0]
    signed = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert signed["k"].endswith("output-attempt-1.parquet") and signed["f"].endswith(".parquet")
