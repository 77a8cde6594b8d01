"""``s3task submit FILE --resume``: a CLI upload killed part-way continues into the same task,
sending only the parts the store does not hold (issue 24, item 2).

Real processes: the CLI over HTTP to moto's S3 server, killed with SIGKILL by the test crash hook
(tests/crashhook.py, loaded with ``--handlers crashhook``) right after its Nth part has landed; the
resumed run goes through a counting proxy, so the parts it sends are counted at the store's door.
"""

from __future__ import annotations

import csv
import io
import signal
from pathlib import Path
from typing import Any

import pytest
from procs import child_env, cli, run, worker_args
from s3proxy import counting_proxy

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store.local import LocalStore
from s3task.store.s3 import S3Store
from s3task.tasks.resumable import PART_SIZE

MB = 1 << 20
LAYOUT = Layout("batch-tasks")
#: Six parts: five of 8 MiB and a last one of about 3 MiB.
PARTS = 6


def big_csv(path: Path, marker: bytes = b"") -> bytes:
    """A CSV of a little more than five parts, each line numbered (so every part has bytes of its own)."""
    lines = [b"id,value\n"]
    size, n = len(lines[0]), 0
    while size < (PARTS - 1) * PART_SIZE + 3 * MB:
        line = b"%08d,row %08d%s\n" % (n, n, marker)
        lines.append(line)
        size += len(line)
        n += 1
    data = b"".join(lines)
    path.write_bytes(data)
    return data


def on_moto(request: pytest.FixtureRequest) -> tuple[str, str, S3Store]:
    from conftest import boto_client

    endpoint, bucket = request.getfixturevalue("moto_http_bucket")
    return endpoint, bucket, S3Store(bucket, client=boto_client(endpoint))


def submit(url: str, env: dict[str, str], path: Path, *extra: str, name: str = "big") -> Any:
    return cli("--store", url, "--handlers", "crashhook", "submit", str(path), "--name", name, *extra, env=env)


def killed_after(url: str, env: dict[str, str], path: Path, point: str, tmp: Path, *extra: str) -> None:
    """A submit SIGKILLed right after ``point`` (a crash hook point), as a laptop lid or ``kill -9`` would."""
    crash = {"S3TASK_TEST_CRASH_AT": point, "S3TASK_TEST_CRASH_ONCE": str(tmp / "crashed")}
    done = submit(url, {**env, **crash}, path, *extra)
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stderr)


def tasks_of(store: Any) -> list[Any]:
    ids = [LAYOUT.task_id_of(k) for k in store.list_prefixes(LAYOUT.root)]
    return [read_record(store, LAYOUT, i)[0] for i in ids if i]


def part_puts(log: Any) -> list[int]:
    """The part numbers sent through the proxy (UploadPart is a PUT with ``partNumber`` and ``uploadId``)."""
    from urllib.parse import parse_qs, urlparse

    found = []
    for _, method, path in log.since(0):
        query = parse_qs(urlparse(path).query)
        if method == "PUT" and "partNumber" in query and "uploadId" in query:
            found.append(int(query["partNumber"][0]))
    return sorted(found)


