"""The task type a New task form submits is the one its box showed (issue 22, item 0).

Found by a person in Chromium: on a fresh New task page, choose a file at once, without touching
the type box; on about half of the pages the box then read "Clean up the table" while the line
under it still described "Copy rows unchanged" (the default), and Tab through to Submit sent a
Clean task. So these tests do it that way, on fresh pages in a loop: the file first, as soon as
the picker is there, a name typed, Tab to Submit, Enter, and then the ``task_type`` in the task's
``status.json``. One app server per upload mode serves every page.

It happened when the browser chose the file before the rest of the form had reached it. That
depends on how fast the page arrives, so every other page here has a slow link (:class:`SlowLink`):
what the app sends from the type box on reaches the page only once the app has answered the file
(its preview), as on a slow network.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from browsers import app_on, base_env, choose, settle, shot
from conftest import CHROMIUM, free_port
from support import csv_bytes

from s3task import handlers
from ui.task_form import summary

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; install Debian's Chromium"),
]

BOX = "What should happen to the rows?"
DESKTOP = {"width": 1366, "height": 900}
PREVIEWED = b"2 columns: name, email"  # the line above the preview of the file below
#: The caption right under the type box (the next element after the box's own).
CAPTION_UNDER_BOX = (
    f"xpath=//div[@data-testid='stElementContainer'][.//input[@aria-label='{BOX}']]"
    "/following-sibling::div[@data-testid='stElementContainer'][1]"
)


class Apps:
    """One store and two app servers on it: the direct upload (the default) and Streamlit's uploader."""

    def __init__(self, root: Path, direct: str, fallback: str) -> None:
        self.root, self.direct, self.fallback = root, direct, fallback

    def stored_type(self, task_id: str) -> str:
        (path,) = self.root.glob(f"**/{task_id}/status.json")
        return str(json.loads(path.read_text())["task_type"])


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apps]:
    tmp = tmp_path_factory.mktemp("new-task-type")
    store = tmp / "store"
    with ExitStack() as stack:
        urls = []
        for mode in ("1", "0"):
            env = base_env(S3TASK_STORE=str(store), S3TASK_EMBEDDED_WORKER="0", S3TASK_DIRECT_UPLOAD=mode)
            url, _pid = stack.enter_context(app_on(free_port(), env, tmp / f"streamlit-direct-{mode}.log"))
            urls.append(url)
        yield Apps(store, *urls)


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("files") / "people.csv"
    path.write_bytes(csv_bytes([["name", "email"], ["ann", "ann@example.com"], ["bob", "bob@example.com"]]))
    return path


def shown(page) -> tuple[str, str]:
    """What the type box reads, and the line under it."""
    return page.get_by_role("combobox", name=BOX).input_value(), page.locator(CAPTION_UNDER_BOX).inner_text()


def disagree(title: str, caption: str) -> str:
    """Why the box and the line under it disagree ("" when the line describes the type the box reads)."""
    by_title = {t.title: t for t in handlers.all_types()}
    if title not in by_title:
        return f"the box reads {title!r}, which is no task type"
    if not by_title[title].description.startswith(caption.strip().rstrip(".")):
        return f"the box reads {title!r} but the line under it says {caption!r}"
    return ""


class SlowLink:
    """The app's messages to the page, from the first that carries the type box, wait until released (in order)."""

    def __init__(self, page) -> None:
        self.page, self.held, self.holding, self.browser_side = page, [], False, None
        self.released = False  # a link is slow once: for the first run's form
        page.route_web_socket(re.compile(r".*/_stcore/stream$"), self.connect)

    def connect(self, browser_side) -> None:
        self.browser_side = browser_side
        server = browser_side.connect_to_server()
        server.on_message(self.from_server)
        browser_side.on_message(server.send)

    def from_server(self, message: str | bytes) -> None:
        if not self.released and isinstance(message, bytes) and BOX.encode() in message:
            self.holding = True
        if self.holding or self.held:
            self.held.append(message)
        else:
            self.browser_side.send(message)

    def wait(self, condition, what: str) -> None:
        deadline = time.monotonic() + 20
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting until {what}"
            self.page.wait_for_timeout(20)  # lets Playwright deliver the messages it has

    def release(self) -> None:
        self.holding, self.released = False, True
        while self.held:  # in order: what arrives meanwhile queues behind
            self.browser_side.send(self.held.pop(0))


