"""``python -m s3task`` as an operator runs it: a real subprocess against a local store and the moto server."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import free_port
from procs import ROOT, TESTS, child_env, cli

from s3task import lifecycle
from s3task.ids import new_task_id
from s3task.layout import Layout
from s3task.lifecycle import Progress
from s3task.records import read_record, update_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

LAYOUT = Layout("batch-tasks")
ADA = Actor("ada")
CSV = b"id,name\n1,ada\n2,bob\n"
#: tests/ on the import path of the CLI's process, for the plug-in module tests/plugin_types.py.
PLUGIN_PATH = {"PYTHONPATH": child_env(path=(TESTS, ROOT))["PYTHONPATH"]}


def run(store: str, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m s3task --store STORE ARGS`` as ada, this checkout on its import path (not tests/)."""
    environ = child_env(path=(ROOT,), **{"S3TASK_USER": "ada", **(env or {})})
    return cli("--store", store, *args, cwd=cwd, env=environ, timeout=60)


def in_parallel(*commands: tuple[str, ...], cwd: Path, env: dict[str, str] | None = None) -> list:
    """Independent commands run at once: each is a separate process anyway."""
    with ThreadPoolExecutor(len(commands)) as pool:
        futures = [pool.submit(run, store, *args, cwd=cwd, env=env) for store, *args in commands]
        return [f.result() for f in futures]


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> str:
    """A failure a user can read: non-zero exit, one line on stderr, no traceback."""
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def submit(store: str, tmp_path: Path, name: str = "prices", env: dict[str, str] | None = None) -> str:
    path = tmp_path / f"{name}.csv"
    path.write_bytes(CSV)
    out = ok(run(store, "submit", str(path), "--name", name, cwd=tmp_path, env=env))
    task_id = out.strip().splitlines()[-1]
    assert read_task_id(task_id)
    return task_id


def read_task_id(text: str) -> str:
    from s3task.ids import validate_task_id

    return validate_task_id(text)


def queued_task(store: LocalStore, name: str) -> str:
    """Set-up without a subprocess: a queued task made through the control API."""
    service = TaskService(store, LAYOUT)
    task_id = service.create(ADA, name, "copy").record.task_id
    service.upload_input(ADA, task_id, CSV)
    service.submit(ADA, task_id)
    return task_id


def complete_in_store(store: LocalStore, task_id: str, output: bytes) -> str:
    """Do a worker's attempt through the lifecycle functions: claim, write the output, complete."""
    holder = {}

    def claim(r, now):
        new, holder["lease"] = lifecycle.claim(r, now, worker_id="w1", lease_seconds=60)
        return new

    update_record(store, LAYOUT, task_id, claim)
    lease = holder["lease"]
    key = LAYOUT.output_key(task_id, lease.attempt_id)
    store.put(key, output, PutMode.CREATE, content_type="text/csv")
    update_record(
        store,
        LAYOUT,
        task_id,
        lambda r, now: lifecycle.complete(r, now, lease=lease, output_path=key, progress=Progress(), row_count=2),
    )
    return key


@pytest.fixture
def local(tmp_path: Path) -> tuple[str, LocalStore]:
    root = tmp_path / "store"
    return str(root), LocalStore(root)


def test_submit_list_show(local, tmp_path: Path) -> None:
    url, store = local
    first = submit(url, tmp_path, "first")
    second = submit(url, tmp_path, "second")
    record, _ = read_record(store, LAYOUT, second)
    assert record.status == "queued" and record.created_by == "ada"
    assert store.get(record.input_object_path).body == CSV

    listed, paged, shown = in_parallel(
        (url, "list"),
        (url, "list", "--json", "--limit", "1"),
        (url, "show", second),
        cwd=tmp_path,
    )
    table = ok(listed).splitlines()
    assert table[0].split()[:4] == ["ID", "NAME", "TYPE", "STATUS"]
    assert [line.split()[0] for line in table[1:]] == [second, first]  # newest first
    assert table[1].split()[1:4] == ["second", "copy", "queued"]

    page = json.loads(ok(paged))
    assert [t["task_id"] for t in page["tasks"]] == [second]
    assert page["next_cursor"]
    rest = json.loads(ok(run(url, "list", "--json", "--limit", "1", "--cursor", page["next_cursor"], cwd=tmp_path)))
    assert [t["task_id"] for t in rest["tasks"]] == [first]
    assert rest["next_cursor"] is None

    text = ok(shown)
    assert f"task_id: {second}" in text and "status: queued" in text and "submit" in text


