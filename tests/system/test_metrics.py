"""Prometheus metrics, scraped from real processes and read back with prometheus_client's own parser.

``worker.py --metrics-port`` on moto's S3 server over HTTP, the API server (``python -m s3task.web
serve``) and the app (``streamlit run app.py``, whose embedded worker does the work); plus a bad
``--metrics-port`` stopping the worker at the door. (The store wrapper counting each request once, in this
process: tests/unit/test_metrics_counted.py.)
"""

from __future__ import annotations

import re
import signal
import socket
from pathlib import Path

import pytest
import requests
import worker_handlers  # noqa: F401  (registers test_gated here too, for create())
import yaml
from conftest import free_port, wait_for
from procs import SERVE_SECONDS, Proc, Procs, child_env, run, worker_args
from prometheus_client.parser import text_string_to_metric_families
from support import csv_rows

from s3task.layout import Layout
from s3task.records import read_record
from s3task.store import open_store
from s3task.store.s3 import S3Store
from s3task.tasks import Actor, TaskService
from s3task.web.tokens import hash_token

ROOT = Path(__file__).resolve().parents[2]
ALICE = Actor("alice")
#: Read by the worker as bad input: a permanent failure on the first attempt, no retry.
RAGGED = b"a,b,c\n1,2,3\n4,5,6\n7,8\n"
POLL = 0.2
PORTS = "0 (no metrics server) or a port number from 1 up to 65535"
HOSTS = "an IP address (127.0.0.1, 0.0.0.0, ::) or a host name"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    """Every sample of ``url`` (``/metrics``), parsed by prometheus_client's text parser."""
    response = requests.get(url, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain"), response.headers
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every sample of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def answers(url: str) -> Samples | None:
    try:
        return scrape(url)
    except requests.RequestException:
        return None


def serving(proc: Proc, url: str, timeout: float) -> Samples:
    """The first scrape of ``url`` that answers (failing at once, with its output, if ``proc`` exits)."""
    return proc.wait_until(lambda: answers(url), timeout, f"{url} to answer", interval=0.1)


# --- worker.py --metrics-port ------------------------------------------------------------------------


def test_a_worker_on_s3_reports_what_it_did(
    moto_http_bucket: tuple[str, str], tmp_path: Path, startup: float, procs: Procs
) -> None:
    endpoint, bucket = moto_http_bucket
    store, layout = S3Store(bucket, client=_client(endpoint)), Layout("batch-tasks")
    service = TaskService(store, layout)

    def submit(name: str, body: bytes, task_type: str = "copy", params: dict | None = None) -> str:
        task_id = service.create(ALICE, name, task_type, params).record.task_id
        service.upload_input(ALICE, task_id, body)
        service.submit(ALICE, task_id)
        return task_id

    def status(task_id: str) -> str:
        return read_record(store, layout, task_id)[0].status

    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    args = ["--handlers", "worker_handlers", "--poll-interval", str(POLL), "--concurrency", "1", "--metrics-port"]
    procs.env = child_env(endpoint=endpoint)
    with procs.worker(f"s3://{bucket}/batch-tasks", *args, str(port), name="worker") as worker:
        serving(worker, url, 30 + startup)
        first = wait_for(lambda: _up(url), timeout=30 + startup, what="the worker loop to start")
        # Every registered type shows zeros before it has done anything (so alerts see a series).
        assert value(first, "s3task_tasks_completed_total", task_type="copy") == 0
        assert value(first, "s3task_tasks_failed_total", task_type="copy", final="true") == 0

        gate = tmp_path / "gate"
        held = submit("held", csv_rows(3), "test_gated", {"gate": str(gate)})
        wait_for(lambda: status(held) == "running", timeout=30 + startup, what="the gated task claimed")
        good, bad = submit("good", csv_rows(200)), submit("ragged", RAGGED)

        # Its one slot is taken: the next polls see both waiting.
        def two_waiting() -> Samples | None:
            s = scrape(url)
            return s if value(s, "s3task_queue_depth") == 2 else None

        waiting = wait_for(two_waiting, timeout=30 + 10 * POLL, what="a queue depth of 2")
        assert value(waiting, "s3task_tasks_claimed_total", task_type="test_gated") == 1

        gate.touch()
        for task_id, end in ((held, "completed"), (good, "completed"), (bad, "failed")):
            wait_for(lambda t=task_id, e=end: status(t) == e, timeout=60 + startup, what=f"{task_id} {end}")
        assert read_record(store, layout, bad)[0].final

        def counted() -> Samples | None:
            """Every attempt counted: a counter goes up just after the record's write the test saw."""
            s = scrape(url)
            done = value(s, "s3task_attempt_duration_seconds_count", task_type="copy", outcome="failed")
            ended = total(s, "s3task_tasks_completed_total")  # copy's "good" and test_gated's "held"
            return s if done and ended >= 2 else None

        after = wait_for(counted, timeout=10, what="the last attempt counted")
        assert value(after, "s3task_tasks_claimed_total", task_type="copy") == 2
        assert value(after, "s3task_tasks_completed_total", task_type="copy") == 1
        assert value(after, "s3task_tasks_completed_total", task_type="test_gated") == 1
        assert value(after, "s3task_tasks_failed_total", task_type="copy", final="true") == 1
        assert value(after, "s3task_tasks_failed_total", task_type="copy", final="false") == 0
        assert value(after, "s3task_lease_expiries_total", task_type="copy") == 0
        for outcome in ("completed", "failed"):
            assert value(after, "s3task_attempt_duration_seconds_count", task_type="copy", outcome=outcome) == 1
        assert value(after, "s3task_attempt_duration_seconds_sum", task_type="copy", outcome="completed") > 0
        assert value(after, "s3task_attempt_rows_per_second_count", task_type="copy") == 1
        assert value(after, "s3task_attempt_rows_per_second_sum", task_type="copy") > 0
        # The worker's own requests (polls, records, markers); the tasks' processes are not counted.
        for operation in ("list", "get", "put", "delete"):
            assert value(after, "s3task_store_requests_total", operation=operation) > 0, operation
        # The start-up probe's second create is refused on purpose: an error of its own kind.
        assert value(after, "s3task_store_errors_total", operation="put", error="AlreadyExists") >= 1
        assert value(after, "s3task_worker_up") == 1

        # The gauge is what the last poll saw, so it reads 0 from the first poll after the last claim.
        def emptied() -> Samples | None:
            s = scrape(url)
            return s if value(s, "s3task_queue_depth") == 0 else None

        wait_for(emptied, timeout=30 + 10 * POLL, what="a poll that sees the queue empty")
        # docs/OPERATIONS.md's example alerts use only metrics (and labels) a worker exports.
        families = {name.removesuffix("_total") for name, _ in after}
        for rule in readme_alert_rules():
            for name in re.findall(r"\bs3task_\w+", rule["expr"]):
                assert name.removesuffix("_total") in families, (rule["alert"], name)

        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30 + startup) == 0, worker.tail()


