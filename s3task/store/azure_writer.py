"""The Azure backend's streaming writer: one Put Blob for a small object, staged blocks and one
conditional Put Block List for a large one."""

from __future__ import annotations

import base64
import secrets
from typing import TYPE_CHECKING, Any

from azure.core import MatchConditions
from azure.storage.blob import BlobBlock, ContentSettings

from .azure_errors import _translated
from .base import PutMode
from .pieces import PieceWriter

if TYPE_CHECKING:
    from .azure import AzureStore

#: Azure's limit on the committed blocks of one block blob.
MAX_BLOCKS = 50_000


def encode_metadata(metadata: dict[str, str] | None) -> dict[str, str] | None:
    """Metadata names as Azure takes them: C# identifiers (letters, digits, ``_``; no leading digit).

    s3task's names (``write-id``) have hyphens, which Azure refuses (400 InvalidMetadata). Every other
    character, and a leading digit, becomes ``_`` and two hex digits (``write_2did``), so ``_`` always
    starts an escape and :func:`decode_metadata` gives the name back exactly.
    """
    if not metadata:
        return None
    return {_encode_name(name): value for name, value in metadata.items()}


def _encode_name(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        keep = ch.isascii() and ch.isalnum() and not (i == 0 and ch.isdigit())
        out.append(ch if keep else "".join(f"_{b:02x}" for b in ch.encode()))
    return "".join(out)


def decode_metadata(metadata: dict[str, str] | None) -> dict[str, str]:
    """The names :func:`encode_metadata` wrote, as they were (a name it did not write is kept as it is)."""
    return {_decode_name(name): value for name, value in (metadata or {}).items()}


def _decode_name(name: str) -> str:
    raw, i = bytearray(), 0
    while i < len(name):
        if name[i] == "_" and i + 3 <= len(name):
            try:
                raw.append(int(name[i + 1 : i + 3], 16))
                i += 3
                continue
            except ValueError:
                pass
        raw += name[i].encode()
        i += 1
    return raw.decode(errors="replace")


def put_conditions(mode: PutMode) -> dict[str, Any]:
    """The SDK's keywords for a put mode, on Put Blob and Put Block List alike.

    A create passes ``match_condition`` alone (the SDK refuses ``etag='*'``): If-None-Match ``*``.
    """
    if mode.kind == "create":
        return {"overwrite": False, "match_condition": MatchConditions.IfMissing}
    if mode.kind == "update":
        return {"overwrite": True, **_if_match(mode.etag)}
    return {"overwrite": True}


def _if_match(etag: str | None) -> dict[str, Any]:
    return {"etag": etag, "match_condition": MatchConditions.IfNotModified} if etag else {}


def create_by_block_list(
    blob: Any, body: bytes, settings: ContentSettings | None, metadata: dict[str, str] | None
) -> str:
    """Create a blob as one staged block and a Put Block List with If-None-Match ``*``; its ETag.

    ``AlreadyExists`` if a blob is committed first. The block id carries a nonce, as a writer's do.
    """
    block_id = base64.b64encode(f"{secrets.token_hex(8)}-{0:06d}".encode()).decode()
    with _translated(blob.blob_name, "write"):
        blob.stage_block(block_id, body, length=len(body))
    with _translated(blob.blob_name, "create"):
        resp = blob.commit_block_list(
            [BlobBlock(block_id)],
            content_settings=settings,
            metadata=encode_metadata(metadata),
            match_condition=MatchConditions.IfMissing,
        )
    return str(resp["etag"])


class BlockWriter(PieceWriter):
    """Buffers one block; small objects become one Put Blob, large ones staged blocks and a block list.

    Blocks are staged by a thread of their own (:mod:`.background`), one waiting at most behind the one
    in flight, so the caller goes on producing the next meanwhile. The block list is committed with the
    put mode's condition (If-None-Match ``*`` on a create), so a second writer of the same output cannot
    replace the first. Block ids start with a nonce of this writer: two writers staging blocks of one
    blob at once never overwrite each other's (a commit names exactly its own).

    Nothing to abort: Azure keeps uncommitted blocks out of every listing and read, drops them when any
    block list of the blob is committed, and otherwise after a week.
    """

    def __init__(
        self,
        store: AzureStore,
        key: str,
        mode: PutMode,
        content_type: str | None,
        metadata: dict[str, str] | None,
        block_size: int,
    ):
        self.store, self.key, self.mode = store, key, mode
        self.content_type, self.metadata = content_type, metadata
        super().__init__(block_size, self._stage)
        self.block_size = block_size
        self._nonce = secrets.token_hex(8)
        self._blocks: list[str] = []

    def _stage(self, data: bytes) -> None:
        if len(self._blocks) >= MAX_BLOCKS:
            raise ValueError(f"{self.key}: more than {MAX_BLOCKS} blocks of {self.block_size} bytes")
        # Every id of one blob must have the same length: a fixed-width number after the nonce.
        block_id = base64.b64encode(f"{self._nonce}-{len(self._blocks):06d}".encode()).decode()
        with _translated(self.key, "write"):
            self.store.data_client.get_blob_client(self.key).stage_block(block_id, data, length=len(data))
        self._blocks.append(block_id)

    def finish(self) -> None:
        # Every block staged, or the first error raised.
        if not self._sent():  # never filled a block: one Put Blob
            self.etag = self.store.put(
                self.key, bytes(self._buf), self.mode, content_type=self.content_type, metadata=self.metadata
            )
            return
        kwargs: dict[str, Any] = put_conditions(self.mode)
        kwargs.pop("overwrite")  # Put Block List has no such keyword: the condition says it
        if self.content_type:
            kwargs["content_settings"] = ContentSettings(content_type=self.content_type)
        blob = self.store.data_client.get_blob_client(self.key)
        with _translated(self.key, self.mode.kind):
            resp = blob.commit_block_list(
                [BlobBlock(block_id) for block_id in self._blocks], metadata=encode_metadata(self.metadata), **kwargs
            )
        self.etag = str(resp["etag"])

    def abort(self) -> None:
        self._stop()
