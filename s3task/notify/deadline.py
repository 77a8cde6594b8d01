"""A deadline for a whole network exchange, not for each read: at the deadline the socket is shut down.

A socket timeout bounds one read; a peer that sends a byte now and then (a header line every few
seconds) never trips it. :class:`Cutoff` shuts the socket down from a timer thread when the time is
up, which ends any read or write blocked on it at once.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Any


class Cutoff:
    """Shut down ``sock()``'s socket (if any) ``seconds`` from now, unless cancelled first."""

    def __init__(self, seconds: float, sock: Callable[[], Any]) -> None:
        self.fired = False
        self._sock = sock
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        sock = self._sock()
        if sock is None:
            return
        with contextlib.suppress(OSError):  # closed already
            sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()
