"""The inbox sweep's lease: one worker at a time sweeps every inbox, as one worker at a time runs a task.

One small object, ``inbox-lease`` (s3task.layout), says who sweeps and until when (the store's clock).
It is created once (create-only) and changed only by compare-and-set on the ETag read: to renew it
(its holder, from the ETag it wrote, no read), or to take it over once it has expired. A holder
renews it only when less than half of it is left, so an idle holder writes it once in three sweeps
at the default six intervals of lease (docs/INBOXES.md counts what that costs); a holder that
stops gracefully deletes it (on its ETag), so another worker takes over at its next sweep.

The lease saves work, it does not decide: two workers that both think they hold it (a holder slower
than its lease) still take each file once, by the file's own claim (s3task.tasks.inbox_take).
"""

from __future__ import annotations

import contextlib
import json
import secrets
from datetime import datetime, timedelta

from ..errors import AlreadyExists, NotFound, PreconditionFailed, S3TaskError
from ..layout import Layout
from ..record import parse_iso, to_iso
from ..store.base import ObjectStore, PutMode
from .inbox_files import JSON_TYPE


class SweepLease:
    """The lease as one worker (``holder``) sees it: :meth:`hold` before each sweep."""

    def __init__(self, store: ObjectStore, layout: Layout, holder: str, seconds: float) -> None:
        self.store, self.key = store, layout.inbox_lease_key
        self.holder, self.seconds = holder, seconds
        self._etag: str | None = None
        self._expires: datetime | None = None
        self._token = secrets.token_hex(8)

    @property
    def held(self) -> bool:
        """Whether this worker held the lease after its last :meth:`hold` (no request)."""
        return self._etag is not None

    def hold(self) -> bool:
        """Whether this worker holds the lease now: renewed (or taken) if it must be, else no request."""
        now = self.store.now()
        if self._etag is not None and self._expires is not None and now < self._expires - self._half:
            return True
        if self._etag is not None and self._write(now, PutMode.update(self._etag)):
            return True
        self._etag = None
        try:
            got = self.store.get(self.key)
        except NotFound:
            return self._write(now, PutMode.CREATE)
        try:
            raw = json.loads(got.body)
            expires = parse_iso(raw.get("expires_at"))
            mine = raw.get("token") == self._token
        except (ValueError, TypeError, AttributeError):
            expires, mine = None, False  # not a lease: taken over
        if not mine and expires is not None and now <= expires:
            return False
        return self._write(now, PutMode.update(got.etag))

    @property
    def _half(self) -> timedelta:
        return timedelta(seconds=self.seconds / 2)

    def _write(self, now: datetime, mode: PutMode) -> bool:
        expires = now + timedelta(seconds=self.seconds)
        body = {"holder": self.holder, "token": self._token, "expires_at": to_iso(expires), "at": to_iso(now)}
        try:
            self._etag = self.store.put(self.key, json.dumps(body).encode(), mode, content_type=JSON_TYPE)
        except (AlreadyExists, PreconditionFailed):
            self._etag = None
            return False
        self._expires = expires
        return True

    def release(self) -> None:
        """Give the lease up (a worker stopping): deleted on our ETag, so another takes it at its next sweep."""
        etag, self._etag = self._etag, None
        if etag is not None:
            with contextlib.suppress(S3TaskError):
                self.store.delete(self.key, if_match=etag)

    def holder_now(self) -> tuple[str, str] | None:
        """Who holds the lease and until when, as stored (None: nobody, or it cannot be read)."""
        try:
            raw = json.loads(self.store.get(self.key).body)
            return str(raw["holder"]), str(raw["expires_at"])
        except (S3TaskError, ValueError, TypeError, KeyError):
            return None
