"""Recipes' inboxes on the local store, moto's S3 over HTTP, SeaweedFS, LocalStack, fake-gcs-server and
Azurite: each file dropped becomes one task, once, whoever sweeps and wherever a sweeper dies; what
cannot become a task is said in words and kept.

Sweepers run in this process (``service.inboxes.sweeper``), each on its own service as each worker has
one; ``lease=False`` lets several sweep at once, as workers that all think they hold the lease would.
The local store takes a file at its second sweep (its size and time unchanged: a ``cp`` is not atomic);
S3 lists an object only once it is whole, so it is taken at the first.
"""

from __future__ import annotations

import os
import shlex
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import make_store
from inboxkit import ANN, CSV, LAYOUT, OPERATOR, Counting, Died, Dying, Wrapped, drop, inbox_keys, recipe, tasks_named

from s3task.errors import AccessDenied
from s3task.records import read_record
from s3task.store.base import MultipartStore, PutMode
from s3task.tasks import Actor, TaskService
from s3task.tasks.inbox_files import Claim
from s3task.tasks.inbox_sweep import InboxSweeper
from s3task.tasks.recipes import Recipe

INTERVAL = 300.0


@pytest.fixture(params=["local", "moto_http", "seaweedfs", "localstack", "fake_gcs", "azurite"])
def store(request: pytest.FixtureRequest, tmp_path):
    return make_store(request.param, tmp_path, request)


@pytest.fixture
def service(store) -> TaskService:
    return TaskService(store, LAYOUT)


def sweeper(store, holder: str = "w1", *, lease: bool = True, claim_seconds: float = 120.0) -> InboxSweeper:
    """A worker's sweeper, on a service of its own (as each worker has)."""
    return TaskService(store, LAYOUT).inboxes.sweeper(
        holder, interval=INTERVAL, lease=lease, claim_seconds=claim_seconds
    )


def settle(s: InboxSweeper) -> list[Claim]:
    """Two sweeps: what the local store's two-sweep rule needs; on S3 the second finds nothing."""
    return s.sweep().taken + s.sweep().taken


def input_of(store, task_id: str) -> bytes:
    return store.get(LAYOUT.input_key(task_id)).body


def test_a_dropped_file_becomes_one_task_of_the_recipes_owner_and_leaves_the_inbox(service, store) -> None:
    made, rid = recipe(service)
    key = drop(store, rid, "2024-05.csv")
    taken = settle(sweeper(store))
    assert [c.state for c in taken] == ["taken"]
    [task] = tasks_named(service, "2024-05.csv")
    assert (task.created_by, task.task_type, task.status) == ("ann", made.task_type, "queued")
    assert task.input_format.to_dict() == made.input_format and task.payload == made.params
    assert (task.recipe_id, task.recipe_version) == (rid, made.version)  # the task names its recipe
    assert input_of(store, task.task_id) == CSV
    assert inbox_keys(store, rid) == [], "the file is moved under its task"
    assert taken[0].task_id == task.task_id and taken[0].key == key
    [shown] = service.inboxes.list(ANN)
    assert shown.recipe_id == rid == "own/ann/crm-weekly" and shown.waiting == []
    assert [c.task_id for c in shown.taken] == [task.task_id]
    assert LAYOUT.inbox_prefix(rid) in shown.command
    assert settle(sweeper(store, "w2")) == [], "nothing is taken twice"
    assert len(tasks_named(service, "2024-05.csv")) == 1


