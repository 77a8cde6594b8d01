"""``Records``: what a compare-and-set write hands back to its caller, and the hook it tells.

What a change function decided on comes back with the write (``Written.before``), so callers such as
cancel (which signals the worker of a task that was running) and the worker's lease-expiry check do
not need to smuggle it out of the change through a closure.
"""

from __future__ import annotations

from typing import Any

import pytest
from recordkit import LAYOUT, Wrapper, make_record, submit

from s3task import lifecycle
from s3task.errors import NotOwner
from s3task.progress import Progress
from s3task.records import Records
from s3task.store.base import ObjectStore


def test_written_says_what_the_winning_change_was_decided_on(local_store: ObjectStore) -> None:
    """A cancel that loses a race to a claim is decided again: ``before`` is the claimed record, not the first read."""
    records = Records(local_store, LAYOUT)
    record, _ = records.create(make_record())
    queued = records.update(record.task_id, submit)

    class ClaimedMeanwhile(Wrapper):
        def on_update(self, key, body, mode, **kwargs):
            if self.updates == 1:  # someone claims just before our first write lands
                Records(self.inner, LAYOUT).update(
                    queued.task_id, lambda r, t: lifecycle.claim(r, t, worker_id="w", lease_seconds=60)[0]
                )
            return self.inner.put(key, body, mode, **kwargs)

    written = Records(ClaimedMeanwhile(local_store), LAYOUT).write(
        queued.task_id, lambda r, t: lifecycle.cancel(r, t, by="ada")
    )
    assert written.changed and written.record.status == "abandoned"
    assert written.before.status == "running" and written.before.attempt_id == 1
    assert written.record == records.read(queued.task_id)[0]
    assert written.etag == records.read(queued.task_id)[1]


def test_nothing_to_do_writes_nothing_and_says_so(local_store: ObjectStore) -> None:
    records = Records(local_store, LAYOUT)
    record, etag = records.create(make_record())
    written = records.write(record.task_id, lambda r, t: None)
    assert not written.changed and written.record == written.before == record and written.etag == etag


def test_the_lease_a_claim_wrote_is_read_back_from_its_record(local_store: ObjectStore) -> None:
    records = Records(local_store, LAYOUT)
    record, _ = records.create(make_record())
    queued = records.update(record.task_id, submit)
    claimed, lease = lifecycle.claim(queued, local_store.now(), worker_id="w1", lease_seconds=60)
    assert lifecycle.lease_of(claimed) == lease
    with pytest.raises(NotOwner):
        lifecycle.lease_of(queued)


def test_no_hook_no_announcement_and_a_hook_hears_only_state_changes(local_store: ObjectStore) -> None:
    heard: list[tuple[str, str, bool]] = []

    class Hook:
        def before(self, store: Any, layout: Any, old: Any, new: Any) -> Any:
            class Note:
                def done(self, won: bool) -> None:
                    heard.append((old.status, new.status, won))

            return Note()

    quiet = Records(local_store, LAYOUT)
    record, _ = quiet.create(make_record())
    quiet.update(record.task_id, submit)  # no hook: nobody to tell
    told = Records(local_store, LAYOUT, Hook())
    claimed = told.update(record.task_id, lambda r, t: lifecycle.claim(r, t, worker_id="w", lease_seconds=60)[0])
    lease = lifecycle.lease_of(claimed)
    told.update(
        record.task_id, lambda r, t: lifecycle.heartbeat(r, t, lease=lease, lease_seconds=60, progress=Progress())
    )
    assert heard == [("queued", "running", True)]  # the heartbeat kept the state: not announced