def test_store_from_the_environment(local, tmp_path: Path) -> None:
    url, store = local
    path = tmp_path / "in.csv"
    path.write_bytes(CSV)
    environ = child_env(path=(ROOT,), S3TASK_STORE=url, S3TASK_USER="bob")
    result = cli("submit", str(path), "--name", "env", cwd=tmp_path, env=environ, timeout=60)
    task_id = ok(result).strip().splitlines()[-1]
    assert read_record(store, LAYOUT, task_id)[0].created_by == "bob"


def test_cancel_retry_download(local, tmp_path: Path) -> None:
    url, store = local
    queued = queued_task(store, "to-cancel")
    done = queued_task(store, "to-download")
    complete_in_store(store, done, b"id,name,error\n1,ada,\n2,bob,\n")

    retry = run(url, "retry", queued, cwd=tmp_path)
    one_line_error(retry, queued, "queued", "only failed tasks can be retried")
    assert ok(run(url, "cancel", queued, cwd=tmp_path)).strip() == "abandoned"
    assert read_record(store, LAYOUT, queued)[0].status == "abandoned"
    one_line_error(run(url, "download", queued, cwd=tmp_path), "no output", "is cancelled")

    target = tmp_path / "out" / "result.csv"
    target.parent.mkdir()
    printed = ok(run(url, "download", done, "-o", str(target), cwd=tmp_path)).strip()
    assert printed == str(target)
    assert target.read_bytes() == b"id,name,error\n1,ada,\n2,bob,\n"


def test_repair_and_doctor(local, tmp_path: Path) -> None:
    url, store = local
    queued = queued_task(store, "lost-marker")
    done = queued_task(store, "stale-marker")
    complete_in_store(store, done, b"id\n1\n")  # completed, but its marker was left behind
    store.delete(LAYOUT.active_key(queued))  # a queued task whose marker went missing
    assert store.list_keys(LAYOUT.active_root) == [LAYOUT.active_key(done)]

    out = ok(run(url, "repair", cwd=tmp_path))
    assert "markers added: 1, removed: 1" in out
    assert store.list_keys(LAYOUT.active_root) == [LAYOUT.active_key(queued)]

    doctor = run(url, "doctor", cwd=tmp_path)
    assert "conditional writes are enforced" in ok(doctor)
    assert store.list_keys(LAYOUT.root + "_probe/") == []


def test_every_error_is_one_line(local, tmp_path: Path) -> None:
    url, store = local
    task_id = queued_task(store, "mine")
    closed = f"http://127.0.0.1:{free_port()}"
    cases = [
        (("show", "not-an-id"), {}, ("not a valid task id",)),
        (("cancel", new_task_id()), {}, ("does not exist",)),
        (("submit", str(tmp_path / "missing.csv"), "--name", "x"), {}, ("missing.csv", "not a file")),
        (("list", "--cursor", "nope"), {}, ("cursor",)),
        (("cancel", task_id), {"S3TASK_USER": "bob", "S3TASK_CLI_OPERATOR": "0"}, ("belongs to ada",)),
        (("submit", __file__, "--name", "x", "--type", "nope"), {}, ("no task type named 'nope'",)),
    ]
    unreachable = {"AWS_ENDPOINT_URL_S3": closed}
    with ThreadPoolExecutor(4) as pool:  # independent processes: run a few at once
        futures = [pool.submit(run, url, *args, cwd=tmp_path, env=env) for args, env, _ in cases]
        down = pool.submit(run, "s3://bucket/prefix", "list", cwd=tmp_path, env=unreachable)
        no_profile = pool.submit(run, "s3://bucket/prefix", "list", cwd=tmp_path, env={"AWS_PROFILE": "no-such"})
        results = [f.result() for f in futures]
    for (_, _, words), result in zip(cases, results, strict=True):
        one_line_error(result, *words)
    one_line_error(down.result(), "did not answer")
    one_line_error(no_profile.result(), "no-such")
    assert read_record(store, LAYOUT, task_id)[0].status == "queued"  # bob's cancel changed nothing


