"""Helpers for the tests that drive the app in a real Chromium (tests/browser/, and one in test_notify):
the app as a process (``streamlit run app.py``, through tests/procs.py) and Playwright's waits for it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from procs import Procs, child_env

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"


def base_env(**extra: str) -> dict[str, str]:
    """The app's environment: quick polls and refreshes, and the settings in ``extra``."""
    return child_env(**{"S3TASK_POLL_INTERVAL": "0.3", "S3TASK_REFRESH_SECONDS": "0.5", **extra})


@contextmanager
def app_on(port: int, env: dict[str, str], log: Path) -> Iterator[tuple[str, int]]:
    """``streamlit run app.py`` on ``port``, once healthy; yields its URL and pid (the process that
    serves it). Its output goes to ``log`` (shown if a wait fails); stopped with SIGTERM afterwards."""
    with Procs(log.parent, env) as procs:
        app = procs.streamlit("app.py", port=port, name=log.stem)
        with _told(app):
            yield app.url, app.pid


@contextmanager
def streamlit_app(env: dict[str, str], log: Path) -> Iterator[str]:
    """As :func:`app_on`, on a free port; yields its URL."""
    with Procs(log.parent, env) as procs:
        app = procs.streamlit("app.py", name=log.stem)
        with _told(app):
            yield app.url


@contextmanager
def _told(app) -> Iterator[None]:
    """A test that fails while the app runs says what the app printed (a traceback, a warning) beside it."""
    try:
        yield
    except Exception as e:
        e.add_note(app.tail())
        raise


def open_app(page, url: str) -> None:
    page.goto(url)
    settle(page)


def settle(page) -> None:
    """Connected and no script running: the page shows what the server last sent."""
    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']", timeout=20_000)
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=20_000)


def copy_task_previewed(page, url: str, data: Path, columns: str = "3 columns: id, name, value") -> None:
    """New task → "Copy rows unchanged" → pick ``data`` → its preview shown (``columns``), ready to Submit."""

    page.goto(url + "/new_task")
    settle(page)
    page.get_by_role("combobox", name="What should happen to the rows?").click()
    page.get_by_role("option", name="Copy rows unchanged").click()
    settle(page)
    pick_file(page, data, columns)
    settle(page)


def choose(page, box_name: str, option: str, timeout: float = 60.0) -> None:
    """Pick ``option`` in the select box ``box_name`` by typing it, as a person does.

    A rerun of the page (a file's preview arriving, a refresh) may close an open list under the
    typing; a person then opens it again, and so does this, until the option is there to click
    (within ``timeout`` seconds in all).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = page.get_by_role("combobox", name=box_name)
    wanted = page.get_by_role("option", name=option, exact=True)
    deadline = time.monotonic() + timeout
    while True:
        settle(page)
        box.click()
        box.press("ControlOrMeta+a")
        box.press_sequentially(option)  # the list narrows to what matches
        try:
            wanted.click(timeout=5_000)
            return
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise AssertionError(f"the option {option!r} of {box_name!r} never came to be clicked") from None


def pick_file(page, path: Path, shown: str, *, timeout: float = 60.0, first: bool = False) -> None:
    """Choose ``path`` in the page's file picker and wait for ``shown`` (words the page says of it).

    A picker whose page had not wired it yet (its script still loading on a busy machine) takes the file and
    nothing happens: a person then chooses it again, and so does this, until the words come (within
    ``timeout`` seconds in all). Choosing the same file again is what the page expects of a person.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    picker = page.locator("input[type='file']")
    picker = picker.first if first else picker
    deadline = time.monotonic() + timeout
    while True:
        picker.set_input_files(str(path))
        try:
            expect(page.get_by_text(shown, exact=False).first).to_be_visible(timeout=20_000)
            return
        except (AssertionError, PlaywrightTimeout):
            if time.monotonic() > deadline:
                raise
            settle(page)


def choose_file_with_keys(page, button, path: Path, key: str = "Space", timeout: float = 60.0) -> None:
    """Focus ``button`` (an uploader's "Upload"), press ``key`` and pick ``path`` in the chooser that opens.

    A rerun of the page that lands after the focus (a text box just left, a refresh) draws the button
    again and the key reaches nothing; a person then presses it again, and so does this, until the
    chooser opens (within ``timeout`` seconds in all).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    deadline = time.monotonic() + timeout
    while True:
        settle(page)
        button.focus()
        expect(button).to_be_focused()
        try:
            with page.expect_file_chooser(timeout=5_000) as chooser:
                page.keyboard.press(key)
            chooser.value.set_files(str(path))
            return
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise AssertionError(f"pressing {key} on the focused button never opened a file chooser") from None


@contextmanager
def moto_without_global_cors() -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 answering CORS from each bucket's own rules (which can expose ETag, as
    a browser's upload in parts needs), not with its global allow-everything; yields its URL.

    ``MOTO_DISABLE_GLOBAL_CORS`` is read when moto is imported (conftest already did), so the module's
    copy is switched too — only while this server makes its S3 app (on its first request), so moto
    servers of other tests keep theirs.
    """
    import pytest
    import requests
    from conftest import boto_client, free_port, wait_for
    from moto.moto_server import werkzeug_app
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    url = f"http://127.0.0.1:{port}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MOTO_DISABLE_GLOBAL_CORS", "true")
        patch.setattr(werkzeug_app, "DISABLE_GLOBAL_CORS", True)
        server.start()

        def up() -> bool:
            try:
                return requests.get(url + "/moto-api/", timeout=1).status_code < 500
            except requests.RequestException:
                return False

        wait_for(up, timeout=20, what="moto server")
        boto_client(url).list_buckets()  # makes this server's S3 app now, without global CORS
    yield url
    server.stop()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def grid_cells(page, nth: int = -1) -> list[str]:
    """The text of a dataframe's cells (Streamlit's grid keeps an accessible table of them)."""
    frames = page.locator("[data-testid='stDataFrame']")
    return frames.nth(nth if nth >= 0 else frames.count() - 1).locator("td").all_inner_texts()


class StayedClosed(AssertionError):
    """A folded section that clicks on its title did not open."""


def open_section(page, title: str, inside, *, timeout: float = 90.0, clicks: int = 2):
    """Open the folded section ``title`` (an ``st.expander``) and wait for ``inside(section)``, a locator in it,
    to be visible; returns that locator.

    A click on the title that lands while the page is being drawn again (a rerun on a busy machine) can leave
    the section closed: a person sees it closed and clicks again, and so does this, at most ``clicks`` times in
    all (a click that never opens it fails, saying so; one more than the first is printed). A section that
    stays open without what it should show fails at ``timeout`` seconds, saying it was open.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    section = page.locator("[data-testid='stExpander']").filter(has=page.get_by_text(title, exact=True))
    details, shown = section.locator("details"), inside(section)
    deadline, clicked = time.monotonic() + timeout, 0
    while True:
        try:
            settle(page)
            if details.get_attribute("open", timeout=20_000) is None:
                if clicked == clicks:
                    raise StayedClosed(f"{title!r} stayed closed after {clicked} clicks on its title")
                section.get_by_text(title, exact=True).click()
                clicked += 1
                if clicked > 1:
                    print(f"open_section: {title!r} was still closed after a click; clicked again")
            expect(shown).to_be_visible(timeout=15_000)
            return shown
        except StayedClosed:
            raise
        except (AssertionError, PlaywrightTimeout):
            if time.monotonic() > deadline:
                state = "open" if details.get_attribute("open") is not None else "closed"
                raise AssertionError(f"{title!r} is {state}; what it should show did not come") from None
