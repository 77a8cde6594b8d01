"""Development mode lets in only people at this computer: a request that came through a same-host
proxy or a tunnel (forwarding headers, a Host that is not this computer) is refused (issue 26, item 1).

AppTest cannot seed request headers (Streamlit takes them from the session's client), so the page
test hands the app its headers where it reads them (``ui.identity.headers_of``); the real server
with real headers is tests/browser/test_dev_mode_tunnel.py.
"""

from __future__ import annotations

import logging

import app_pages
import pytest
from app_pages import texts

from ui import identity
from ui.identity import resolve

app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir

FORWARDED = [
    ({"x-forwarded-for": ["203.0.113.7"]}, "X-Forwarded-For"),
    ({"x-forwarded-host": ["tasks.example.com"]}, "X-Forwarded-Host"),
    ({"forwarded": ["for=203.0.113.7;proto=https"]}, "Forwarded"),
    ({"x-real-ip": ["203.0.113.7"]}, "X-Real-IP"),
    ({"host": ["abc123.ngrok-free.app"]}, "abc123.ngrok-free.app"),
    ({"host": ["192.168.1.20:8501"]}, "192.168.1.20:8501"),
]
DIRECT = [{}, {"host": ["127.0.0.1:8501"]}, {"host": ["localhost:8501"]}, {"host": ["[::1]:8501"]}]


def dev(headers: dict[str, list[str]]) -> identity.Identity:
    return resolve(
        auth_configured=False, user={}, trusted_headers={}, address="127.0.0.1", operators=[], headers=headers
    )


@pytest.mark.parametrize(("headers", "named"), FORWARDED)
def test_a_forwarded_request_is_refused_saying_what_to_configure(headers, named) -> None:
    who = dev(headers)
    assert who.actor is None and who.misconfigured
    assert named in who.problem
    assert "[auth]" in who.problem and "server.trustedUserHeaders" in who.problem


@pytest.mark.parametrize("headers", DIRECT)
def test_a_request_straight_from_this_computer_is_the_developer(headers) -> None:
    who = dev(headers)
    assert who.mode == "dev" and who.actor is not None and who.actor.operator and who.problem is None


def test_the_page_refuses_and_logs_once(app, monkeypatch, caplog) -> None:
    monkeypatch.setattr(identity, "headers_of", lambda _: {"x-forwarded-for": ["203.0.113.7"]})
    monkeypatch.setattr(identity, "_logged", set())
    with caplog.at_level(logging.ERROR, logger="s3task.app"):
        for _ in range(3):
            at = app().run()
            assert not at.exception
            assert at.title[0].value == "s3task is not configured correctly"
            assert "X-Forwarded-For" in texts(at) and "local (operator)" not in texts(at.sidebar)
            assert not at.button and not at.file_uploader  # no page at all, the Workers page included
    assert len([r for r in caplog.records if "X-Forwarded-For" in r.getMessage()]) == 1