def fresh_page_with_a_file(browser, url: str, data: Path, slow: bool = False, viewport=DESKTOP):
    """A new browser page (a new session) on New task; the file chosen as soon as the picker is there."""
    page = browser.new_page(viewport=viewport)
    link = SlowLink(page) if slow else None
    page.goto(url + "/new_task")
    picker = page.locator("input[type='file']")
    picker.wait_for(state="attached", timeout=20_000)
    if link:
        link.wait(lambda: link.holding, "the type box came from the app")
    picker.set_input_files(str(data))
    if link:
        answered = lambda: any(isinstance(m, bytes) and PREVIEWED in m for m in link.held)  # noqa: E731
        link.wait(answered, "the app answered the file (its preview is on the way)")
        link.release()
    page.get_by_text(PREVIEWED.decode()).wait_for(timeout=20_000)
    settle(page)
    return page


def submit_with_the_keyboard(page, name: str) -> tuple[str, str]:
    """Type the name, Tab to Submit and press Enter; what the box and the line under it showed then."""
    field = page.get_by_role("textbox", name="Task name")
    field.click()
    field.press("ControlOrMeta+a")
    field.press_sequentially(name)
    submit = page.get_by_role("button", name="Submit")
    for _ in range(15):
        page.keyboard.press("Tab")
        settle(page)
        if submit.evaluate("button => button === document.activeElement"):
            break
    else:
        raise AssertionError("Tab never reached the Submit button")
    at_submit = shown(page)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=20_000)
    return at_submit


def shot_of_the_box(page, name: str) -> None:
    """A screenshot with the type box and the line under it in view (the preview's grid drawn above)."""
    page.locator("[data-testid='stDataFrame'] td").first.wait_for(state="attached", timeout=20_000)
    page.locator(CAPTION_UNDER_BOX).scroll_into_view_if_needed()
    shot(page, name)


def type_named(title: str) -> str:
    return next(t.name for t in handlers.all_types() if t.title == title)


# Streamlit's uploader (the fallback) waits for the app's answer before it sends the file, so its
# pages cannot have the slow link: the form is all there before the file goes.
@pytest.mark.parametrize(("mode", "pages"), [("direct", 8), ("fallback", 3)])
def test_a_fresh_form_submits_the_default_type_it_shows(browser, apps: Apps, people: Path, mode: str, pages: int):
    url = apps.direct if mode == "direct" else apps.fallback
    wrong: dict[int, list[str]] = {}
    for n in range(pages):
        page = fresh_page_with_a_file(browser, url, people, slow=mode == "direct" and n % 2 == 0)
        try:
            if n == 0:
                shot_of_the_box(page, f"new-task-type-{mode}-desktop")
            title, caption = shown(page)
            if title != "Copy rows unchanged" or disagree(title, caption):
                said = disagree(title, caption) or f"the box reads {title!r}"
                wrong.setdefault(n, []).append(f"page {n}, file chosen: {said}")
            submitted, caption = submit_with_the_keyboard(page, f"Default {mode} {n}")
            stored = apps.stored_type(page.url.rsplit("=", 1)[1])
            if (submitted, stored) != ("Copy rows unchanged", "copy") or disagree(submitted, caption):
                said = f"Submit pressed showing {submitted!r} ({caption!r}): stored {stored!r}"
                wrong.setdefault(n, []).append(f"page {n}, {said}")
        finally:
            page.close()
    said = "\n".join(line for lines in wrong.values() for line in lines)
    assert not wrong, f"{len(wrong)} wrong of {pages} fresh pages:\n{said}"


def test_a_type_the_user_picks_is_the_type_stored(browser, apps: Apps, people: Path) -> None:
    from playwright.sync_api import expect

    wrong: list[str] = []
    for n, title in enumerate(["Clean up the table", "Profile the columns"]):
        page = fresh_page_with_a_file(browser, apps.direct, people, slow=n % 2 == 0)
        try:
            choose(page, BOX, title)
            description = next(t.description for t in handlers.all_types() if t.title == title)
            expect(page.locator(CAPTION_UNDER_BOX)).to_have_text(summary(description))  # the page's answer
            settle(page)
            assert shown(page)[0] == title and not disagree(*shown(page))
            submitted, caption = submit_with_the_keyboard(page, f"Picked {n}")
            stored = apps.stored_type(page.url.rsplit("=", 1)[1])
            if (submitted, stored) != (title, type_named(title)) or disagree(submitted, caption):
                wrong.append(f"page {n}: picked {title!r}, Submit pressed showing {submitted!r}, stored {stored!r}")
        finally:
            page.close()
    assert wrong == [], "\n".join(wrong)


def test_on_a_phone_the_box_and_the_line_under_it_agree_too(browser, apps: Apps, people: Path) -> None:
    page = fresh_page_with_a_file(browser, apps.direct, people, slow=True, viewport={"width": 390, "height": 844})
    try:
        shot_of_the_box(page, "new-task-type-direct-phone")
        title, caption = shown(page)
        assert (title, disagree(title, caption)) == ("Copy rows unchanged", "")
    finally:
        page.close()
