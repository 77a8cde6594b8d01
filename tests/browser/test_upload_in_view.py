"""Where the person is looking while a file uploads (issue 24 items 1 and 3): after Submit the progress
bar is in view, wherever Submit was; leaving the page mid-upload (closing the tab, reloading, going
elsewhere: the browser's beforeunload) asks first, and when the person stays, the upload goes on to
the end. In Chromium, with the upload throttled so that it
takes a while, on a laptop-sized window (Submit is below the fold) and a phone-sized one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browsers import base_env, pick_file, settle, shot, streamlit_app
from conftest import CHROMIUM, wait_for

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; see tests/browser/test_browser.py"),
]

MB = 1 << 20
SIZE = 6 * MB
#: Bytes a second the browser may send: the upload takes SIZE / RATE seconds (6 s), time to look at it.
RATE = 1 * MB

_BAR = """el => {
  const bar = el.getRootNode().querySelector("progress");
  const box = bar.getBoundingClientRect();
  return {value: bar.value, top: box.top, bottom: box.bottom, height: innerHeight,
          shown: !bar.closest(".bar").hidden && box.height > 0};
}"""


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("files") / "customers.csv"
    line = b"%07d,customer %07d,some notes about this customer\n"
    with path.open("wb") as f:
        f.write(b"id,name,notes\n")
        n = 0
        while f.tell() < SIZE:
            f.write(line % (n, n))
            n += 1
    return path


@pytest.mark.parametrize("viewport", [{"width": 1366, "height": 600}, {"width": 390, "height": 700}],
                         ids=["laptop", "phone"])  # fmt: skip
def test_the_upload_is_in_view_and_leaving_asks_first(browser, tmp_path: Path, big: Path, viewport: dict) -> None:

    store = tmp_path / "store"
    env = base_env(S3TASK_STORE=str(store), S3TASK_EMBEDDED_WORKER="0")
    page = browser.new_page(viewport=viewport)
    asked: list[str] = []

    def on_dialog(dialog) -> None:
        asked.append(dialog.type)
        dialog.dismiss()  # "Stay on page"

    page.on("dialog", on_dialog)
    try:
        with streamlit_app(env, tmp_path / "app.log") as url:
            page.goto(f"{url}/new_task")
            settle(page)
            pick_file(page, big, "3 columns: id, name, notes")
            settle(page)
            cdp = page.context.new_cdp_session(page)
            cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1,
                                                          "uploadThroughput": RATE})  # fmt: skip
            submit = page.get_by_role("button", name="Submit")
            submit.scroll_into_view_if_needed()  # where a person presses it: the bottom of the form
            submit.click()
            bar = page.locator("progress")
            state = wait_for(lambda: (b := bar.evaluate(_BAR))["shown"] and b["value"] > 0 and b, 30, what="uploading")
            assert state["top"] >= 0 and state["bottom"] <= state["height"], f"the progress bar is out of view: {state}"
            shot(page, f"upload-in-view-{viewport['width']}")
            page.evaluate("() => setTimeout(() => location.reload(), 0)")  # the person reloads mid-upload
            # Playwright hands over the dialog event while it is called: the condition lets it run a moment.
            wait_for(lambda: page.wait_for_timeout(50) or asked, 10, what="the browser to ask before leaving")
            assert asked == ["beforeunload"]
            cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1,
                                                          "uploadThroughput": -1})  # fmt: skip
            page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=60_000)  # stayed: it finished
            task_id = page.url.rsplit("=", 1)[1]
            (path,) = store.glob(f"**/{task_id}/status.json")
            record = json.loads(path.read_text())
            assert (record["status"], record["input_size_bytes"]) == ("queued", big.stat().st_size)
    finally:
        page.close()
