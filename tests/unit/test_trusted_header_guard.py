"""Trusted-header sign-in, guarded (issue 26, item 6): a warning to operators (and at start, see
tests/system/test_trusted_header_exposed.py) when the app believes a sign-in header and listens where
more than the proxy may reach it; a request carrying that header twice is refused, since Streamlit takes
the first, the client's own, when a proxy appends instead of replacing."""

from __future__ import annotations

import logging

import app_pages
import pytest
from app_pages import HEADER, texts

from ui import identity
from ui.identity import exposed_warning, resolve

app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir


@pytest.mark.parametrize(
    "address", [None, "", "0.0.0.0", "::", "[::]", "93.184.216.34", "2606:4700::1111", "tasks.example.com"]
)
def test_trusted_headers_on_an_address_beyond_the_proxy_are_warned_about(address) -> None:
    warning = exposed_warning(HEADER, address)
    assert warning is not None and "X-Remote-User" in warning and "127.0.0.1" in warning


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "::1", "localhost", "10.0.0.5", "172.20.1.2", "192.168.1.2", "fd00::7"]
)
def test_loopback_and_private_addresses_are_not(address) -> None:
    assert exposed_warning(HEADER, address) is None


def test_no_trusted_headers_no_warning() -> None:
    assert exposed_warning({}, "0.0.0.0") is None


def header_user(headers: dict[str, list[str]]) -> identity.Identity:
    return resolve(
        auth_configured=False,
        user={"user": "ann"},
        trusted_headers=HEADER,
        address="10.0.0.5",
        operators=[],
        headers=headers,
    )


def test_the_sign_in_header_twice_is_refused() -> None:
    who = header_user({"x-remote-user": ["mallory", "ann"]})
    assert who.actor is None and who.misconfigured
    assert "X-Remote-User more than once" in who.problem and "replace" in who.problem


@pytest.mark.parametrize("headers", [{"x-remote-user": ["ann"]}, {}])
def test_the_sign_in_header_once_names_the_user(headers) -> None:
    who = header_user(headers)
    assert who.actor is not None and who.actor.name == "ann" and who.problem is None


def test_operators_see_the_warning_on_every_page_others_do_not(app, options) -> None:
    options(address="0.0.0.0")
    for user, warned in (("boss", True), ("ann", False)):
        at = app(user)
        at.run()
        assert not at.exception
        said = [w.value.replace("\\", "").replace("\u2060", "") for w in at.warning]  # Markdown escapes off
        assert any("X-Remote-User" in w and "listens on 0.0.0.0" in w for w in said) == warned, (user, said)


def test_no_warning_on_a_private_address(app, options) -> None:
    options(address="10.0.0.5")
    at = app("boss").run()
    assert "listens on" not in texts(at)


def test_the_page_refuses_a_repeated_sign_in_header_and_logs_once(app, monkeypatch, caplog) -> None:
    monkeypatch.setattr(identity, "headers_of", lambda _: {"x-remote-user": ["mallory", "boss"]})
    monkeypatch.setattr(identity, "_logged", set())
    with caplog.at_level(logging.ERROR, logger="s3task.app"):
        for _ in range(2):
            at = app("boss").run()
            assert at.title[0].value == "s3task is not configured correctly"
            assert "more than once" in texts(at) and not at.button
    assert len([r for r in caplog.records if "more than once" in r.getMessage()]) == 1