def test_the_drop_command_shown_names_the_place_a_sweep_takes_files_from(service, store) -> None:
    """The command the Inboxes page shows, followed to the letter: the folder, bucket or container and the
    name come from its words (the cloud CLIs are not here: the store's own client puts the file where the
    command says; on S3 the endpoint the command names must be the store's, as it is for a non-AWS one)."""
    recipe(service)
    [shown] = service.inboxes.list(ANN)
    words = shlex.split(shown.command)
    if words[:3] == ["aws", "s3", "cp"]:
        url = urlsplit(words[4] + "2024-06.csv")
        endpoint = words[words.index("--endpoint-url") + 1] if "--endpoint-url" in words else None
        assert endpoint == store.client.meta.endpoint_url  # a test server, never AWS's own: the CLI is told it
        store.client.put_object(Bucket=url.netloc, Key=url.path.lstrip("/"), Body=CSV)  # the store's credentials
    elif words[0] == "mkdir":
        folder = Path(words[2])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "2024-06.csv").write_bytes(CSV)
    elif words[:3] == ["gcloud", "storage", "cp"]:  # the bucket and the object's name as the command has them
        url = urlsplit(words[4] + "2024-06.csv")
        assert url.netloc == store.bucket.name
        store.bucket.blob(url.path.lstrip("/")).upload_from_string(CSV)
    else:
        assert words[:4] == ["az", "storage", "blob", "upload"], shown.command
        container = words[words.index("--container-name") + 1]
        assert container == store.client.container_name
        store.client.upload_blob(words[words.index("--name") + 1].replace("FILE", "2024-06.csv"), CSV)
    taken = settle(sweeper(store))
    assert [c.state for c in taken] == ["taken"] and tasks_named(service, "2024-06.csv")


def test_four_sweepers_racing_take_each_file_exactly_once(service, store) -> None:
    _, rid = recipe(service)
    names = [f"part-{i}.csv" for i in range(6)]
    for i, name in enumerate(names):
        drop(store, rid, name, CSV + f"{i},n{i},n{i}@example.com\n".encode())
    sweepers = [sweeper(store, f"w{i}", lease=False) for i in range(4)]
    start = threading.Barrier(4)

    def race(s: InboxSweeper) -> list[Claim]:
        start.wait()
        return settle(s)

    with ThreadPoolExecutor(4) as pool:
        claims = [c for got in pool.map(race, sweepers) for c in got]
    for i, name in enumerate(names):
        [task] = tasks_named(service, name)
        assert input_of(store, task.task_id).endswith(f"{i},n{i},n{i}@example.com\n".encode())
    assert {c.name for c in claims} == set(names) and {c.state for c in claims} == {"taken"}
    assert inbox_keys(store, rid) == []


def test_one_sweeper_holds_the_lease_until_it_gives_it_up(service, store) -> None:
    _, rid = recipe(service)
    first, second = sweeper(store, "w1"), sweeper(store, "w2")
    assert first.sweep().held and not second.sweep().held
    drop(store, rid, "a.csv")
    assert settle(second) == [], "a worker without the lease takes nothing"
    assert len(settle(first)) == 1
    first.release()
    assert second.sweep().held, "a lease given up is taken at the next sweep"


def test_an_expired_lease_is_taken_over(service, store) -> None:
    assert sweeper(store, "w1").sweep().held
    assert not sweeper(store, "w2").sweep().held
    assert sweeper(Wrapped(store, later=6 * INTERVAL + 1), "w2").sweep().held


def test_a_header_that_does_not_fit_fails_the_task_for_good_in_words(service, store) -> None:
    _, rid = recipe(service)
    drop(store, rid, "other.csv", b"sku,price\nA1,3\n")
    [claim] = settle(sweeper(store))
    [task] = tasks_named(service, "other.csv")
    assert task.status == "failed" and task.final
    assert "does not fit recipe “CRM weekly”" in task.last_error
    assert "no column id, name, email" in task.last_error and "sku, price" in task.last_error
    assert claim.state == "taken" and task.last_error in claim.words
    assert input_of(store, task.task_id) == b"sku,price\nA1,3\n", "the file is kept, under its task"
    assert inbox_keys(store, rid) == []


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "not utf-8 text"),
        (b"PK\x03\x04not really a workbook", "no column id, name, email"),
    ],
    ids=["empty", "image", "broken workbook"],
)
def test_a_file_of_another_format_or_empty_fails_in_words(service, store, data: bytes, words: str) -> None:
    _, rid = recipe(service)
    drop(store, rid, "odd.csv", data)
    settle(sweeper(store))
    [task] = tasks_named(service, "odd.csv")
    assert task.status == "failed" and task.final, task
    assert "does not fit recipe" in task.last_error and words in task.last_error.lower(), task.last_error
    assert inbox_keys(store, rid) == []


