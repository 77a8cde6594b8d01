"""What one user can make a service hold (issue 26, item 3): the caches of records bounded in bytes,
and the per-user limits on creates a minute and on parameter size."""

from __future__ import annotations

import gc
import tracemalloc

import pytest
from faults import save_figures

from s3task.errors import InvalidInput, TooManyRequests
from s3task.layout import Layout
from s3task.tasks import Actor, CreateLimits, TaskService
from s3task.tasks.limits import CreateRate, SizedCache
from s3task.tasks.looking import REMEMBERED_FINISHED_BYTES
from s3task.tasks.transitions import REMEMBERED_CREATES_BYTES
from s3task.testing import MemoryStore

ANN, BOB = Actor("ann"), Actor("bob")
TASKS = 1500
#: 60 KB of parameters, as the review sent (just under the 64 KiB every record may hold).
BIG = {"email_column": "x" * 60_000}


@pytest.mark.slow  # 1,500 creates under tracemalloc: about 20 s
def test_what_a_service_keeps_of_thousands_of_large_tasks_is_bounded_in_bytes() -> None:
    store = MemoryStore()  # its own, not a process-wide memory:// one: dropped with the test
    service = TaskService(store, Layout(), limits=CreateLimits(per_minute=0, params_bytes=64 * 1024))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(TASKS):
            task_id = service.create(ANN, f"t{i}", "email_enrichment", BIG).record.task_id
            service.cancel(ANN, task_id)
            service.get(ANN, task_id)  # a finished record read back: cached
        # What the store holds is the store's; what the service keeps is what is measured.
        store_bytes = sum(len(o.body) for o in store._objects.values())
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before - store_bytes
    finally:
        tracemalloc.stop()
    transitions = service._transitions
    assert transitions._created.bytes <= REMEMBERED_CREATES_BYTES
    assert transitions.looking._finished.bytes <= REMEMBERED_FINISHED_BYTES
    bound = REMEMBERED_CREATES_BYTES + REMEMBERED_FINISHED_BYTES
    save_figures(
        "misuse_cache",
        {"tasks": TASKS, "params_bytes": 60_000, "kept_mb": round(kept / 2**20, 1), "bound_mb": bound // 2**20},
    )
    # Unbounded, 1,500 finished records of 60 KB and 500 created ones would be about 120 MB.
    assert kept < 1.5 * bound, f"the service keeps {kept / 2**20:.0f} MB after {TASKS} tasks"


def test_a_user_past_the_creates_a_minute_is_refused_saying_when_to_try_again() -> None:
    service = TaskService(MemoryStore(), Layout(), limits=CreateLimits(per_minute=5))
    for i in range(5):
        service.create(ANN, f"t{i}", "copy")
    with pytest.raises(TooManyRequests) as refused:
        service.create(ANN, "one more", "copy")
    assert "5 tasks in the last minute" in refused.value.message
    assert "S3TASK_MAX_CREATES_PER_MINUTE" in refused.value.message
    assert 1 <= refused.value.retry_after <= 60
    service.create(BOB, "bob's own", "copy")  # per user: the others are not held back
    names = [t.task_name for t in service.list(ANN, limit=50).tasks]
    assert "one more" not in names and len(names) == 6


def test_a_create_refused_for_its_input_does_not_count() -> None:
    service = TaskService(MemoryStore(), Layout(), limits=CreateLimits(per_minute=2))
    for _ in range(5):
        with pytest.raises(InvalidInput):
            service.create(ANN, "", "copy")
    service.create(ANN, "a", "copy")
    service.create(ANN, "b", "copy")


def test_the_window_slides() -> None:
    now = [1000.0]
    rate = CreateRate(2, clock=lambda: now[0])
    rate.take("ann")
    now[0] += 30
    rate.take("ann")
    with pytest.raises(TooManyRequests) as refused:
        rate.take("ann")
    assert refused.value.retry_after == 30
    now[0] += 30.5
    rate.take("ann")  # the first has left the window
    now[0] += 120
    rate.take("bob")
    assert list(rate._seen) == ["bob"]  # users with nothing in the window are forgotten


def test_parameters_past_the_setting_are_refused_naming_it() -> None:
    service = TaskService(MemoryStore(), Layout(), limits=CreateLimits(params_bytes=16 * 1024))
    with pytest.raises(InvalidInput) as refused:
        service.create(ANN, "big", "email_enrichment", {"email_column": "x" * 20_000})
    assert "at most 16 KiB" in refused.value.message and "S3TASK_MAX_PARAMETERS_KB" in refused.value.message
    service.create(ANN, "fits", "email_enrichment", {"email_column": "x" * 15_000})


def test_a_sized_cache_drops_its_oldest_past_either_bound() -> None:
    cache: SizedCache[str] = SizedCache(max_entries=3, max_bytes=100)
    for key, size in (("a", 40), ("b", 40), ("c", 40)):
        cache.put(key, key, size)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), cache.bytes) == (None, "b", "c", 80)
    cache.put("huge", "h", 101)  # bigger than the whole cache: not kept, nothing else dropped
    assert (len(cache), cache.get("huge")) == (2, None)
    assert cache.pop("b") == "b" and cache.bytes == 40
