"""``worker.py``'s SIGTERM stops the worker wherever the signal lands: Python runs the handler in the main
thread between two of its bytecodes, so a handler that took a lock the main thread held at that moment (the
wake event's, inside ``Event.wait`` or ``clear``) would wait for itself for ever. A clean-clone CI run saw a
worker ignore SIGTERM so, its stop never logged. The handler takes no lock; a thread of its own stops."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest

from s3task.worker import cli


class Loop:
    """What the handler stops: the worker loop's two events."""

    def __init__(self) -> None:
        self.stop_event, self._wake = threading.Event(), threading.Event()


@pytest.fixture
def handlers_restored() -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def test_a_sigterm_while_the_loop_holds_its_wake_lock_still_stops_the_worker(handlers_restored: None) -> None:
    loop = Loop()
    cli._install_signals(loop)  # type: ignore[arg-type]
    with loop._wake._cond:  # the main thread inside Event.clear(), as the loop is between two polls
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, in this thread, before kill returns
        assert not loop._wake.is_set()  # nothing could take the lock meanwhile: the handler did not wait for it
    assert loop.stop_event.wait(10), "the worker was not told to stop"
    assert loop._wake.wait(10), "the loop was not woken"
