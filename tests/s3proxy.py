"""An HTTP proxy in front of moto's S3 server that can misbehave like real S3-compatible stores.

``forget`` drops If-Match / If-None-Match, like a store that silently ignores
them (the conditional-write probe must refuse it); ``slow_status_puts`` holds
record writes once the yielded Event is set, like a struggling store.
:func:`counting_proxy` forwards faithfully and notes every request, so a test
can count what one process asks of the store.
"""

from __future__ import annotations

import contextlib
import http.server
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

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
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
