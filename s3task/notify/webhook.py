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
import time
import urllib.error
import urllib.request
from typing import Any

SIGNATURE_HEADER = "S3Task-Signature"
EVENT_ID_HEADER = "S3Task-Event-Id"
EVENT_TYPE_HEADER = "S3Task-Event-Type"
USER_AGENT = "s3task-webhook/1"


class DeliveryFailed(Exception):
    """The receiver did not take the event (no answer in time, or not a 2xx answer)."""


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


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx is then an HTTPError: a failed delivery


_opener = urllib.request.build_opener(_NoRedirects)


def post(url: str, secret: str, event: dict[str, Any], body: bytes, timeout: float) -> None:
    """Deliver once; :class:`DeliveryFailed` unless the receiver answers 2xx within ``timeout``."""
    request = urllib.request.Request(url, data=body, headers=headers(secret, event, body), method="POST")
    try:
        with _opener.open(request, timeout=timeout) as response:
            response.read(65536)
            status = int(response.status)
    except urllib.error.HTTPError as e:
        raise DeliveryFailed(f"{url} answered HTTP {e.code}") from e
    except (OSError, ValueError) as e:  # URLError, timeouts, refused connections, a bad answer
        raise DeliveryFailed(f"{url}: {getattr(e, 'reason', e)}") from e
    if not 200 <= status < 300:
        raise DeliveryFailed(f"{url} answered HTTP {status}")