def test_a_name_with_control_characters_is_taken_under_a_visible_name(service, store) -> None:
    if "az://" in store.description:
        pytest.skip("Azurite stores such a name, then answers every listing that holds it with a 500")
    _, rid = recipe(service)
    drop(store, rid, "sub/week\x07\x1b[31m.csv")
    [claim] = settle(sweeper(store))
    [task] = tasks_named(service, "week\\u0007\\u001b[31m.csv")
    assert task.status == "queued" and claim.task_id == task.task_id
    assert inbox_keys(store, rid) == []


def test_a_file_for_a_removed_recipe_waits_in_words_and_is_taken_once_it_is_saved_again(service, store) -> None:
    _, rid = recipe(service)
    service.recipes.remove(ANN, "CRM weekly")
    key = drop(store, rid, "late.csv")
    s = sweeper(store)
    s.sweep()
    swept = s.sweep()
    assert swept.taken == [] and any("there is no recipe own/ann/crm-weekly" in n for n in swept.notes)
    assert inbox_keys(store, rid) == [key] and tasks_named(service, "late.csv") == []
    assert service.inboxes.strays() == [key]
    recipe(service)
    assert [c.state for c in settle(s)] == ["taken"]
    assert len(tasks_named(service, "late.csv")) == 1


def test_files_outside_a_recipes_inbox_and_folder_markers_are_left_alone(service, store) -> None:
    _, rid = recipe(service)
    loose = LAYOUT.inbox_root + "loose.csv"
    store.put(loose, CSV, PutMode.OVERWRITE)
    if not getattr(store, "lists_partial_objects", False):  # a directory is no object on the local store
        store.put(LAYOUT.inbox_prefix(rid), b"", PutMode.OVERWRITE)  # a console's "Create folder"
    s = sweeper(store)
    swept = [s.sweep(), s.sweep()]
    assert all(not x.taken for x in swept)
    assert any("in no recipe's inbox" in n for n in swept[-1].notes)
    assert loose in store.list_keys(LAYOUT.inbox_root)
    assert service.inboxes.strays() == [loose]


def test_hidden_and_temporary_files_wait_until_renamed_to_their_own_names(service, store) -> None:
    """A Mac's .DS_Store, rsync's hidden copy under way, an SFTP client's .filepart: none is a file dropped to
    become a task. Each is left where it is, said in words; renamed (as the copying program does), it is taken."""
    _, rid = recipe(service)
    names = [".DS_Store", ".report.csv.Xy12ab", "report.csv.filepart", "sub/.hidden.csv", "export.csv.tmp"]
    for name in names:
        drop(store, rid, name)
    s = sweeper(store)
    swept = [s.sweep(), s.sweep()]
    assert all(not x.taken for x in swept) and tasks_named(service, "report.csv") == []
    assert sum("a hidden or temporary file's name" in n for n in swept[-1].notes) == len(names)
    assert sorted(inbox_keys(store, rid)) == sorted(LAYOUT.inbox_prefix(rid) + n for n in names)
    drop(store, rid, "report.csv")  # the copy whole, under its own name
    store.delete(LAYOUT.inbox_prefix(rid) + "report.csv.filepart")
    assert [c.state for c in settle(s)] == ["taken"] and len(tasks_named(service, "report.csv")) == 1


def test_a_paused_inbox_keeps_its_files_until_it_is_resumed(service, store) -> None:
    _, rid = recipe(service)
    assert service.inboxes.pause(ANN, "CRM weekly").paused
    key = drop(store, rid, "held.csv")
    s = sweeper(store)
    assert settle(s) == [] and inbox_keys(store, rid) == [key]
    with pytest.raises(AccessDenied):
        service.inboxes.resume(Actor("bob"), rid)
    assert not service.inboxes.resume(OPERATOR, rid).paused
    assert len(settle(s)) == 1 and inbox_keys(store, rid) == []


