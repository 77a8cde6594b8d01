"""An HTTP proxy in front of moto's S3 server that can misbehave like real S3-compatible stores.

``forget`` drops If-Match / If-None-Match, like a store that silently ignores
them (the conditional-write probe must refuse it); ``slow_status_puts`` holds
record writes once the yielded Event is set, like a struggling store.
:func:`counting_proxy` forwards faithfully and notes every request, so a test
can count what one process asks of the store; :func:`byte_counting_proxy` counts the body bytes
that reach the store (and can cut one part upload part-way).
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import requests


@dataclass
class RequestLog:
    """Every request a proxy forwarded: (monotonic time, method, path with query)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: list[tuple[float, str, str]] = field(default_factory=list)

    def add(self, method: str, path: str) -> None:
        with self.lock:
            self.seen.append((time.monotonic(), method, path))

    def since(self, start: float) -> list[tuple[float, str, str]]:
        with self.lock:
            return [r for r in self.seen if r[0] >= start]

    def between(self, start: float, end: float, part: str = "") -> list[tuple[float, str, str]]:
        with self.lock:
            return [r for r in self.seen if start <= r[0] <= end and part in r[2]]


class _Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # answers boto's "Expect: 100-continue" at once
    upstream = ""
    forget = False
    slow: threading.Event | None = None
    done: threading.Event
    log: RequestLog | None = None
    timeout = 10.0

    def _body(self) -> bytes | None:
        """The request's body; None when the proxy cut the connection part-way through it."""
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _forward(self) -> None:
        body = self._body()
        if body is None:
            return
        dropped = ("host", "expect", "if-match", "if-none-match") if self.forget else ("host", "expect")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
        if self.slow is not None and self.slow.is_set() and self.command == "PUT" and "status.json" in self.path:
            self.done.wait(20)  # the simulated slowness of a struggling store, until the test ends
        if self.log is not None:
            self.log.add(self.command, self.path)
        resp = requests.request(
            self.command, self.upstream + self.path, headers=headers, data=body, timeout=self.timeout
        )
        self.send_response(resp.status_code)
        for k, v in resp.headers.items():
            if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(resp.content)))
        self.end_headers()
        self.wfile.write(resp.content)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_OPTIONS = _forward

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def proxy_server(
    upstream: str, *, forget: bool = False, slow_status_puts: bool = False
) -> Iterator[tuple[str, threading.Event | None]]:
    """Serve the proxy on 127.0.0.1; yields its URL and (with ``slow_status_puts``) the Event that slows it."""
    slow = threading.Event() if slow_status_puts else None
    done = threading.Event()
    attrs = {"upstream": upstream, "forget": forget, "slow": slow, "done": done}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("Proxy", (_Proxy,), attrs))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", slow
    finally:
        done.set()
        server.shutdown()


@contextlib.contextmanager
def counting_proxy(upstream: str, log: RequestLog | None = None) -> Iterator[tuple[str, RequestLog]]:
    """Serve a faithful proxy on 127.0.0.1 that notes every request in ``log``; yields its URL and the log."""
    log, done = log if log is not None else RequestLog(), threading.Event()
    attrs = {"upstream": upstream, "done": done, "log": log, "timeout": 30.0}
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("Counting", (_Proxy,), attrs))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", log
    finally:
        done.set()
        server.shutdown()


@dataclass
class Bytes:
    """What a byte-counting proxy took in: request body bytes (whole or cut), and the parts it cut
    (``partNumber=N``, once per cut)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    received: int = 0
    cut: list[str] = field(default_factory=list)
    cutting: bool = True  # cleared by a test: the network is good again

    def stop_cutting(self) -> None:
        with self.lock:
            self.cutting = False

    def add(self, n: int) -> None:
        with self.lock:
            self.received += n


class _ByteCounting(_Proxy):
    """Counts every body byte as it arrives (a body the sender stops part-way counts for what arrived) and
    cuts the connection of a part upload (``partNumber=``) after ``cut_after`` bytes: of the first part
    sent, ``cuts`` times (each retry of it, until they are used up)."""

    bytes_in: Bytes
    cut_after: int | None = None
    cuts = 1

    def _cut_now(self) -> bool:
        part = next((p for p in self.path.split("?", 1)[-1].split("&") if p.startswith("partNumber=")), "")
        with self.bytes_in.lock:
            cut = self.bytes_in.cut
            if self.bytes_in.cutting and len(cut) < self.cuts and (not cut or cut[0] == part):
                cut.append(part)
                return True
        return False

    def _body(self) -> bytes | None:
        left, chunks = int(self.headers.get("Content-Length") or 0), []
        cut = self.cut_after is not None and self.command == "PUT" and "partNumber=" in self.path
        while left:
            if cut and sum(map(len, chunks)) >= (self.cut_after or 0):
                if self._cut_now():  # the connection drops part-way through a part, as on a flaky network
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return None
                cut = False
            chunk = self.rfile.read(min(left, 1 << 16))
            if not chunk:
                return None  # the sender went away part-way (a page reloaded)
            self.bytes_in.add(len(chunk))
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


class _SlowDown(_ByteCounting):
    """Answers each upload of one part (``slow_part``, e.g. ``partNumber=5``) with S3's 503 SlowDown, with the
    CORS headers S3 sends on an error, until :meth:`Bytes.stop_cutting`; the rest passes through."""

    slow_part = ""

    def _slowed(self) -> bool:
        with self.bytes_in.lock:
            return self.bytes_in.cutting and self.slow_part in self.path.split("?", 1)[-1].split("&")

    def _forward(self) -> None:
        if self.command != "PUT" or not self._slowed():
            return super()._forward()
        self._body()
        body = b"<?xml version='1.0'?><Error><Code>SlowDown</Code><Message>Reduce your request rate.</Message></Error>"
        self.send_response(503)
        self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin") or "*")
        self.send_header("Access-Control-Expose-Headers", "ETag")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_PUT = _forward


@contextlib.contextmanager
def byte_counting_proxy(
    upstream: str, *, cut_after: int | None = None, cuts: int = 1, slow_part: str = ""
) -> Iterator[tuple[str, Bytes]]:
    """Serve a faithful proxy on 127.0.0.1 that counts the body bytes it receives (and with ``cut_after``
    cuts a part upload part-way, ``cuts`` times, see :class:`_ByteCounting`; with ``slow_part`` answers that
    part 503 SlowDown, :class:`_SlowDown`); yields its URL and the count."""
    counted, done = Bytes(), threading.Event()
    attrs = {"upstream": upstream, "done": done, "bytes_in": counted, "cut_after": cut_after, "cuts": cuts}
    attrs |= {"timeout": 60.0, "slow_part": slow_part}
    handler = _SlowDown if slow_part else _ByteCounting
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("ByteCounting", (handler,), attrs))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", counted
    finally:
        done.set()
        server.shutdown()
