"""Who an OIDC user is: named only by claims they cannot edit (issue 12, item 2)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from s3task.layout import Layout
from s3task.tasks import Actor
from ui.identity import Identity, resolve, subject_name

ISS = "https://idp.example"
SUB = "248289761001"
BOSS = "boss@x.example"
SUB_NAME = subject_name(ISS, SUB)
OPERATORS = [BOSS, subject_name(ISS, "op-7")]


def oidc(**claims: Any) -> Identity:
    return resolve(
        auth_configured=True,
        user={"is_logged_in": True, **claims},
        trusted_headers={},
        address="0.0.0.0",
        operators=OPERATORS,
    )


@pytest.mark.parametrize(
    ("claims", "name", "operator"),
    [
        pytest.param({"iss": ISS, "sub": SUB}, SUB_NAME, False, id="sub-only"),
        pytest.param(
            {"iss": ISS, "sub": SUB, "email": BOSS, "email_verified": False}, SUB_NAME, False, id="unverified-email"
        ),
        pytest.param({"iss": ISS, "sub": SUB, "email": BOSS}, SUB_NAME, False, id="email-without-email_verified"),
        pytest.param(
            {"iss": ISS, "sub": SUB, "email": BOSS, "email_verified": "false"}, SUB_NAME, False, id="string-false"
        ),
        pytest.param(
            {"iss": ISS, "sub": SUB, "email": BOSS, "email_verified": "yes"}, SUB_NAME, False, id="string-yes"
        ),
        pytest.param({"iss": ISS, "sub": SUB, "email": BOSS, "email_verified": 1}, SUB_NAME, False, id="number-1"),
        pytest.param({"iss": ISS, "sub": SUB, "name": BOSS}, SUB_NAME, False, id="display-name-is-operator"),
        pytest.param(
            {"iss": ISS, "sub": SUB, "preferred_username": BOSS}, SUB_NAME, False, id="preferred_username-is-operator"
        ),
        pytest.param(
            {"iss": ISS, "sub": SUB, "email": BOSS, "email_verified": True}, BOSS, True, id="verified-operator-email"
        ),
        pytest.param(
            {"iss": ISS, "sub": SUB, "email": "ann@x.example", "email_verified": True},
            "ann@x.example",
            False,
            id="verified-email-not-operator",
        ),
        pytest.param(
            {"iss": ISS, "sub": SUB, "email": BOSS, "email_verified": "true"}, BOSS, True, id="string-true-cognito"
        ),
        pytest.param({"email": BOSS, "email_verified": True}, BOSS, True, id="verified-email-no-sub"),
        pytest.param({"iss": ISS, "sub": "op-7"}, subject_name(ISS, "op-7"), True, id="sub-based-operator"),
        pytest.param(
            {"iss": "https://other.example", "sub": "op-7"},
            subject_name("https://other.example", "op-7"),
            False,
            id="same-sub-other-issuer",
        ),
        pytest.param(
            {"iss": ISS, "sub": "op-7", "email": "op7@x.example", "email_verified": False},
            subject_name(ISS, "op-7"),
            True,
            id="sub-based-operator-with-unverified-email",
        ),
    ],
)
def test_oidc_user_is_named_by_verified_claims_only(claims: dict[str, Any], name: str, operator: bool) -> None:
    who = oidc(**claims)
    assert who.mode == "oidc" and who.problem is None and not who.login_needed
    assert who.actor == Actor(name, operator=operator)


@pytest.mark.parametrize(
    "claims",
    [
        pytest.param({}, id="no-claims"),
        pytest.param({"iss": ISS, "email": BOSS}, id="unverified-email-no-sub"),
        pytest.param({"iss": ISS, "email": BOSS, "email_verified": "false"}, id="string-false-no-sub"),
        pytest.param({"iss": ISS, "sub": "  ", "name": BOSS, "preferred_username": BOSS}, id="blank-sub-display-only"),
        pytest.param({"iss": ISS, "sub": 42, "email": "", "email_verified": True}, id="non-string-sub-empty-email"),
    ],
)
def test_oidc_without_verified_email_or_subject_is_refused(claims: dict[str, Any]) -> None:
    who = oidc(**claims)
    assert who.actor is None and who.mode == "oidc"
    assert who.problem and "verified email" in who.problem and "sub" in who.problem
    assert who.label == "not signed in"


def test_oidc_not_signed_in_asks_for_login() -> None:
    who = resolve(auth_configured=True, user={"is_logged_in": False}, trusted_headers={}, address=None, operators=[])
    assert who.login_needed and who.actor is None and who.problem is None


@pytest.mark.parametrize(
    ("claims", "label"),
    [
        pytest.param({"iss": ISS, "sub": SUB, "name": "Ann Lee"}, f"Ann Lee · {SUB_NAME}", id="name"),
        pytest.param(
            {"iss": ISS, "sub": SUB, "preferred_username": "ann", "name": "Ann Lee"},
            f"Ann Lee · {SUB_NAME}",
            id="name-before-preferred_username",
        ),
        pytest.param({"iss": ISS, "sub": SUB, "preferred_username": "ann"}, f"ann · {SUB_NAME}", id="preferred"),
        pytest.param({"iss": ISS, "sub": SUB}, SUB_NAME, id="no-display-name"),
        pytest.param({"iss": ISS, "sub": SUB, "name": BOSS}, f"{BOSS} · {SUB_NAME}", id="display-name-spoof"),
        pytest.param(
            {"iss": ISS, "sub": SUB, "name": "Boss", "email": BOSS, "email_verified": True},
            f"Boss · {BOSS} (operator)",
            id="operator",
        ),
        pytest.param(
            {"iss": ISS, "sub": SUB, "name": BOSS, "email": BOSS, "email_verified": True},
            f"{BOSS} (operator)",
            id="display-equals-name",
        ),
        pytest.param({"iss": ISS, "sub": SUB, "name": "Ann\x1b[2J\nLee"}, f"Ann[2JLee · {SUB_NAME}", id="controls"),
    ],
)
def test_label_shows_display_name_next_to_the_stable_name(claims: dict[str, Any], label: str) -> None:
    assert oidc(**claims).label == label


@pytest.mark.parametrize(
    "subject",
    [
        "248289761001",
        "00u1a2b3c4D5e6F7g8h9",
        "auth0|5f7c8ec7c33c6c004bbafe82",
        "google-oauth2|108512345678901234567",
        "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
        "550e8400-e29b-41d4-a716-446655440000",
        "x" * 255,
        "a/b/../c d@e%2F\u00e9",
    ],
)
def test_subject_name_is_stable_key_safe_and_a_valid_actor(subject: str) -> None:
    name = subject_name(ISS, subject)
    assert name == subject_name(ISS, subject)
    assert name.startswith("oidc-") and len(name) <= 66 and "@" not in name
    assert quote(name, safe="") == name  # its own key component under by-user/
    assert Layout("p").user_root(name) == f"p/by-user/{name}/"
    assert Actor(name).name == name
    assert name != subject_name("https://other.example", subject)


def test_subject_names_differ_where_the_readable_part_is_the_same() -> None:
    assert subject_name(ISS, "auth0|abc") != subject_name(ISS, "auth0_abc")
    assert subject_name(ISS, "x" * 60 + "1") != subject_name(ISS, "x" * 60 + "2")
    assert subject_name(ISS, "248289761001") == "oidc-248289761001-" + subject_name(ISS, "248289761001")[-12:]


def test_header_and_dev_modes_are_unchanged() -> None:
    header = resolve(
        auth_configured=False,
        user={"user": BOSS, "name": "Someone"},
        trusted_headers={"X-Remote-User": "user"},
        address="0.0.0.0",
        operators=OPERATORS,
    )
    assert header.actor == Actor(BOSS, operator=True) and header.display_name is None
    dev = resolve(auth_configured=False, user={}, trusted_headers={}, address="127.0.0.1", operators=[])
    assert dev.actor == Actor("local", operator=True) and dev.label == "local (operator)"
