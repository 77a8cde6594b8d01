"""Who is using the app: OIDC login, else a trusted proxy header, else one local developer.

1. OIDC (``[auth]`` in ``.streamlit/secrets.toml``): the claims of the ID token in
   ``st.user`` after ``st.login``. Only claims the user cannot edit name them:

   - the ``email`` claim, when ``email_verified`` is true (see :func:`_email_verified`);
   - else the issuer and subject (``iss`` + ``sub``), as a key-safe name of the shape
     ``oidc-<subject>-<hash>`` (see :func:`subject_name`);
   - neither: refused, with a message saying so.

   ``name`` / ``preferred_username`` are only shown next to that name in the sidebar
   (:attr:`Identity.label`); they never name the user and never make anyone an operator,
   since most identity providers let people edit them. An operator is listed in
   ``S3TASK_OPERATORS`` by that name: the verified email, or the ``oidc-…`` name the
   sidebar shows.
2. A reverse proxy that authenticates people and passes a header, named in
   Streamlit's ``server.trustedUserHeaders`` (e.g. ``{"X-Forwarded-Email" = "email"}``).
   Only safe when the proxy is the only way in.
3. Neither: a single local user who is an operator (development mode) — allowed
   only while Streamlit listens on loopback and the request came straight from this
   computer. Bound anywhere else, or reached through something that forwards (a
   same-host reverse proxy, a tunnel: ``ui/forwarding.py``), the app refuses to serve,
   says what to configure, and logs it once.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from s3task.errors import AccessDenied
from s3task.tasks import Actor

from .forwarding import Headers, forwarded_by, headers_of

log = logging.getLogger("s3task.app")

DEV_USER = "local"
#: Claims shown next to the user's name, never used to name them (users can edit them).
_DISPLAY_CLAIMS = ("name", "preferred_username")
_DISPLAY_MAX = 100
#: Characters a subject keeps in the readable part of its name: URL-unreserved, so the
#: name is its own ``by-user/<user>/`` key component (``quote(name, safe="")`` leaves it as is).
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_SUBJECT_MAX = 48
_HASH_HEX = 12
_NO_SUBJECT = (
    "Your identity provider sent neither a verified email address (an email claim with "
    "email_verified true) nor a subject (sub claim), so this app cannot tell who you are. "
    "Ask whoever runs the sign-in to include the openid scope (and email, for your address)."
)


#: How the user was identified (OIDC login, a trusted proxy header, development mode) or not at all.
Mode = Literal["oidc", "header", "dev", "none"]


@dataclass(frozen=True)
class Identity:
    """The resolved user, or why there is none (``problem``) or that a login is needed."""

    mode: Mode
    actor: Actor | None = None
    problem: str | None = None
    login_needed: bool = False
    #: The name the identity provider shows for the user (``name`` / ``preferred_username``):
    #: for display only, never an identity or an operator match.
    display_name: str | None = None
    #: What is set up wrongly, when the refusal is the operator's to fix, not the visitor's
    #: (``forwarded``, ``repeated-header``): logged once per kind.
    misconfigured: str = ""

    @property
    def label(self) -> str:
        """What the sidebar shows: the display name, if any, then the user name operators are listed by."""
        if self.actor is None:
            return "not signed in"
        role = " (operator)" if self.actor.operator else ""
        shown = f"{self.display_name} · " if self.display_name and self.display_name != self.actor.name else ""
        return shown + self.actor.name + role


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
    headers: Headers | None = None,
) -> Identity:
    """Decide who the user is from what Streamlit knows; pure, so every branch is testable.

    ``headers``: the request's, names in lower case, every value kept (:func:`forwarding.headers_of`)."""
    operators = set(operators)
    if auth_configured:
        if not user.get("is_logged_in"):
            return Identity("oidc", login_needed=True)
        return _oidc(user, operators)
    if trusted_headers:
        repeated = [name for name in trusted_headers if len((headers or {}).get(name.lower(), ())) > 1]
        if repeated:
            return Identity("header", problem=_repeated_problem(repeated[0]), misconfigured="repeated-header")
        keys = list(dict.fromkeys(trusted_headers.values()))
        named = ", ".join(trusted_headers)
        return _named(
            "header",
            _first(user, keys),
            operators,
            f"this app trusts the sign-in header {named} from its reverse proxy, and this request carried none. "
            "Open the app through the company address (the proxy), not directly.",
        )
    if is_loopback(address):
        forwarded = forwarded_by(headers or {})
        if forwarded:
            return Identity("none", problem=_forwarded_problem(forwarded), misconfigured="forwarded")
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


def _repeated_problem(header: str) -> str:
    # Streamlit takes the first of repeated headers, which is the one the client sent when a proxy
    # appends its own instead of replacing it: the client would choose who they are.
    return (
        f"This request carried the sign-in header {header} more than once, so it cannot tell who you are: the "
        "reverse proxy in front of this app must replace that header (nginx: proxy_set_header), not add a "
        "second one next to the one the browser sent. See docs/APP.md for a sample configuration."
    )