def test_submit_a_plugin_task_type_loaded_as_the_workers_load_it(local, tmp_path: Path) -> None:
    """S3TASK_HANDLERS or --handlers (before or after the command): the plug-in's type can be submitted."""
    url, store = local
    path = tmp_path / "in.csv"
    path.write_bytes(CSV)
    submit = ("submit", str(path), "--name", "shout", "--type", "plugin_shout")
    cases = [
        ((*submit,), {**PLUGIN_PATH, "S3TASK_HANDLERS": "plugin_types"}),
        (("--handlers", "plugin_types", *submit), PLUGIN_PATH),
        ((*submit, "--handlers", "plugin_types"), PLUGIN_PATH),
    ]
    with ThreadPoolExecutor(len(cases)) as pool:
        results = list(pool.map(lambda c: run(url, *c[0], cwd=tmp_path, env=c[1]), cases))
    for result in results:
        record, _ = read_record(store, LAYOUT, ok(result).strip().splitlines()[-1])
        assert (record.task_type, record.status) == ("plugin_shout", "queued")


def test_a_handler_module_that_cannot_be_imported_is_one_line(local, tmp_path: Path) -> None:
    url, store = local
    path = tmp_path / "in.csv"
    path.write_bytes(CSV)
    missing = "no_such_handlers_module"
    with ThreadPoolExecutor(2) as pool:
        by_flag = pool.submit(run, url, "--handlers", missing, "submit", str(path), "--name", "x", cwd=tmp_path)
        by_env = pool.submit(run, url, "list", cwd=tmp_path, env={"S3TASK_HANDLERS": missing})
    for result in (by_flag.result(), by_env.result()):
        one_line_error(result, f"cannot import handler module {missing!r}")
    assert store.list_prefixes(LAYOUT.root) == []  # nothing was created


def test_a_bad_setting_is_one_line_and_exit_2_before_the_store_is_opened(tmp_path: Path) -> None:
    store = tmp_path / "never-opened"
    result = run(str(store), "list", cwd=tmp_path, env={"S3TASK_CONCURRENCY": "abc"})
    assert result.returncode == 2, result.stderr
    one_line_error(result, "S3TASK_CONCURRENCY", "abc")
    assert not store.exists()


def test_against_s3_over_http(moto_http_bucket: tuple[str, str], tmp_path: Path) -> None:
    endpoint, bucket = moto_http_bucket
    env = {"AWS_ENDPOINT_URL_S3": endpoint}
    url = f"s3://{bucket}/team-a"
    task_id = submit(url, tmp_path, "on-s3", env=env)
    listed, shown, missing = in_parallel(
        (url, "list", "--json"),
        (url, "show", task_id),
        (f"s3://no-such-bucket-{bucket}/x", "list"),
        cwd=tmp_path,
        env=env,
    )
    page = json.loads(ok(listed))
    assert [t["task_id"] for t in page["tasks"]] == [task_id]
    assert page["tasks"][0]["input_object_path"] == f"team-a/{task_id}/input.csv"
    assert "status: queued" in ok(shown)
    one_line_error(missing, "bucket does not exist")


def test_repair_never_drops_a_live_marker_when_the_store_hiccups(local_store: LocalStore) -> None:
    """A HEAD that times out is not proof that a task is gone: repair must stop, not delete its marker."""
    from s3task.errors import StoreUnavailable
    from s3task.markers import repair

    task_id = queued_task(local_store, "live")

    class Flaky:
        description = "flaky"

        def head(self, key):
            raise StoreUnavailable(f"the store did not answer for {key}")

        def __getattr__(self, name):
            return getattr(local_store, name)

    with pytest.raises(StoreUnavailable):
        repair(Flaky(), LAYOUT)
    assert local_store.list_keys(LAYOUT.active_root) == [LAYOUT.active_key(task_id)]
    assert repair(local_store, LAYOUT) == (0, 0, [])
