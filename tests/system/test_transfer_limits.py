"""The local store's /transfer upload links hold only what they promise, over real sockets on 127.0.0.1.

The outside review's findings at small scale: slow bodies outliving their link, bodies that never
finish, parallel PUTs through one link, and a client that goes away (logged as a traceback with the
working link in it). Every client here is a raw socket, so a test sends exactly the bytes it means to,
at the pace it means to, and every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from apps.http_server import serve
from conftest import wait_for
from starlette.applications import Starlette

from s3task.layout import Layout
from s3task.store.local import META_DIR, LocalStore
from s3task.tasks import Actor, TaskService
from s3task.web.transfer import UrlSigner, transfer_mount
from s3task.web.uploads import Pace

ALICE = Actor("alice")
SECRET = b"k" * 32
KB = 1024


@dataclass
class Server:
    base: str
    store: LocalStore
    service: TaskService

    def upload_url(self) -> str:
        return self.base + self.service.create(ALICE, "limits", "copy").upload_url

    def staged(self) -> list[Path]:
        return list((self.store.root / META_DIR / "tmp").glob("stage-*"))


@contextlib.contextmanager
def server(tmp: Path, *, url_seconds: int = 60, max_bytes: int = 1 << 20, pace: Pace | None = None) -> Iterator[Server]:
    store = LocalStore(tmp / "store")
    signer = UrlSigner(SECRET)  # the real clock: these links expire in real seconds
    service = TaskService(store, Layout(), url_seconds=url_seconds, url_signer=signer)
    app = Starlette(routes=[transfer_mount(store, Layout(), signer, max_bytes=max_bytes, pace=pace)])
    with serve(app) as base:
        yield Server(base, store, service)


class Upload:
    """One PUT on its own socket: headers declaring ``length`` bytes, then the body as the test sends it."""

    def __init__(self, url: str, length: int) -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
        head = f"PUT {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: text/csv\r\n"
        self.sock.sendall((head + f"Content-Length: {length}\r\n\r\n").encode())
        self.answer = b""
        self.answered_at: float | None = None

    def send(self, data: bytes) -> bool:
        """Send ``data``; False once the server has closed the connection."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def wait_answer(self, seconds: float) -> bool:
        """Read what the server says for up to ``seconds``; True once it has answered (or hung up)."""
        self.sock.settimeout(seconds)
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return False
        except OSError:
            data = b""
        if self.answered_at is None:
            self.answered_at = time.monotonic()
        self.answer += data
        while data and not self._complete():  # the rest of the answer (its body) follows at once
            try:
                data = self.sock.recv(65536)
            except OSError:
                break
            self.answer += data
        return True

    def _complete(self) -> bool:
        head, sep, body = self.answer.partition(b"\r\n\r\n")
        lengths = [int(h.split(b":")[1]) for h in head.lower().split(b"\r\n") if h.startswith(b"content-length:")]
        return bool(sep) and len(body) >= (lengths[0] if lengths else 0)

    @property
    def status(self) -> int | None:
        line = self.answer.split(b"\r\n", 1)[0].split()
        return int(line[1]) if len(line) > 1 else None

    def close(self) -> None:
        self.sock.close()


def trickle(upload: Upload, piece: bytes, every: float, until: float) -> None:
    """Send ``piece`` every ``every`` seconds until the server answers or ``until`` (monotonic) passes."""
    while time.monotonic() < until:
        if upload.wait_answer(every):
            return
        if not upload.send(piece):
            upload.wait_answer(1)
            return


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def in_threads(uploads: list[Upload], piece: bytes, every: float, until: float) -> None:
    threads = [threading.Thread(target=trickle, args=(u, piece, every, until)) for u in uploads]
    for t in threads:
        t.start()
    for t in threads:
        t.join(until - time.monotonic() + 5)


def test_slow_uploads_are_cut_off_when_their_link_expires(tmp_path: Path) -> None:
    """20 uploads at 1 byte per 0.2 s through 2-second links: all cut off at expiry, nothing held."""
    with server(tmp_path, url_seconds=2) as srv:
        urls = [srv.upload_url() for _ in range(20)]
        baseline = open_fds()
        started = time.monotonic()
        uploads = [Upload(url, 1000) for url in urls]  # 1000 bytes at 5 B/s: 200 s if nothing cuts them off
        wait_for(lambda: len(srv.staged()) == 20, timeout=5, what="20 staged uploads")
        in_threads(uploads, b"x", 0.2, started + 10)
        for u in uploads:
            u.close()
        assert [u.status for u in uploads] == [403] * 20, [u.answer[:80] for u in uploads]
        assert all(b'"code":"expired"' in u.answer for u in uploads)
        # Cut off at the links' expiry (2 s, rounded up to the next whole second), not whenever they stop.
        assert max(u.answered_at - started for u in uploads) < 6
        wait_for(lambda: srv.staged() == [], timeout=5, what="the staged files to go")
        wait_for(lambda: open_fds() <= baseline + 2, timeout=5, what=f"fds back to {baseline}, not {open_fds()}")
        assert not [k for k in srv.store.list_keys("batch-tasks/") if k.endswith("/input.csv")]  # none published


