"""Signed, expiring transfer URLs for stores without presigned URLs (the local-directory store).

S3 hands out SigV4 presigned URLs, so the browser and scripts move bytes
straight to and from the bucket. The local store has no such thing; this module
gives it the same shape: :class:`UrlSigner` makes ``/transfer/<token>`` URLs
(what :class:`s3task.tasks.TaskService` returns when the store's own presign
gives ``None``), and :func:`transfer_mount` serves them, streaming request and
response bodies in chunks so the app never holds a whole file in memory.

A token is ``<payload>.<signature>``: the payload (base64url JSON) binds the
HTTP method, the exact object key, an absolute expiry and, for uploads, the
content type the client must send (as S3 binds a signed ``Content-Type``); the
signature is HMAC-SHA256 over it. The secret is ``S3TASK_SIGNING_KEY``
(``Settings.signing_key``, handed to :func:`signer_for`) or, failing that, a random key generated once and kept in
``<store root>/.s3task-meta/signing-key`` (mode 0600), so the app, the HTTP API
and the CLI on one machine agree without configuration.

Uploads are refused once the task has left ``created``. A PUT that started
before the submit can still land after it; that cannot change what is
processed, because submit pins the input's ETag and the worker reads the
input only if it still matches.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import logging
import math
import os
import secrets
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from .. import lifecycle
from ..clock import MACHINE
from ..config import MIN_SIGNING_KEY_CHARS
from ..errors import NotFound, S3TaskError, StoreError, TaskNotFound
from ..layout import Layout
from ..records import read_record
from ..store.base import ObjectStore, PutMode, check_key
from .errors import HttpError, error_response, internal_error, json_mount, redact_path
from .uploads import OneAtATime, Pace, paced

log = logging.getLogger("s3task.transfer")

KEY_FILE = "signing-key"
MIN_SECRET_CHARS = MIN_SIGNING_KEY_CHARS
ROUTE_PREFIX = "/transfer"
CHUNK_BYTES = 1 << 20
_CONTEXT = b"s3task-transfer-v1."


# --- tokens -------------------------------------------------------------------------


class TransferDenied(HttpError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(403, code, message)


@dataclass(frozen=True)
class Grant:
    """What a transfer URL allows: one method on one key until ``expires`` (Unix seconds); an upload link made
    for a file of known ``size`` takes a body of exactly that many bytes."""

    method: str
    key: str
    expires: int
    content_type: str | None = None
    filename: str | None = None
    size: int | None = None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class UrlSigner:
    """Signs and checks transfer tokens. ``clock`` (Unix seconds) is injectable for tests.

    URLs are ``<base_url><prefix>/<token>``; with the default empty ``base_url``
    they are host-relative (``/transfer/…``), which a browser resolves against
    the app's own origin and the HTTP API turns into absolute URLs.
    """

    def __init__(
        self,
        secret: bytes,
        *,
        base_url: str = "",
        prefix: str = ROUTE_PREFIX,
        clock: Callable[[], float] = MACHINE.wall,
    ) -> None:
        if len(secret) < MIN_SECRET_CHARS:
            raise ValueError(f"the signing key must be at least {MIN_SECRET_CHARS} characters")
        self._secret = secret
        self.base_url = base_url.rstrip("/")
        self.prefix = "/" + prefix.strip("/")
        self.clock = clock

    # --- making URLs (the TaskService hook) ---

    def presign_get(self, key: str, *, expires: int, filename: str | None = None) -> str:
        return self.url(Grant("GET", check_key(key), self._expiry(expires), filename=filename))

    def presign_put(self, key: str, *, expires: int, content_type: str) -> str:
        return self.url(Grant("PUT", check_key(key), self._expiry(expires), content_type=content_type))

    def presign_sized_put(self, key: str, *, expires: int, content_type: str, size: int) -> str:
        """:meth:`presign_put` for a body of exactly ``size`` bytes (any other is refused, nothing published)."""
        return self.url(Grant("PUT", check_key(key), self._expiry(expires), content_type=content_type, size=size))

    def url(self, grant: Grant) -> str:
        return f"{self.base_url}{self.prefix}/{self.sign(grant)}"

    def _expiry(self, seconds: int) -> int:
        if seconds <= 0:
            raise ValueError("a transfer URL must expire in the future")
        return math.ceil(self.clock()) + int(seconds)

    # --- tokens ---

    def sign(self, grant: Grant) -> str:
        fields = {"m": grant.method, "k": grant.key, "e": grant.expires, "t": grant.content_type, "f": grant.filename,
                  "s": grant.size}  # fmt: skip
        payload = _b64(json.dumps({k: v for k, v in fields.items() if v is not None}, separators=(",", ":")).encode())
        return f"{payload}.{self._mac(payload)}"

    def _mac(self, payload: str) -> str:
        return _b64(hmac.new(self._secret, _CONTEXT + payload.encode("ascii"), hashlib.sha256).digest())

    def verify(self, token: str, method: str) -> Grant:
        """The grant in ``token`` if the signature is ours, the method matches and it has not expired."""
        payload, _, mac = token.partition(".")
        try:
            payload.encode("ascii")
            mac.encode("ascii")
        except UnicodeEncodeError:
            raise TransferDenied("invalid_signature", "this transfer link is not valid") from None
        if not payload or not hmac.compare_digest(mac, self._mac(payload)):
            raise TransferDenied("invalid_signature", "this transfer link is not valid (its signature does not match)")
        try:
            raw = json.loads(_unb64(payload))
            size = None if raw.get("s") is None else int(raw["s"])
            grant = Grant(raw["m"], raw["k"], int(raw["e"]), raw.get("t"), raw.get("f"), size)
        except (ValueError, KeyError, TypeError, binascii.Error) as e:
            raise TransferDenied("invalid_signature", "this transfer link is not valid") from e
        if grant.method != ("GET" if method == "HEAD" else method):
            raise TransferDenied(
                "wrong_method", f"this link allows {grant.method} only; get a new link for {method.lower()}"
            )
        if self.clock() >= grant.expires:
            raise TransferDenied("expired", "this transfer link has expired; ask for a new one")
        return grant


# --- the secret ---------------------------------------------------------------------


def signer_for(store: ObjectStore, *, key: str = "") -> UrlSigner | None:
    """The signer a store needs: ``None`` for stores that presign themselves (S3).

    The secret is ``key`` (``Settings.signing_key``, checked where settings are loaded) if
    given, else the local store's key file (created on first use). Expiry follows the
    store's clock, the machine's as the store was opened with.
    """
    from ..store.local import LocalStore

    if not isinstance(store, LocalStore):
        return None
    return UrlSigner(key.encode() if key else local_secret(store.root), clock=store.clock.wall)


def local_secret(root: Path) -> bytes:
    """The key in ``<root>/.s3task-meta/signing-key``, generated (0600) if missing."""
    from ..store.local import META_DIR

    path = Path(root) / META_DIR / KEY_FILE
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, staged = tempfile.mkstemp(dir=path.parent, prefix=".signing-key-")  # mkstemp makes it 0600
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
                f.flush()
                os.fsync(f.fileno())
            # A link fails if another process created the key first: then theirs is the key.
            with contextlib.suppress(FileExistsError):
                os.link(staged, path)
        finally:
            os.unlink(staged)
    mode = path.stat().st_mode
    if mode & 0o077:
        raise PermissionError(f"{path} is readable by other users; run: chmod 600 {path}")
    secret = path.read_text().strip()
    if len(secret) < MIN_SECRET_CHARS:
        raise ValueError(f"{path} does not hold a usable signing key; delete it to generate a new one")
    return secret.encode()


# --- routes -------------------------------------------------------------------------


def transfer_mount(
    store: ObjectStore, layout: Layout, signer: UrlSigner, *, max_bytes: int, pace: Pace | None = None
) -> Mount:
    """``PUT`` and ``GET /transfer/{token}``: stream uploads to and downloads from the store.

    ``pace``: how slow an upload's body may arrive (:mod:`s3task.web.uploads`; its defaults unless given).
    """
    _redact_access_log()
    handler = _Transfers(store, layout, signer, max_bytes, pace or Pace())
    route = Route("/{token}", handler.dispatch, methods=["GET", "PUT"])
    return json_mount(signer.prefix, [route], {S3TaskError: _store_error})


async def _store_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, NotFound | TaskNotFound):
        return error_response(404, "not_found", "the file behind this link no longer exists")
    if isinstance(exc, StoreError):
        return error_response(503, "store_unavailable", f"the task store did not answer: {exc}")
    return await internal_error(request, exc)


class _RedactTokens(logging.Filter):
    """Take the signed token out of a server's access-log line: a logged link is a working link."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact_path(a) if isinstance(a, str) else a for a in record.args)
        return True


