"""Development mode behind a forwarder, for real: ``streamlit run app.py`` on 127.0.0.1 with no sign-in
configured, opened by Chromium as a tunnel or a same-host proxy would deliver the request — with
forwarding headers, or under a host name that is not this computer (issue 26, item 1).

The refusal happens on Streamlit's websocket, whose handshake carries the browser's headers, so a
plain HTTP client would only see the static page; Chromium sends ``extra_http_headers`` on that
handshake too, and ``--host-resolver-rules`` lets it open the app as ``tunnel.example``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browsers import base_env, open_app, shot
from conftest import CHROMIUM, CHROMIUM_ARGS
from procs import Procs

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found"),
]

REFUSED = "s3task is not configured correctly"


@pytest.fixture(scope="module")
def dev_app(tmp_path_factory) -> object:
    tmp = tmp_path_factory.mktemp("devapp")
    with Procs(tmp, base_env(S3TASK_STORE=str(tmp / "store"), S3TASK_EMBEDDED_WORKER="0")) as procs:
        yield procs.streamlit("app.py", name="app")


@pytest.fixture(scope="module")
def chromium() -> object:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP tunnel.example 127.0.0.1"]
        )
        yield browser
        browser.close()


def visit(chromium, url: str, headers: dict[str, str] | None = None) -> tuple[str, str]:
    context = chromium.new_context(extra_http_headers=headers or {})
    try:
        page = context.new_page()
        open_app(page, url)
        page.wait_for_selector("h1", timeout=20_000)
        title = page.locator("h1").first.inner_text()
        body = page.locator("[data-testid='stApp']").inner_text()
        if title == REFUSED:
            shot(page, "dev-mode-forwarded")
        return title, body
    finally:
        context.close()


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Forwarded-For": "203.0.113.7"},
        {"X-Forwarded-Host": "tasks.example.com"},
        {"Forwarded": "for=203.0.113.7"},
        {"X-Real-IP": "203.0.113.7"},
    ],
    ids=lambda h: next(iter(h)),
)
def test_a_request_through_a_proxy_is_refused_in_plain_words(dev_app, chromium, headers) -> None:
    title, body = visit(chromium, dev_app.url, headers)
    assert title == REFUSED
    assert next(iter(headers)) in body and "[auth]" in body and "trustedUserHeaders" in body
    assert "local (operator)" not in body and "Workers" not in body


def test_a_tunnel_s_host_name_is_refused_and_logged_once(dev_app, chromium) -> None:
    port = dev_app.url.rsplit(":", 1)[1]
    for _ in range(2):
        title, body = visit(chromium, f"http://tunnel.example:{port}")
        assert title == REFUSED and "tunnel.example" in body
    assert dev_app.output().count("refusing to serve (logged once") == 1


def test_the_developer_at_this_computer_is_let_in(dev_app, chromium) -> None:
    title, body = visit(chromium, dev_app.url)
    assert title != REFUSED and "local (operator)" in body