def exposed_warning(trusted_headers: Mapping[str, str], address: str | None) -> str | None:
    """What to tell operators when the app believes a sign-in header and listens where more than the
    proxy may reach it (every interface, a public address, a host name), or None."""
    if not trusted_headers or is_private(address):
        return None
    where = address or "every network interface"
    return (
        f"This app believes the sign-in header {', '.join(trusted_headers)} and listens on {where}: anyone who "
        "reaches it there, not through your reverse proxy, can send that header and be whoever it names. "
        "Set server.address to 127.0.0.1 or a private address only the proxy reaches (docs/APP.md)."
    )


def is_private(address: str | None) -> bool:
    """Loopback or a private-network IP address (10/8, 172.16/12, 192.168/16, fc00::/7, link-local);
    not every interface, a public address, or a host name (which may resolve to anything)."""
    if is_loopback(address):
        return True
    try:
        ip = ipaddress.ip_address((address or "").strip("[]"))
    except ValueError:
        return False
    return ip.is_private and not ip.is_unspecified


def _forwarded_problem(why: str) -> str:
    return (
        f"No sign-in is configured, so this app lets in only people at this computer, and this request "
        f"came through something that forwards ({why}): a reverse proxy or a tunnel such as cloudflared "
        "or ngrok, which would let anyone it reaches act as the operator. Configure OIDC login ([auth] in "
        ".streamlit/secrets.toml) or a trusted proxy header (server.trustedUserHeaders), or open the app "
        "directly at http://127.0.0.1 on this computer."
    )


def _oidc(user: Mapping[str, Any], operators: set[str]) -> Identity:
    """Name an OIDC user by claims they cannot edit: a verified email, else issuer + subject."""
    name = _first(user, ("email",)) if _email_verified(user.get("email_verified")) else None
    if name is None:
        subject = _first(user, ("sub",))
        if subject is None:
            return Identity("oidc", problem=_NO_SUBJECT)
        issuer = user.get("iss")  # always there: Authlib rejects an ID token without one
        name = subject_name(issuer if isinstance(issuer, str) else "", subject)
    identity = _named("oidc", name, operators, _NO_SUBJECT)
    display = _first(user, _DISPLAY_CLAIMS)
    if identity.actor is None or display is None:
        return identity
    display = "".join(c for c in display if c.isprintable())[:_DISPLAY_MAX].strip() or None
    return Identity("oidc", actor=identity.actor, display_name=display)


def _email_verified(value: object) -> bool:
    """Whether ``email_verified`` says the address was verified.

    The OIDC standard makes it a JSON boolean, and the ID tokens whose claims Streamlit puts
    in ``st.user`` carry one (Google's and Cognito's among them). But Amazon Cognito's
    userInfo endpoint and its Lambda triggers send the strings "true"/"false", and several
    OIDC libraries accept those for that reason (zitadel/oidc#139, pomerium#792,
    pocketbase#6657). The value comes from the identity provider, not the user, so the
    string "true" (any case) is accepted too. Anything else is not verified: false,
    "false", 1, "yes", or no claim at all (Microsoft Entra ID sends none, and its email
    claim is not verified).
    """
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True


def subject_name(issuer: str, subject: str) -> str:
    """A stable, key-safe user name for an OIDC subject: ``oidc-<subject>-<hash>``.

    ``<subject>`` is the ``sub`` claim with every character outside ``A-Z a-z 0-9 . _ -``
    replaced by ``_`` and cut to 48 characters, so people can recognise it;
    ``<hash>`` is the first 12 hex digits (48 bits) of SHA-256 over the JSON pair
    ``[issuer, subject]``, so two users differ in name whenever their issuer or subject
    differs, even where the readable part is shortened or two providers hand out the same
    ``sub`` (neither is chosen by the user, so nobody can search for a colliding hash).
    E.g. ``oidc-108512345678901234567-f4cf92666800`` for a Google account. The name has no
    ``@``, so it never equals an email address, and it is at most 66 characters, every one
    URL-unreserved, so it is also its own object-key component under ``by-user/``.
    """
    readable = _UNSAFE.sub("_", subject)[:_SUBJECT_MAX]
    digest = hashlib.sha256(json.dumps([issuer, subject]).encode()).hexdigest()[:_HASH_HEX]
    return f"oidc-{readable}-{digest}"


def _first(user: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = user.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _named(mode: Mode, name: str | None, operators: set[str], missing: str) -> Identity:
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
        headers=headers_of(st.context.headers),
    )
    if identity.misconfigured:
        _log_once(identity.misconfigured, identity.problem or "")
    elif identity.problem:
        log.error("refusing to serve: %s", identity.problem)
    return identity


_logged: set[str] = set()


def _log_once(kind: str, problem: str) -> None:
    """The first request refused for a ``kind`` of set-up fault is logged, the rest are not: each page
    view and rerun asks again, and a tunnel or a proxy in front of the app would otherwise fill the
    log with lines a visitor chooses."""
    if kind not in _logged:
        _logged.add(kind)
        log.error("refusing to serve (logged once, further such requests are refused silently): %s", problem)


def exposure() -> str | None:
    """:func:`exposed_warning` for this server's options (the banner operators see, the start-up log line)."""
    import streamlit as st

    return exposed_warning(_trusted_headers(), st.get_option("server.address"))


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