def _redact_access_log() -> None:
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _RedactTokens) for f in access.filters):
        access.addFilter(_RedactTokens())


class _Transfers:
    def __init__(self, store: ObjectStore, layout: Layout, signer: UrlSigner, max_bytes: int, pace: Pace) -> None:
        self.store, self.layout, self.signer, self.max_bytes = store, layout, signer, max_bytes
        self.pace = pace
        self.uploading = OneAtATime()

    async def dispatch(self, request: Request) -> Response:
        grant = self.signer.verify(request.path_params["token"], request.method)
        if request.method == "PUT":
            return await self.put(request, grant)
        return await self.get(grant)

    async def get(self, grant: Grant) -> Response:
        meta = await run_in_threadpool(self.store.head, grant.key)
        headers = {
            "Content-Length": str(meta.size),
            "Content-Disposition": content_disposition(grant.filename or grant.key.rsplit("/", 1)[-1]),
            "ETag": meta.etag,
            "Cache-Control": "private, no-store",
        }
        return StreamingResponse(
            self._chunks(grant.key, meta.etag),
            media_type=meta.content_type or "application/octet-stream",
            headers=headers,
        )

    def _chunks(self, key: str, etag: str) -> Iterator[bytes]:
        # A sync generator: Starlette runs each step in a worker thread.
        with self.store.open_read(key, if_match=etag) as f:
            while chunk := f.read(CHUNK_BYTES):
                yield chunk

    async def put(self, request: Request, grant: Grant) -> Response:
        sent_type = request.headers.get("content-type")
        if sent_type != grant.content_type:
            raise TransferDenied(
                "content_type_mismatch",
                f"this link needs the header Content-Type: {grant.content_type} (got {sent_type or 'none'})",
            )
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            raise self._too_large()
        if declared and declared.isdigit() and grant.size is not None and int(declared) != grant.size:
            raise self._not_its_size(grant.size)
        with self.uploading.hold(grant.key):
            await run_in_threadpool(self._check_uploadable, grant.key)
            try:
                etag, size = await self._receive(grant, request.stream())
            except ClientDisconnect:
                # Routine on real networks (a closed laptop, a reload): one line, no traceback, no token.
                log.info("upload to %s stopped: the client went away before sending it all", grant.key)
                return Response(status_code=400)
        return JSONResponse({"key": grant.key, "size": size, "etag": etag}, headers={"ETag": etag})

    def _check_uploadable(self, key: str) -> None:
        """Only a task's input, and only while the task is still ``created``."""
        task_id = self.layout.task_id_of(key.rsplit("/", 1)[0])
        if task_id is None or key != self.layout.input_key(task_id):
            raise TransferDenied("not_uploadable", "this link does not point at a task's input")
        record, _ = read_record(self.store, self.layout, task_id)
        if record.status != lifecycle.Status.CREATED:
            raise HttpError(409, "invalid_transition", f"cannot replace the input: {lifecycle.describe(record)}")

    def _not_its_size(self, size: int) -> HttpError:
        return HttpError(400, "wrong_size", f"this link takes a file of {size:,} bytes, the size declared for it")

    def _too_large(self) -> HttpError:
        mb = self.max_bytes / (1 << 20)
        return HttpError(413, "payload_too_large", f"the file is larger than the {mb:g} MB this server accepts")

    async def _receive(self, grant: Grant, body: AsyncIterator[bytes]) -> tuple[str, int]:
        """Stream ``body`` into the store in ~1 MB writes; nothing is published unless it all arrives."""
        writing = self.store.open_write(grant.key, PutMode.OVERWRITE, content_type=grant.content_type)
        writer = await run_in_threadpool(writing.__enter__)
        size, pending = 0, bytearray()
        seconds_left = lambda: grant.expires - self.signer.clock()  # noqa: E731 - the link's expiry holds
        try:
            async for chunk in paced(body, seconds_left, self.pace):
                size += len(chunk)
                if size > self.max_bytes:
                    raise self._too_large()
                if grant.size is not None and size > grant.size:
                    raise self._not_its_size(grant.size)
                pending += chunk
                if len(pending) >= CHUNK_BYTES:
                    await run_in_threadpool(writer.write, bytes(pending))
                    pending.clear()
            if pending:
                await run_in_threadpool(writer.write, bytes(pending))
            if grant.size is not None and size != grant.size:
                raise self._not_its_size(grant.size)
        except BaseException as e:
            # Shielded: a client that disconnects cancels us, and the staged file must still go.
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(writing.__exit__, type(e), e, e.__traceback__)
            raise
        await run_in_threadpool(writing.__exit__, None, None, None)
        return writer.etag, size


def content_disposition(filename: str) -> str:
    safe = "".join(ch for ch in filename if ch.isascii() and (ch.isalnum() or ch in " ._-")).strip() or "download"
    return f'attachment; filename="{safe}"'