def readme_alert_rules() -> list[dict]:
    """docs/OPERATIONS.md's example rule file, checked against Prometheus' documented rule format."""
    text = (ROOT / "docs" / "OPERATIONS.md").read_text()
    section = text.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "one rule file in the Metrics section"
    document = yaml.safe_load(blocks[0])
    assert set(document) == {"groups"}
    rules = []
    for group in document["groups"]:
        assert set(group) <= {"name", "interval", "limit", "rules"} and group["name"]
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}, rule
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rule["alert"]), rule["alert"]
            assert re.fullmatch(r"([0-9]+(ms|s|m|h|d|w|y))+", rule.get("for", "0s")), rule
            assert rule["expr"].count("(") == rule["expr"].count(")"), rule["expr"]
            assert all(isinstance(v, str) for v in {**rule.get("labels", {}), **rule.get("annotations", {})}.values())
            rules.append(rule)
    assert [r["alert"] for r in rules] == ["S3taskQueueStuck", "S3taskFailureRate", "S3taskNoWorker"]
    return rules


def _up(url: str) -> Samples | None:
    samples = scrape(url)
    return samples if value(samples, "s3task_worker_up") == 1 else None


def _client(endpoint: str):
    from conftest import boto_client

    return boto_client(endpoint)


@pytest.mark.parametrize(
    ("flag", "value", "shown", "allowed"),
    [
        ("--metrics-port", "99999", "99999", PORTS),
        ("--metrics-port", "abc", "'abc'", PORTS),
        ("--metrics-port", "-1", "-1", PORTS),
        ("--metrics-host", "http://0.0.0.0", "'http://0.0.0.0'", HOSTS),
    ],
)
def test_a_bad_metrics_flag_stops_the_worker_at_the_door(
    tmp_path: Path, flag: str, value: str, shown: str, allowed: str
) -> None:
    store = tmp_path / "store"
    extra = [flag, value] if flag == "--metrics-port" else [flag, value, "--metrics-port", str(free_port())]
    done = run(worker_args(str(store), "--once", *extra))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: {flag} {shown} is not allowed: use {allowed}"]
    assert not store.exists(), "the store was touched"


