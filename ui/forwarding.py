"""What a request's headers say about how it reached the app: straight from this computer, or through
something that forwards (a reverse proxy, a tunnel such as cloudflared or ngrok).

Development mode (no sign-in configured) trusts the listening address: an app on 127.0.0.1 is
reachable only from this computer. Anything on the same host that forwards breaks that — every
visitor through it arrives from 127.0.0.1. Such forwarders say so in the headers they add
(``X-Forwarded-For``, ``X-Forwarded-Host``, ``Forwarded``, ``X-Real-IP``) or in a ``Host`` that is
not a loopback name; :func:`forwarded_by` finds either.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

#: Headers a forwarding proxy or tunnel adds (RFC 7239's ``Forwarded`` and the de-facto ones).
FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip")

#: A request's headers, names in lower case, every value of a repeated header kept.
Headers = Mapping[str, Sequence[str]]


def headers_of(pairs: object) -> dict[str, list[str]]:
    """Lower-cased names to every value, from Streamlit's ``st.context.headers`` (or any mapping)."""
    out: dict[str, list[str]] = {}
    get_all = getattr(pairs, "get_all", None)
    if not isinstance(pairs, Mapping):
        return out
    for name in pairs:
        values = get_all(name) if callable(get_all) else [pairs[name]]
        out.setdefault(str(name).lower(), []).extend(str(v) for v in values)
    return out


def forwarded_by(headers: Headers) -> str | None:
    """Why this request looks forwarded (the header, or the Host it names), or None for a direct one.

    No headers at all (Streamlit's test harness, or no session) count as direct."""
    for name in FORWARDING_HEADERS:
        if headers.get(name):
            return f"it carries a {_title(name)} header"
    hosts = headers.get("host") or []
    for host in hosts:
        if not is_loopback_host(host):
            return f"it names the host {host!r}, not this computer"
    return None


def is_loopback_host(host: str) -> bool:
    """Whether a ``Host`` header (``name[:port]``, ``[v6]:port``) names this computer."""
    host = host.strip().lower()
    if host.startswith("["):
        name = host[1:].split("]", 1)[0]
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _title(name: str) -> str:
    return "-".join("IP" if part == "ip" else part.capitalize() for part in name.split("-"))