def test_a_file_replaced_after_it_was_taken_is_a_new_version_and_a_new_task(service, store) -> None:
    _, rid = recipe(service)
    drop(store, rid, "same.csv")
    s = sweeper(store)
    settle(s)
    drop(store, rid, "same.csv", CSV + b"3,cy,cy@example.com\n")
    settle(s)
    assert sorted(len(input_of(store, t.task_id)) for t in tasks_named(service, "same.csv")) == [
        len(CSV),
        len(CSV) + 20,
    ]


def test_the_same_file_dropped_again_after_it_was_taken_is_a_new_task(service, store) -> None:
    """The same export dropped again once the first was taken: the same bytes at the same time (``cp -p``
    on the local store; on S3, within the second it dates objects to). A new drop, a new task — not
    deleted unseen as a leftover of the first."""
    _, rid = recipe(service)
    key = drop(store, rid, "again.csv")
    on_disk = getattr(store, "root", None)
    when = os.stat(on_disk / key).st_mtime_ns if on_disk is not None else None
    s = sweeper(store)
    assert [c.state for c in settle(s)] == ["taken"] and inbox_keys(store, rid) == []
    drop(store, rid, "again.csv")
    if when is not None:
        os.utime(on_disk / key, ns=(when, when))  # cp -p: the time the first copy had
    assert [c.state for c in settle(s)] == ["taken"]
    tasks = tasks_named(service, "again.csv")
    assert len(tasks) == 2 and all(input_of(store, t.task_id) == CSV for t in tasks)
    assert inbox_keys(store, rid) == [] and settle(s) == []


def test_a_local_file_written_over_while_it_is_copied_is_not_taken_as_the_version_claimed(service, store) -> None:
    """On the local store a file is read as it is on disk: one written over during the copy (the same size,
    other bytes) cancels the task made for the version claimed; the new version becomes a task of its own,
    with its own bytes."""
    if getattr(store, "root", None) is None:
        pytest.skip("an object store reads the one version asked for")
    _, rid = recipe(service)
    key = drop(store, rid, "moving.csv")
    newer = CSV.replace(b"ann", b"zed")

    class WrittenOver(Wrapped):
        def open_read(self, read_key: str, **kwargs):
            if read_key == key:
                path = store.root / key
                path.write_bytes(newer)  # another program writes over the file while it is being read
                os.utime(path, ns=(time.time_ns() + 10**9,) * 2)
            return self.inner.open_read(read_key, **kwargs)

    s = TaskService(WrittenOver(store), LAYOUT).inboxes.sweeper("w1", interval=INTERVAL)
    taken = settle(s)
    assert [c.state for c in taken] == ["taken"] and "replaced before or while it was copied" in taken[0].words
    assert [t.status for t in tasks_named(service, "moving.csv")] == ["abandoned"]  # cancelled before it was queued
    settle(sweeper(store, "w2", lease=False))  # the version now there, with its own claim (w1 holds the lease)
    done = [t for t in tasks_named(service, "moving.csv") if t.status == "queued"]
    assert len(done) == 1 and input_of(store, done[0].task_id) == newer


