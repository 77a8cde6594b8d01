"""Task ids: inverted ULIDs that list newest first, carry their creation time, and refuse anything else."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from conftest import wait_for

from s3task.errors import InvalidTaskId
from s3task.ids import ID_LENGTH, created_at, created_ms, is_task_id, new_task_id, validate_task_id
from s3task.layout import Layout


def test_ids_a_millisecond_apart_sort_newest_first() -> None:
    base = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    ids = [new_task_id(base + ms) for ms in range(0, 50)]
    assert sorted(ids) == ids[::-1]


def test_ids_made_now_sort_newest_first() -> None:
    first = new_task_id()
    start_ms = created_ms(first)
    wait_for(lambda: time.time_ns() // 1_000_000 > start_ms, timeout=5, what="the clock to move on a millisecond")
    second = new_task_id()
    assert second < first
    assert sorted([first, second]) == [second, first]


def test_ids_from_the_same_millisecond_are_distinct_and_fixed_width() -> None:
    ids = {new_task_id(1_767_225_600_000) for _ in range(1000)}
    assert len(ids) == 1000
    assert {len(i) for i in ids} == {ID_LENGTH}


def test_creation_time_round_trips() -> None:
    for ms in (0, 1, 1_767_225_600_123, 2**48 - 1):
        assert created_ms(new_task_id(ms)) == ms
    before = time.time_ns() // 1_000_000
    task_id = new_task_id()
    after = time.time_ns() // 1_000_000
    assert before <= created_ms(task_id) <= after
    assert created_at(new_task_id(1_767_225_600_123)) == datetime(2026, 1, 1, 0, 0, 0, 123_000, tzinfo=UTC)


def test_timestamps_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError):
        new_task_id(-1)
    with pytest.raises(ValueError):
        new_task_id(2**48)


def test_a_fresh_id_validates() -> None:
    task_id = new_task_id()
    assert validate_task_id(task_id) == task_id
    assert is_task_id(task_id)


#: A fixed id (new_task_id(1_767_225_600_000) once): parameters must be the same in every collecting process.
GOOD = "7YCJ4JANZZNAMAY9EV4CC6NNAR"


@pytest.mark.parametrize(
    "bad",
    [
        "../" + GOOD[3:],
        GOOD[:20] + "/../x",
        "%2e%2e" + GOOD[6:],
        "%2E%2E%2F" + GOOD[9:],
        "/" + GOOD[1:],
        GOOD[:-1] + "\x00",
        "",
        GOOD[:-1],  # 25 characters
        GOOD + "0",  # 27 characters
        GOOD[:-1] + "I",
        GOOD[:-1] + "L",
        GOOD[:-1] + "O",
        GOOD[:-1] + "U",
        GOOD.lower(),
        GOOD[:-1] + "a",
        "8" + GOOD[1:],  # the first character carries 3 bits only: 8 would overflow 48 bits
        GOOD[:-1] + " ",
        GOOD[:-1] + "\n",
        None,
        12345,
        GOOD.encode(),
    ],
)
def test_validation_refuses_anything_but_an_id(bad: object) -> None:
    with pytest.raises(InvalidTaskId, match="not a valid task id"):
        validate_task_id(bad)
    assert not is_task_id(bad)


def test_no_key_is_built_from_an_invalid_id() -> None:
    layout = Layout("batch-tasks")
    for bad in ("../../etc/passwd", "%2e%2e", "/abs", "a\x00b"):
        for make_key in (layout.status_key, layout.input_key, layout.active_key, layout.task_prefix):
            with pytest.raises(InvalidTaskId):
                make_key(bad)


def test_error_message_is_short_even_for_huge_input() -> None:
    with pytest.raises(InvalidTaskId) as info:
        validate_task_id("x" * 100_000)
    assert len(str(info.value)) < 200
