"""Serve an ASGI app with uvicorn on 127.0.0.1 in a background thread, over a real socket."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from conftest import wait_for


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Yield the base URL (``http://127.0.0.1:<port>``) while ``app`` is being served."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound before the server starts: no free-port race
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="uvicorn-test", daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started or not thread.is_alive(), timeout=20, what="uvicorn to start")
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
