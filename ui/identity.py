"""Who is using the app: OIDC login, else a trusted proxy header, else one local developer.

1. OIDC (``[auth]`` in ``.streamlit/secrets.toml``): ``st.user`` after ``st.login``.
2. A reverse proxy that authenticates people and passes a header, named in
   Streamlit's ``server.trustedUserHeaders`` (e.g. ``{"X-Forwarded-Email" = "email"}``).
   Only safe when the proxy is the only way in.
3. Neither: a single local user who is an operator (development mode) — allowed
   only while Streamlit listens on loopback. Bound anywhere else, the app refuses
   to serve and says why.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from s3task.errors import AccessDenied
from s3task.tasks import Actor

log = logging.getLogger("s3task.app")

DEV_USER = "local"
_CLAIMS = ("email", "preferred_username", "name", "sub")


@dataclass(frozen=True)
class Identity:
    """The resolved user, or why there is none (``problem``) or that a login is needed."""

    mode: str  # "oidc" | "header" | "dev" | "none"
    actor: Actor | None = None
    problem: str | None = None
    login_needed: bool = False

    @property
    def label(self) -> str:
        if self.actor is None:
            return "not signed in"
        role = " (operator)" if self.actor.operator else ""
        return self.actor.name + role


def is_loopback(address: str | None) -> bool:
    if not address:
        return False  # unset: Streamlit listens on every interface
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve(
    *,
    auth_configured: bool,
    user: Mapping[str, Any],
    trusted_headers: Mapping[str, str],
    address: str | None,
    operators: Iterable[str],
) -> Identity:
    """Decide who the user is from what Streamlit knows; pure, so every branch is testable."""
    operators = set(operators)
    if auth_configured:
        if not user.get("is_logged_in"):
            return Identity("oidc", login_needed=True)
        return _named("oidc", _first(user, _CLAIMS), operators, "your identity provider sent no email or subject")
    if trusted_headers:
        keys = list(dict.fromkeys(trusted_headers.values()))
        headers = ", ".join(trusted_headers)
        return _named(
            "header",
            _first(user, keys),
            operators,
            f"this app trusts the sign-in header {headers} from its reverse proxy, and this request carried none. "
            "Open the app through the company address (the proxy), not directly.",
        )
    if is_loopback(address):
        return Identity("dev", actor=Actor(DEV_USER, operator=True))
    where = address or "every network interface"
    return Identity(
        "none",
        problem=(
            f"No sign-in is configured, and the app listens on {where}, so anyone who can reach it could act "
            "as anyone. Configure OIDC login ([auth] in .streamlit/secrets.toml) or a trusted proxy header "
            "(server.trustedUserHeaders), or listen on 127.0.0.1 only (./run.sh does)."
        ),
    )


def _first(user: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = user.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _named(mode: str, name: str | None, operators: set[str], missing: str) -> Identity:
    if name is None:
        return Identity(mode, problem=missing[0].upper() + missing[1:])
    try:
        return Identity(mode, actor=Actor(name, operator=name in operators))
    except AccessDenied as e:
        return Identity(mode, problem=f"Your user name cannot be used here: {e}")


# --- reading what Streamlit knows ------------------------------------------------


def current(operators: Iterable[str]) -> Identity:
    import streamlit as st

    user = st.user.to_dict()
    identity = resolve(
        auth_configured=_auth_configured(user),
        user=user,
        trusted_headers=_trusted_headers(),
        address=st.get_option("server.address"),
        operators=operators,
    )
    if identity.problem:
        log.error("refusing to serve: %s", identity.problem)
    return identity


def _auth_configured(user: Mapping[str, Any]) -> bool:
    import streamlit as st

    if "is_logged_in" in user:  # Streamlit adds it only when [auth] is configured
        return True
    try:
        return bool(st.secrets.load_if_toml_exists() and st.secrets.get("auth"))
    except Exception:  # a broken secrets file is reported by Streamlit itself
        return False


def _trusted_headers() -> dict[str, str]:
    import streamlit as st

    value = st.get_option("server.trustedUserHeaders")
    return dict(value) if isinstance(value, Mapping) else {}
