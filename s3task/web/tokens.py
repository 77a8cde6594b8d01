"""Bearer tokens: the only way a caller of ``/api`` is identified.

Tokens live, hashed, in the file named by ``S3TASK_API_TOKENS_FILE`` (``Settings.api_tokens_file``;
JSON or TOML)::

    {"<sha256 hex of the token>": {"user": "alice", "role": "user"}}

``python -m s3task.http_api new-token --user alice`` makes one. Browser cookies
and proxy identity headers are ignored on purpose: these routes have no CSRF
protection, and a proxy that adds identity from the browser's SSO cookie would
let any web page forge a cross-site POST.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import threading
import tomllib
from collections.abc import Mapping
from pathlib import Path

from ..errors import AccessDenied, SettingsError
from ..tasks import Actor

log = logging.getLogger("s3task.api")

TOKENS_FILE_ENV = "S3TASK_API_TOKENS_FILE"
ROLES = ("user", "operator")


def hash_token(token: str) -> str:
    """What the tokens file stores: the SHA-256 hex digest of the token."""
    return hashlib.sha256(token.encode()).hexdigest()


def parse_tokens(text: str, source: str) -> dict[str, Actor]:
    """``{sha256-hex: {"user": ..., "role": "user"|"operator"}}`` from JSON or TOML text."""
    try:
        data = json.loads(text) if source.endswith(".json") or text.lstrip().startswith("{") else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"{source}: not valid JSON or TOML ({e})") from e
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping of token hashes to identities")
    table: dict[str, Actor] = {}
    for digest, entry in data.items():
        if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
            raise ValueError(
                f"{source}: {digest!r} is not a SHA-256 hex digest (use: python -m s3task.http_api hash-token)"
            )
        if not isinstance(entry, dict) or not isinstance(entry.get("user"), str):
            raise ValueError(f'{source}: the entry for {digest[:12]}… needs a "user"')
        role = entry.get("role", "user")
        if role not in ROLES:
            raise ValueError(f"{source}: role {role!r} for {entry['user']!r} must be one of {', '.join(ROLES)}")
        try:
            table[digest] = Actor(entry["user"], operator=role == "operator")
        except AccessDenied as e:
            raise ValueError(f"{source}: {e}") from e
    return table


class TokenTable:
    """Bearer token -> Actor. Re-reads its file when the file changes, so adding a token needs no restart."""

    def __init__(self, entries: Mapping[str, Actor] | None = None, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path else None
        self._entries = dict(entries or {})
        self._stamp: tuple[int, ...] | None = None
        self._lock = threading.Lock()
        if self.path is not None:
            self._entries = self._load()

    @classmethod
    def from_file(cls, path: str) -> TokenTable:
        """The table in ``path`` (``Settings.api_tokens_file``; empty: no tokens), or a SettingsError naming it."""
        if not path:
            return cls()
        try:
            return cls(path=path)
        except (OSError, ValueError) as e:  # name the setting: the file is only what it points at
            raise SettingsError(f"{TOKENS_FILE_ENV}={path!r} cannot be used: {e}") from e

    @property
    def configured(self) -> bool:
        return self.path is not None or bool(self._entries)

    def _load(self) -> dict[str, Actor]:
        assert self.path is not None
        st = self.path.stat()
        self._stamp = _stamp(st)
        return parse_tokens(self.path.read_text(), str(self.path))

    def _current(self) -> dict[str, Actor]:
        if self.path is None:
            return self._entries
        try:
            st = self.path.stat()
            if _stamp(st) != self._stamp:
                with self._lock:
                    self._entries = self._load()
        except (OSError, ValueError) as e:
            # Fail closed: a deleted or broken file accepts no token. Keeping the last good table
            # would keep alive the very tokens an edit (or the deletion) meant to revoke.
            with self._lock:
                if self._entries or self._stamp is not None:
                    log.error("cannot read API tokens from %s, so no token is accepted: %s", self.path, e)
                self._entries, self._stamp = {}, None
        return self._entries

    def actor_for(self, token: str) -> Actor | None:
        digest = hash_token(token)
        found = None
        # Compare against every entry in constant time; no early exit.
        for known, actor in self._current().items():
            if hmac.compare_digest(known, digest):
                found = actor
        return found


def _stamp(st: os.stat_result) -> tuple[int, ...]:
    """What changes whenever the file does. Size and modification time alone do not: ``cp -p``,
    ``rsync -t`` and tar put the old time back on new content of the same size (a token rotated for
    one of the same length), so the file's identity (device, inode: a file renamed over it) and its
    status-change time, which no tool can set back, are compared too."""
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