def test_a_body_that_stalls_or_crawls_times_out(tmp_path: Path) -> None:
    pace = Pace(read_timeout=0.5, min_rate=1000)
    with server(tmp_path, pace=pace) as srv:  # links valid a minute: only the pace stops these
        stalled, crawling = Upload(srv.upload_url(), 100), Upload(srv.upload_url(), 1000)
        started = time.monotonic()
        in_threads([stalled], b"", 0.2, started + 5)  # sends nothing after the headers
        in_threads([crawling], b"x", 0.1, started + 5)  # 10 B/s, under the 1000 B/s minimum
        for u in (stalled, crawling):
            u.close()
            assert u.status == 408, u.answer[:200]
            assert b'"code":"upload_too_slow"' in u.answer
            assert u.answered_at - started < 3
        wait_for(lambda: srv.staged() == [], timeout=5, what="the staged files to go")


def test_one_upload_per_link_at_a_time(tmp_path: Path) -> None:
    with server(tmp_path) as srv:
        url = srv.upload_url()
        first = Upload(url, 8)
        first.send(b"a,b\n")
        wait_for(lambda: len(srv.staged()) == 1, timeout=5, what="the first upload to be staged")
        second = Upload(url, 8)
        assert second.wait_answer(5) and second.status == 409, second.answer[:200]
        assert b'"code":"upload_in_progress"' in second.answer
        second.close()
        first.send(b"1,2\n")
        assert first.wait_answer(5) and first.status == 200, first.answer[:200]
        first.close()
        again = Upload(url, 8)  # once the first is done, the link works again
        again.send(b"a,b\n3,4\n")
        assert again.wait_answer(5) and again.status == 200
        again.close()
        assert srv.store.get(url_key(srv, url)).body == b"a,b\n3,4\n"


def url_key(srv: Server, url: str) -> str:
    return srv.service.url_signer.verify(url.rsplit("/", 1)[1], "PUT").key


def test_parallel_puts_through_one_link_stage_no_more_than_the_limit(tmp_path: Path) -> None:
    limit = 256 * KB
    with server(tmp_path, max_bytes=limit) as srv:
        url = srv.upload_url()
        uploads = [Upload(url, limit) for _ in range(10)]  # each within the limit on its own
        most = 0

        def watch(stop: threading.Event) -> None:
            nonlocal most
            while not stop.is_set():
                with contextlib.suppress(FileNotFoundError):
                    most = max(most, sum(p.stat().st_size for p in srv.staged()))
                stop.wait(0.01)

        stop = threading.Event()
        watcher = threading.Thread(target=watch, args=(stop,))
        watcher.start()
        try:
            in_threads(uploads, b"x" * (16 * KB), 0.02, time.monotonic() + 10)
        finally:
            stop.set()
            watcher.join(5)
        statuses = sorted(u.status or 0 for u in uploads)
        for u in uploads:
            u.close()
        assert statuses == [200] + [409] * 9
        assert most <= limit
        assert srv.store.head(url_key(srv, url)).size == limit


def test_a_client_that_goes_away_is_one_log_line_without_the_link(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with server(tmp_path) as srv:
        url = srv.upload_url()
        token = url.rsplit("/", 1)[1]
        gone = Upload(url, 1000)
        gone.send(b"a,b\n1,2\n")
        wait_for(lambda: len(srv.staged()) == 1, timeout=5, what="the upload to be staged")
        gone.close()
        wait_for(lambda: srv.staged() == [], timeout=5, what="the staged file to go")
        wait_for(lambda: any("went away" in r.getMessage() for r in caplog.records), timeout=5, what="the log line")
    lines = [r for r in caplog.records if r.name.startswith("s3task")]
    assert len([r for r in lines if "went away" in r.getMessage()]) == 1
    assert [r for r in caplog.records if r.exc_info] == []
    assert not [r.getMessage() for r in caplog.records if token in r.getMessage() or token[:20] in r.getMessage()]


def test_access_log_lines_carry_no_token(tmp_path: Path) -> None:
    with server(tmp_path) as srv:
        url = srv.upload_url()
    token = url.rsplit("/", 1)[1]
    access = logging.getLogger("uvicorn.access")
    record = access.makeRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "PUT", f"/transfer/{token}", "1.1", 200), None,
    )  # fmt: skip
    assert all(f.filter(record) for f in access.filters)
    assert token not in record.getMessage() and "/transfer/<token>" in record.getMessage()


def test_a_client_that_goes_away_from_the_api_is_one_log_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from s3task.config import Settings
    from s3task.web.api import create_app
    from s3task.web.tokens import TokenTable, hash_token

    caplog.set_level(logging.DEBUG)
    settings = Settings.load({"store": str(tmp_path / "store")}, {})
    app = create_app(settings, tokens=TokenTable({hash_token("alice-token"): ALICE}))
    with serve(app) as base:
        parts = urlsplit(base)
        sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
        head = f"POST /api/tasks HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer alice-token\r\n"
        sock.sendall((head + 'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":').encode())
        sock.close()  # before the body is all there
        wait_for(lambda: "went away" in caplog.text, timeout=5, what="the log line")
    assert len([r for r in caplog.records if "went away" in r.getMessage()]) == 1
    assert [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []
