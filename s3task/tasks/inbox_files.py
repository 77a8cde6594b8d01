"""What an inbox holds and what is kept of each file taken from it: values, no store calls.

A file dropped into ``inbox/<recipe id>/`` is seen as a :class:`Dropped` (its key, size, ETag and
time, as one HEAD answered them). Each version of it — key, ETag and time together — has one
:class:`Claim` object (``inbox-taken/<recipe id>/…``, s3task.layout), created once: whoever creates
it takes the file, and it says, afterwards, which task the file became.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..errors import InvalidInput
from ..layout import Layout
from ..record import to_iso
from ..safetext import visible
from ..store.base import ObjectMeta

#: taking: a sweeper is at it (until ``expires_at``); taken: the file is its task's input; kept: it could
#: not become a task and stays in the inbox, the reason in ``words``.
ClaimState = Literal["taking", "taken", "kept"]
JSON_TYPE = "application/json"
#: The longest task name a file's name gives (s3task.tasks.transitions.MAX_NAME is 200).
NAME_CHARS = 180


@dataclass(frozen=True)
class Dropped:
    """One object in a recipe's inbox, as a HEAD saw it."""

    key: str
    recipe_id: str
    #: The rest of the key after the recipe's inbox prefix (may hold "/" and anything a key can).
    name: str
    meta: ObjectMeta

    @property
    def modified_ms(self) -> int:
        when = self.meta.last_modified
        return 0 if when is None else int(when.timestamp() * 1000)

    @property
    def version(self) -> tuple[int, str, int]:
        """What tells this version from another of the same key (the local store's two-sweep rule)."""
        return self.meta.size, self.meta.etag, self.modified_ms

    def claim_key(self, layout: Layout, again: int = 0) -> str:
        """The key of this version's claim: a re-upload of the same key is another version, another claim.
        ``again``: the same version dropped once more after it was taken (the same bytes at the same time:
        ``cp -p``, or within the second S3 dates objects to), each time a claim of its own."""
        named = f"{self.key}\0{self.meta.etag}\0{self.modified_ms}" + (f"\0{again}" if again else "")
        digest = hashlib.sha256(named.encode()).hexdigest()[:32]
        return layout.inbox_taken_key(self.recipe_id, self.modified_ms, digest)

    def task_name(self) -> str:
        """The task's name: the file's, its control and invisible characters shown escaped (``\\x07``)."""
        shown = visible(self.name.rsplit("/", 1)[-1]) or "file"
        return shown if len(shown) <= NAME_CHARS else shown[: NAME_CHARS - 1] + "…"


@dataclass(frozen=True)
class Claim:
    """The one record of one version of one dropped file (see the module docstring)."""

    key: str
    name: str
    etag: str
    size: int
    recipe_id: str
    task_id: str
    state: ClaimState
    holder: str
    token: str
    expires_at: str
    at: str
    words: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> bytes:
        return json.dumps({"schema": 1, **asdict(self)}, ensure_ascii=False).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Claim:
        try:
            raw = json.loads(data)
            return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})
        except (ValueError, TypeError, KeyError) as e:
            raise InvalidInput("not an inbox claim") from e

    def moved(self, now: Any, state: ClaimState, words: str = "", **changes: Any) -> Claim:
        """This claim in ``state`` as of ``now`` (the store's clock), the change kept in its short history."""
        stamp = to_iso(now)
        entry = {"at": stamp, "state": state, "by": changes.get("holder", self.holder)}
        if words:
            entry["words"] = words[:500]
        fields = {**asdict(self), "state": state, "at": stamp, "words": words[:2000] or self.words, **changes}
        fields["history"] = [*self.history, entry][-20:]
        return Claim(**fields)


def is_folder_marker(key: str, meta: ObjectMeta | None = None) -> bool:
    """A key ending in "/" (what a console's "Create folder" makes): no file, never taken."""
    return key.endswith("/") and (meta is None or meta.size == 0)
