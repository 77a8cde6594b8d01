"""An HTTP proxy in front of moto's S3 server that can misbehave like real S3-compatible stores.

``forget`` drops If-Match / If-None-Match, like a store that silently ignores
them (the conditional-write probe must refuse it); ``slow_status_puts`` holds
record writes once the yielded Event is set, like a struggling store.
"""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator

import requests


class _Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # answers boto's "Expect: 100-continue" at once
    upstream = ""
    forget = False
    slow: threading.Event | None = None
    done: threading.Event

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        dropped = ("host", "expect", "if-match", "if-none-match") if self.forget else ("host", "expect")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
        if self.slow is not None and self.slow.is_set() and self.command == "PUT" and "status.json" in self.path:
            self.done.wait(20)  # the simulated slowness of a struggling store, until the test ends
        resp = requests.request(self.command, self.upstream + self.path, headers=headers, data=body, timeout=10)
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
