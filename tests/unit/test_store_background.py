"""S3 parts upload on a thread of their own: the writer goes on meanwhile; order, errors, aborts unchanged."""

from __future__ import annotations

import threading

import pytest
from conftest import wait_for

import s3task.store.s3
from s3task.errors import StoreError
from s3task.store.background import Background
from s3task.store.base import PutMode
from s3task.store.s3 import S3Store

MIB = 1 << 20


def test_items_are_consumed_in_order_on_the_thread() -> None:
    seen: list[tuple[int, str]] = []
    background = Background(lambda item: seen.append((item, threading.current_thread().name)), name="t-bg")
    for i in range(50):
        background.write(i)
    background.close()
    assert [i for i, _ in seen] == list(range(50))
    assert {name for _, name in seen} == {"t-bg"}


def test_an_error_on_the_thread_surfaces_in_the_caller() -> None:
    def consume(item: object) -> None:
        raise StoreError("the store failed")

    background = Background(consume)
    background.write(1)
    raised: list[StoreError] = []

    def next_write_raises() -> bool:  # the next write after the failure raises it
        try:
            background.write(2)
        except StoreError as e:
            raised.append(e)
        return bool(raised)

    wait_for(next_write_raises, timeout=5, what="the thread's error raised in the caller")
    assert str(raised[0]) == "the store failed"
    with pytest.raises(StoreError, match="the store failed"):
        background.close()


class Blocking:
    """A consumer that blocks on each item until released, and says when it has taken one."""

    def __init__(self) -> None:
        self.taken = threading.Event()
        self.release = threading.Event()
        self.consumed: list[int] = []

    def __call__(self, item: int) -> None:
        self.taken.set()
        self.release.wait(5)
        self.consumed.append(item)


def test_memory_is_bounded_the_caller_waits_for_a_slow_consumer() -> None:
    consume = Blocking()
    background = Background(consume, depth=1)
    background.write(1)
    assert consume.taken.wait(5)  # taken by the thread, which blocks
    background.write(2)  # waits in the queue
    blocked = threading.Thread(target=background.write, args=(3,))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # a third item has to wait
    consume.release.set()
    blocked.join(5)
    background.close()
    assert consume.consumed == [1, 2, 3]


def test_abort_drops_what_is_queued() -> None:
    consume = Blocking()
    background = Background(consume, depth=1)
    background.write(1)
    assert consume.taken.wait(5)
    background.write(2)
    threading.Timer(0.1, consume.release.set).start()  # abort must wait for the item in hand
    background.abort()
    assert consume.consumed == [1]


@pytest.mark.parametrize("store", ["moto"], indirect=True)
def test_s3_writer_goes_on_while_a_part_uploads(store: S3Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(s3task.store.s3, "PART_SIZE", 5 * MIB)
    real = store.data_client
    release = threading.Event()
    uploading: list[str] = []

    class HeldParts:
        def upload_part(self, **kwargs):
            uploading.append(threading.current_thread().name)
            if not release.wait(10):
                raise AssertionError("the writer waited for the upload")
            return real.upload_part(**kwargs)

        def __getattr__(self, name):
            return getattr(real, name)

    store.data_client = HeldParts()
    body = [b"a" * (5 * MIB), b"b" * (5 * MIB), b"c" * 1000]
    with store.open_write("t/big.csv", PutMode.CREATE) as w:
        w.write(body[0])  # part 1: handed to the upload thread, which is held
        w.write(body[1])  # part 2 queued behind it: the writer is not blocked by part 1
        release.set()
        w.write(body[2])
    assert uploading == ["s3task-upload"] * 3
    assert store.get("t/big.csv").body == b"".join(body)
    assert store.head("t/big.csv").etag == w.etag
