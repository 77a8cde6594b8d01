"""Webhook deliveries: one signed POST of an event's JSON to a configured URL.

The signature is HMAC-SHA256, keyed with ``S3TASK_WEBHOOK_SECRET``, over ``<timestamp>.<body>``
(the Unix time of this delivery attempt, a dot, the exact body bytes), sent as
``S3Task-Signature: t=<timestamp>,v1=<hex>``. Receivers check it and the timestamp's age
(docs/NOTIFICATIONS.md has the code). Redirects are not followed: the URLs come from the
deployment's settings only, and a redirect must not send the event somewhere else.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

from ..errors import DeliveryFailed as DeliveryFailed  # named here too: raised by post()
from .deadline import Cutoff

SIGNATURE_HEADER = "S3Task-Signature"
EVENT_ID_HEADER = "S3Task-Event-Id"
EVENT_TYPE_HEADER = "S3Task-Event-Type"
USER_AGENT = "s3task-webhook/1"


def signature(secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def headers(secret: str, event: dict[str, Any], body: bytes, timestamp: int | None = None) -> dict[str, str]:
    stamp = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        EVENT_ID_HEADER: str(event["id"]),
        EVENT_TYPE_HEADER: str(event["type"]),
        SIGNATURE_HEADER: f"t={stamp},v1={signature(secret, stamp, body)}",
    }


def shown(url: str, index: int | None = None, total: int | None = None) -> str:
    """How logs, errors and missed entries name a URL: ``webhook 2 of 3 (https://host[:port])``.

    Never its path or query: a receiver's URL may be a capability (a token in the path or a
    ``?token=``), as secret as a password.
    """
    try:
        parts = urlsplit(url)
        where = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    except ValueError:
        where = "an unreadable URL"
    if index is None:
        return f"webhook ({where})"
    return f"webhook {index} of {total} ({where})"


def post(url: str, secret: str, event: dict[str, Any], body: bytes, timeout: float, label: str = "") -> None:
    """Deliver once; :class:`DeliveryFailed` unless the receiver answers 2xx within ``timeout``.

    ``timeout`` bounds the whole delivery — connecting, sending, the status line and headers —
    not each read: a receiver that trickles its answer is cut off at the deadline. Redirects are
    not followed (a 3xx is a failure). ``label`` (:func:`shown`) names the receiver in the error.
    """
    label = label or shown(url)
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    except ValueError:
        raise DeliveryFailed(f"{label}: the URL cannot be read") from None
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    cutoff = Cutoff(timeout, lambda: conn.sock)
    try:
        conn.request("POST", target, body=body, headers=headers(secret, event, body))
        if cutoff.fired:  # connected just as the time ran out (the timer found no socket yet)
            raise TimeoutError
        response = conn.getresponse()
        response.read(65536)
        status = int(response.status)
    except (OSError, http.client.HTTPException, ValueError) as e:  # refused, reset, timed out, a bad answer
        if cutoff.fired or isinstance(e, TimeoutError):
            raise DeliveryFailed(f"{label}: no answer within {timeout:g}s") from None
        raise DeliveryFailed(f"{label}: {_reason(e)}") from None
    finally:
        cutoff.cancel()
        conn.close()
    if not 200 <= status < 300:
        raise DeliveryFailed(f"{label} answered HTTP {status}")


def _reason(e: Exception) -> str:
    """What went wrong, without text that might quote the URL."""
    if isinstance(e, OSError) and e.strerror:
        return f"{type(e).__name__}: {e.strerror}"
    return type(e).__name__
