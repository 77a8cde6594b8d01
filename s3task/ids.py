"""Task ids: inverted ULIDs, so that a plain ascending key listing is newest first.

A ULID is 48 bits of Unix milliseconds followed by 80 random bits, written as
26 Crockford base32 characters. We store ``(2**48 - 1) - unix_ms`` in the
time part instead, so a task created later gets a *smaller* id and S3's
ascending listing returns the newest task first. The random part is
unchanged, so ids stay unique and fixed-width.
"""

from __future__ import annotations

import re
import secrets
import time
from datetime import UTC, datetime

from ulid import ULID

from .errors import InvalidTaskId

MAX_MS = 2**48 - 1
ID_LENGTH = 26
# Crockford base32 without I, L, O, U; the first character carries only 3 bits.
_ID_RE = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")


def new_task_id(unix_ms: int | None = None) -> str:
    """A fresh task id for the given (default: current) Unix time in milliseconds."""
    if unix_ms is None:
        unix_ms = time.time_ns() // 1_000_000
    if not 0 <= unix_ms <= MAX_MS:
        raise ValueError(f"timestamp out of range: {unix_ms}")
    inverted = MAX_MS - unix_ms
    raw = inverted.to_bytes(6, "big") + secrets.token_bytes(10)
    return str(ULID.from_bytes(raw))


def validate_task_id(value: object) -> str:
    """Return ``value`` if it is a well-formed task id, else raise :class:`InvalidTaskId`.

    Called before an id is ever used to build a key, so ``../x``, ``%2e%2e``,
    absolute paths and NUL bytes never reach the store.
    """
    if not isinstance(value, str) or not _ID_RE.fullmatch(value):
        shown = repr(value)[:60]
        raise InvalidTaskId(f"{shown} is not a valid task id (26 characters, 0-9 and A-Z)")
    return value


def is_task_id(value: object) -> bool:
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None


def created_ms(task_id: str) -> int:
    """The Unix time in milliseconds at which ``task_id`` was made."""
    return MAX_MS - ULID.from_str(validate_task_id(task_id)).milliseconds


def created_at(task_id: str) -> datetime:
    """The creation time encoded in ``task_id``, as an aware UTC datetime."""
    return datetime.fromtimestamp(created_ms(task_id) / 1000, tz=UTC)