def test_a_metrics_port_in_use_is_one_line_before_any_store_call(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run(worker_args(str(store), "--once", "--metrics-port", str(port)))
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot serve metrics on 127.0.0.1:{port}: "), lines
    assert not store.exists(), "the store was touched"


# --- the API server and the app ------------------------------------------------------------------------


def test_the_api_server_serves_metrics_of_its_requests_and_cancels(tmp_path: Path, procs: Procs) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(f'{{"{hash_token("alice-token")}": {{"user": "alice", "role": "user"}}}}')
    env = {"S3TASK_STORE": str(tmp_path / "store"), "S3TASK_API_TOKENS_FILE": str(tokens)}
    with procs.api(env=env, health="/metrics") as api:
        base = api.url
        before = serving(api, base + "/metrics", SERVE_SECONDS)
        assert value(before, "s3task_tasks_cancelled_total", task_type="copy") is None  # nothing cancelled yet
        auth = {"Authorization": "Bearer alice-token"}
        created = requests.post(base + "/api/tasks", json={"name": "n", "type": "copy"}, headers=auth, timeout=10)
        assert created.status_code == 201, created.text
        task_id = created.json()["task"]["task_id"]
        cancelled = requests.post(f"{base}/api/tasks/{task_id}/cancel", headers=auth, timeout=10)
        assert cancelled.status_code == 200 and cancelled.json()["task"]["status"] == "abandoned", cancelled.text
        after = scrape(base + "/metrics")
    assert value(after, "s3task_tasks_cancelled_total", task_type="copy") == 1
    assert total(after, "s3task_store_requests_total", operation="put") > total(
        before, "s3task_store_requests_total", operation="put"
    )
    assert value(after, "s3task_store_requests_total", operation="get") > 0
    assert value(after, "s3task_worker_up") == 0  # the API server runs no worker


def test_the_app_serves_metrics_of_its_embedded_worker(tmp_path: Path, procs: Procs) -> None:
    store_dir = tmp_path / "store"
    with procs.streamlit(env={"S3TASK_STORE": str(store_dir), "S3TASK_POLL_INTERVAL": str(POLL)}) as app:
        base = app.url
        serving(app, base + "/metrics", SERVE_SECONDS)
        wait_for(lambda: _up(base + "/metrics"), timeout=60, what="the embedded worker to start")
        store, layout = open_store(str(store_dir))
        service = TaskService(store, layout)
        task_id = service.create(ALICE, "via the app's worker", "copy").record.task_id
        service.upload_input(ALICE, task_id, csv_rows(20))
        service.submit(ALICE, task_id)

        def completed() -> Samples | None:
            s = scrape(base + "/metrics")
            return s if value(s, "s3task_tasks_completed_total", task_type="copy") == 1 else None

        after = wait_for(completed, timeout=60, what="the app's worker to count the task")
        assert "<html" in requests.get(base + "/", timeout=10).text.lower()  # the pages are still there
    assert read_record(store, layout, task_id)[0].status == "completed"
    assert value(after, "s3task_attempt_duration_seconds_count", task_type="copy", outcome="completed") == 1
    assert value(after, "s3task_store_requests_total", operation="list") > 0
    assert value(after, "s3task_worker_up") == 1