def test_a_killed_upload_continues_into_the_same_task_sending_only_the_missing_parts(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    endpoint, bucket, store = on_moto(request)
    url, path = f"s3://{bucket}/batch-tasks", tmp_path / "big.csv"
    data = big_csv(path)
    env = child_env(endpoint=endpoint, S3TASK_USER="ada")
    killed_after(url, env, path, "parts:put-part:input#2", tmp_path)

    (waiting,) = tasks_of(store)  # the task made for the upload waits for it, its upload noted
    assert waiting.status == "created" and waiting.input_fingerprint["size"] == len(data)
    upload_id = waiting.input_upload["upload_id"]
    held = [p.number for p in store.list_parts(waiting.input_object_path, upload_id)]
    assert 2 <= len(held) < PARTS, held  # the two the hook saw land, and maybe those in flight beside them

    with counting_proxy(endpoint) as (proxy, log):
        done = submit(url, {**env, "AWS_ENDPOINT_URL_S3": proxy}, path, "--resume")
    assert done.returncode == 0, done.stderr
    assert f"continuing the upload into task {waiting.task_id}" in done.stderr
    assert done.stdout.strip().splitlines()[-1] == waiting.task_id  # the same task id
    assert part_puts(log) == [n for n in range(1, PARTS + 1) if n not in held]  # only the missing parts
    assert not [p for _, m, p in log.since(0) if m == "POST" and "uploads" in p.split("?")[-1]]  # no new upload

    (queued,) = tasks_of(store)  # exactly one task
    assert queued.task_id == waiting.task_id and queued.status == "queued"
    assert store.get(queued.input_object_path).body == data  # byte-identical input
    assert queued.input_size_bytes == len(data) and queued.input_etag == store.head(queued.input_object_path).etag

    # And a worker processes it: the copy's output holds the file's rows, every one, as they are.
    worked = run(worker_args(url, "--once"), env=env)
    assert worked.returncode == 0, worked.stderr[-3000:]
    done_record = read_record(store, LAYOUT, queued.task_id)[0]
    assert done_record.status == "completed" and done_record.row_count == data.count(b"\n") - 1
    output = store.get(done_record.output_object_path).body.decode("utf-8-sig")
    assert list(csv.reader(io.StringIO(output))) == list(csv.reader(io.StringIO(data.decode())))


def test_a_part_held_whose_bytes_changed_in_the_file_is_sent_again(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The fingerprint sees a file's size and ends; a change in its middle shows in the parts' checksums."""
    endpoint, bucket, store = on_moto(request)
    url, path = f"s3://{bucket}/batch-tasks", tmp_path / "big.csv"
    data = bytearray(big_csv(path))
    env = child_env(endpoint=endpoint, S3TASK_USER="ada")
    killed_after(url, env, path, "parts:put-part:input#2", tmp_path)
    (waiting,) = tasks_of(store)
    held = [p.number for p in store.list_parts(waiting.input_object_path, waiting.input_upload["upload_id"])]
    changed = (held[0] - 1) * PART_SIZE + 4 * MB  # inside a part the store holds, far from either end
    data[changed] = ord("X") if data[changed] != ord("X") else ord("Y")
    path.write_bytes(data)

    with counting_proxy(endpoint) as (proxy, log):
        done = submit(url, {**env, "AWS_ENDPOINT_URL_S3": proxy}, path, "--resume")
    assert done.returncode == 0, done.stderr
    assert part_puts(log) == sorted([held[0], *(n for n in range(1, PARTS + 1) if n not in held)])
    (queued,) = tasks_of(store)
    assert queued.task_id == waiting.task_id and store.get(queued.input_object_path).body == bytes(data)


def test_a_different_file_of_the_same_name_is_refused_in_plain_words(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    endpoint, bucket, store = on_moto(request)
    url, path = f"s3://{bucket}/batch-tasks", tmp_path / "big.csv"
    big_csv(path)
    env = child_env(endpoint=endpoint, S3TASK_USER="ada")
    killed_after(url, env, path, "parts:put-part:input#1", tmp_path)
    (waiting,) = tasks_of(store)
    held = store.list_parts(waiting.input_object_path, waiting.input_upload["upload_id"])

    other = big_csv(path, marker=b"!")  # another export under the same name: another size
    with counting_proxy(endpoint) as (proxy, log):
        done = submit(url, {**env, "AWS_ENDPOINT_URL_S3": proxy}, path, "--resume")
    assert done.returncode == 1
    assert f"not resumed: task {waiting.task_id} ('big') waits for another file called 'big.csv'" in done.stderr
    assert f"this file has {len(other):,}" in done.stderr and "Traceback" not in done.stderr
    assert part_puts(log) == []  # nothing sent
    (still,) = tasks_of(store)  # no second task; the first still waits, its parts untouched
    assert still.status == "created" and still.task_id == waiting.task_id
    assert store.list_parts(waiting.input_object_path, waiting.input_upload["upload_id"]) == held


def test_resume_with_nothing_to_continue_says_so_and_starts_a_new_upload(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    endpoint, bucket, store = on_moto(request)
    url, path = f"s3://{bucket}/batch-tasks", tmp_path / "small.csv"
    path.write_bytes(b"a,b\n1,2\n")
    done = submit(url, child_env(endpoint=endpoint, S3TASK_USER="ada"), path, "--resume", name="small")
    assert done.returncode == 0, done.stderr
    assert (
        "no upload of 'small.csv' as 'small' (Copy rows unchanged) waits to be continued; starting a new one"
        in done.stderr
    )
    (task,) = tasks_of(store)
    assert task.status == "queued" and task.task_id == done.stdout.strip().splitlines()[-1]
    assert task.input_fingerprint["name"] == "small.csv"


def test_on_the_local_store_resume_copies_the_whole_file_into_the_waiting_task(tmp_path: Path) -> None:
    """The local directory takes a file in one piece: a submit killed after its task was made is
    continued by copying the whole file again, into that task — never a second one."""
    url, path = str(tmp_path / "store"), tmp_path / "local.csv"
    data = b"id,name\n" + b"".join(b"%d,name %d\n" % (i, i) for i in range(50_000))
    path.write_bytes(data)
    env = child_env(S3TASK_USER="ada")
    killed_after(url, env, path, "create:put-create:status#1", tmp_path)
    store = LocalStore(tmp_path / "store")
    (waiting,) = tasks_of(store)
    assert waiting.status == "created" and waiting.input_fingerprint["size"] == len(data)

    done = submit(url, env, path, "--resume")
    assert done.returncode == 0, done.stderr
    assert f"continuing task {waiting.task_id}:" in done.stderr and "the whole file is sent again" in done.stderr
    (queued,) = tasks_of(store)
    assert queued.task_id == waiting.task_id == done.stdout.strip().splitlines()[-1]
    assert queued.status == "queued" and store.get(queued.input_object_path).body == data


def test_settings_given_with_resume_that_differ_from_the_waiting_tasks_are_refused(tmp_path: Path) -> None:
    """Found by the outside review: --column, --param or a format given with --resume were dropped without
    a word, and the task then failed on what the person had just fixed."""
    url, path = str(tmp_path / "store"), tmp_path / "people.csv"
    path.write_bytes(b"id,contact\n" + b"".join(b"%d,c%d@example.com\n" % (i, i) for i in range(3)))
    env = child_env(S3TASK_USER="ada")
    kind = ("--type", "email_enrichment")
    killed_after(url, env, path, "create:put-create:status#1", tmp_path, *kind)
    (waiting,) = tasks_of(LocalStore(tmp_path / "store"))
    for extra in (["--column", "email=contact"], ["--delimiter", "semicolon"], ["--param", "email_column=x"]):
        refused = submit(url, env, path, *kind, "--resume", *extra)
        assert refused.returncode == 1, refused.stderr
        assert f"task {waiting.task_id} waits for this file with other settings than" in refused.stderr
        assert "cancel it (s3task cancel ID) and submit without --resume" in refused.stderr
    assert [t.status for t in tasks_of(LocalStore(tmp_path / "store"))] == ["created"]  # left as it was
    same = submit(url, env, path, *kind, "--resume", "--delimiter", "detect")  # as it was made: continued
    assert same.returncode == 0, same.stderr
