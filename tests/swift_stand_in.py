"""A stand-in for OpenStack Swift's S3 layer (s3api), which cannot be installed here: NOT Swift.

It answers what matters to s3task's probe as Swift's s3api was measured answering (docs/STORES.md):
a PUT with ``If-Match`` gets 501 NotImplemented, "Conditional object PUTs are not supported"; a PUT with
``If-None-Match: *`` of an existing key gets 412. Everything else is the least S3 that boto3
needs for a put, get, head and delete of one object: an in-memory dict, no signature checks.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ERROR = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message></Error>'


class _Handler(BaseHTTPRequestHandler):
    objects: dict[str, bytes]
    lock: threading.Lock

    def log_message(self, *args: object) -> None:  # quiet: a failing test shows its own output
        pass

    def _error(self, status: int, code: str, message: str) -> None:
        body = _ERROR.format(code=code, message=message).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _done(self, status: int, headers: dict[str, str], body: bytes = b"", send_body: bool = True) -> None:
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("If-Match"):
            return self._error(501, "NotImplemented", "Conditional object PUTs are not supported.")
        with self.lock:
            if self.headers.get("If-None-Match") == "*" and self.path in self.objects:
                return self._error(412, "PreconditionFailed", "At least one of the preconditions failed.")
            self.objects[self.path] = body
        self._done(200, {"ETag": f'"{hashlib.md5(body).hexdigest()}"'})

    def _get(self, send_body: bool) -> None:
        with self.lock:
            body = self.objects.get(self.path.split("?")[0])
        if body is None:
            return self._error(404, "NoSuchKey", "The specified key does not exist.")
        headers = {"ETag": f'"{hashlib.md5(body).hexdigest()}"', "Last-Modified": formatdate(usegmt=True)}
        self._done(200, headers, body, send_body)

    def do_GET(self) -> None:
        self._get(True)

    def do_HEAD(self) -> None:
        self._get(False)

    def do_DELETE(self) -> None:
        with self.lock:
            self.objects.pop(self.path, None)
        self._done(204, {})


@contextlib.contextmanager
def swift_stand_in() -> Iterator[str]:
    """The stand-in on 127.0.0.1 and a free port; yields its endpoint URL."""
    handler = type("Handler", (_Handler,), {"objects": {}, "lock": threading.Lock()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