def test_a_sweeper_dying_at_any_write_loses_nothing_and_takes_nothing_twice(service, store) -> None:
    """Die at each write a take makes (claim, task marker, record, input, submit, claim, delete), then let
    a sweeper whose clock is past the claim's expiry carry on: one task, the file's bytes, an empty inbox."""
    _, rid = recipe(service)
    probe = Dying(store)
    drop(store, rid, "probe.csv")
    settle(sweeper(probe, lease=False))
    writes = probe.writes
    assert writes >= 7, probe.done
    for at in range(writes):
        name = f"crash-{at}.csv"
        drop(store, rid, name)
        dying = sweeper(Dying(store, at), lease=False)
        with pytest.raises(Died):
            settle(dying)
        settle(sweeper(Wrapped(store, later=3600), "rescuer", lease=False))
        tasks = tasks_named(service, name)
        assert len(tasks) == 1, f"died at write {at} ({probe.done[at]}): {len(tasks)} tasks"
        assert tasks[0].status == "queued" and input_of(store, tasks[0].task_id) == CSV
        assert inbox_keys(store, rid) == [], f"died at write {at}: the file is still in the inbox"
        assert read_record(store, LAYOUT, tasks[0].task_id)[0].created_by == "ann"


def test_an_upload_in_parts_not_completed_is_not_taken(service, store) -> None:
    if not isinstance(store, MultipartStore):
        pytest.skip("the local store takes no uploads in parts (its two-sweep rule is tested apart)")
    _, rid = recipe(service)
    key = LAYOUT.inbox_prefix(rid) + "big.csv"
    upload = store.create_multipart(key, content_type="text/csv")
    etag = store.upload_part(key, upload, 1, CSV)
    s = sweeper(store)
    assert settle(s) == [] and tasks_named(service, "big.csv") == []
    store.complete_multipart(key, upload, [(1, etag)])
    assert [c.state for c in settle(s)] == ["taken"]
    [task] = tasks_named(service, "big.csv")
    assert input_of(store, task.task_id) == CSV


def test_the_local_store_takes_a_file_once_it_stayed_the_same_for_a_sweep(service, store) -> None:
    if not getattr(store, "lists_partial_objects", False):
        pytest.skip("S3 lists an object only once it is whole")
    _, rid = recipe(service)
    path = store.root / LAYOUT.inbox_prefix(rid) / "growing.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(CSV[:10])  # a cp under way
    s = sweeper(store)
    assert s.sweep().taken == []
    with path.open("ab") as f:
        f.write(CSV[10:])
    swept = s.sweep()
    assert swept.taken == [] and any("waits one sweep" in n for n in swept.notes)
    assert [c.state for c in s.sweep().taken] == ["taken"]
    [task] = tasks_named(service, "growing.csv")
    assert input_of(store, task.task_id) == CSV


def test_an_idle_sweep_costs_one_listing_and_a_lease_write_in_three(service, store) -> None:
    """An hour of idle sweeps at the default interval, the store's clock moved on a sweep at a time."""
    counted = Counting(store)
    clock = Wrapped(counted)
    holder, other = sweeper(clock, "w1"), sweeper(clock, "w2")
    counted.calls.clear()
    for _ in range(12):
        assert holder.sweep().held
        clock.later += INTERVAL
    puts = counted.calls.pop("put")
    assert dict(counted.calls) == {"get": 1, "list_keys": 12}, counted.calls
    assert 3 <= puts <= 4, f"{puts} lease writes in an hour: its create, then one when half of it is left"
    counted.calls.clear()
    for _ in range(12):
        assert not other.sweep().held
    assert dict(counted.calls) == {"get": 12}, "a worker without the lease only looks at it"


def test_a_recipe_that_can_no_longer_make_a_task_keeps_the_file_and_says_why(service, store) -> None:
    made, rid = recipe(service)
    gone = Recipe(**{**asdict(made), "task_type": "retired_type"})  # a type no longer registered
    store.put(LAYOUT.recipe_key_of(rid), gone.to_json(), PutMode.OVERWRITE)
    key = drop(store, rid, "kept.csv")
    s = sweeper(store)
    claim = settle(s)[-1]  # S3 takes it at the first sweep, and finds it kept at the second
    assert claim.state == "kept" and "cannot make a task of it now" in claim.words and "retired_type" in claim.words
    assert inbox_keys(store, rid) == [key] and tasks_named(service, "kept.csv") == []
    assert {c.state for c in settle(s)} == {"kept"}, "found kept, not tried again"
    assert tasks_named(service, "kept.csv") == []
