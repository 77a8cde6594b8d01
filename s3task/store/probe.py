"""Prove that a store enforces conditional writes before trusting it with task state.

Some S3-compatible stores silently ignore If-Match / If-None-Match; on them
two workers could both "win" a claim. The probe runs on a key unique to this
run and removes what it wrote.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Callable

from ..errors import AlreadyExists, PreconditionFailed, S3TaskError, StoreError, UnsafeStore
from .base import ObjectStore, PutMode

BURST = 8


def cas_probe(store: ObjectStore, prefix: str) -> None:
    """Raise :class:`UnsafeStore` (or the store's own error) unless conditions are enforced."""
    base = f"{prefix.strip('/')}/_probe/{secrets.token_hex(8)}"
    key = base + "/cas"
    written: list[str] = [key]
    try:
        etag = store.put(key, b"one", PutMode.CREATE)
        _expect_refused(
            lambda: store.put(key, b"two", PutMode.CREATE), AlreadyExists, "a second create of the same key succeeded"
        )
        _expect_refused(
            lambda: store.put(key, b"three", PutMode.update('"0123456789abcdef0123456789abcdef"')),
            PreconditionFailed,
            "an update with a wrong ETag succeeded",
        )
        new_etag = store.put(key, b"four", PutMode.update(etag))
        if store.get(key).body != b"four" or new_etag == etag:
            raise UnsafeStore("an update with the right ETag did not take effect")
        # An ETag the key really had: a store whose ETags are versions (GCS's generations) can refuse a
        # made-up one without asking the server, never this one.
        _expect_refused(
            lambda: store.put(key, b"five", PutMode.update(etag)),
            PreconditionFailed,
            "an update with the ETag of an earlier version succeeded",
        )
        burst_key = base + "/burst"
        written.append(burst_key)
        winners = _burst(store, burst_key)
        if winners != 1:
            raise UnsafeStore(f"{winners} of {BURST} parallel creates of one key succeeded; exactly one must")
    finally:
        for k in written:
            with contextlib.suppress(S3TaskError):
                store.delete(k)


def _expect_refused(call: Callable[[], object], expected: type[StoreError], problem: str) -> None:
    try:
        call()
    except expected:
        return
    raise UnsafeStore(f"The store does not enforce conditional writes: {problem}.")


def _burst(store: ObjectStore, key: str) -> int:
    barrier = threading.Barrier(BURST)
    results: list[bool] = []
    errors: list[Exception] = []
    lock = threading.Lock()

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            store.put(key, str(i).encode(), PutMode.CREATE)
            ok = True
        except AlreadyExists:
            ok = False
        except Exception as e:  # the store's own error: reported, not counted as a verdict
            with lock:
                errors.append(e)
            return
        with lock:
            results.append(ok)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(BURST)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sum(results)
