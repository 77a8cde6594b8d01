"""Access: nobody reaches a task they should not, by any path, and nothing leaks in logs.

- User B cannot submit, cancel, retry or download user A's task — through the
  TaskService, the CLI as a plain user (``S3TASK_CLI_OPERATOR=0 --as``), the
  HTTP API (bearer tokens) or the app (AppTest) — and A's record is unchanged.
- Presigned URLs (S3) and transfer URLs (local store) expire and name exactly
  one key, read from the URL's own parameters (moto does not enforce expiry).
- Identity headers are ignored unless a trusted header is configured.
- Task names with HTML / Markdown are shown as plain text in the app.
- Worker, API and app logs carry no credentials and no URL signatures.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

import boto3
import figures
import pytest
import requests
from apps.http_server import serve
from faults import save_figures
from procs import Procs, child_env
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from s3task import cli, lifecycle
from s3task.config import Settings
from s3task.errors import AccessDenied
from s3task.layout import Layout
from s3task.records import read_record, update_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.store.s3 import _RECORD_CONFIG, S3Store
from s3task.tasks import Actor, TaskService
from s3task.web.api import create_app
from s3task.web.tokens import TokenTable, hash_token
from s3task.web.transfer import TransferDenied, UrlSigner
from ui.identity import resolve

ROOT = Path(__file__).resolve().parents[2]
ALICE, BOB = Actor("alice"), Actor("bob")
CSV = b"name,age\nann,7\nbob,42\n"
HOSTILE_NAME = "<img src=x onerror=alert(1)> **bold** [click](https://evil.example) :red[r] $x$ <script>s</script>"
SECRET = "s3cr3t-KEY-do-not-log-0123456789abcdef"
_figures: dict[str, int] = {"refusals_checked": 0}


def submitted(service: TaskService, actor: Actor = ALICE, name: str = "alice's task") -> str:
    return service.submit_file(actor, name, "copy", None, CSV).task_id


def finish_as_worker(service: TaskService, task_id: str, *, fail: bool = False) -> None:
    store, layout = service.store, service.layout
    holder: dict = {}

    def claim(r, now):
        new, holder["lease"] = lifecycle.claim(r, now, worker_id="w", lease_seconds=60)
        return new

    record = update_record(store, layout, task_id, claim)
    lease = holder["lease"]
    if fail:
        update_record(
            store, layout, task_id, lambda r, now: lifecycle.fail(r, now, lease=lease, error="x", permanent=True)
        )
        return
    key = layout.output_key(task_id, record.attempt_id)
    store.put(key, b"name,age,error\nann,7,\nbob,42,\n", PutMode.CREATE)
    progress = lifecycle.Progress(2, 2, 0, len(CSV))
    update_record(
        store,
        layout,
        task_id,
        lambda r, now: lifecycle.complete(r, now, lease=lease, output_path=key, progress=progress, row_count=2),
    )


@pytest.fixture
def tasks(tmp_path: Path) -> tuple[TaskService, dict[str, str]]:
    """Alice's tasks in each state B might try to act on."""
    service = TaskService(LocalStore(tmp_path / "store"), Layout())
    ids = {"queued": submitted(service)}
    ids["completed"] = submitted(service)
    finish_as_worker(service, ids["completed"])
    ids["failed"] = submitted(service)
    finish_as_worker(service, ids["failed"], fail=True)
    ids["created"] = service.create(ALICE, "not submitted yet", "copy").record.task_id
    return service, ids


def snapshot(service: TaskService, ids: dict[str, str]) -> dict[str, bytes]:
    return {t: service.store.get(service.layout.status_key(t)).body for t in ids.values()}


# --- the TaskService, the CLI, the HTTP API --------------------------------------------------------


def test_b_cannot_act_on_a_task_through_the_task_service(tasks) -> None:
    service, ids = tasks
    before = snapshot(service, ids)
    attempts: list[Callable[[], object]] = [
        lambda: service.cancel(BOB, ids["queued"]),
        lambda: service.cancel(BOB, ids["failed"]),
        lambda: service.retry(BOB, ids["failed"]),
        lambda: service.output_url(BOB, ids["completed"]),
        lambda: service.read_output(BOB, ids["completed"]),
        lambda: service.read_output(BOB, ids["completed"], errors_only=True),
        lambda: service.open_output(BOB, ids["completed"]).__enter__(),
        lambda: service.upload_input(BOB, ids["created"], b"a\n1\n"),
        lambda: service.submit(BOB, ids["created"]),
    ]
    for attempt in attempts:
        with pytest.raises(AccessDenied, match="belongs to alice"):
            attempt()
    assert snapshot(service, ids) == before
    record = service.get(BOB, ids["queued"])  # looking is allowed; acting is not
    assert not service.can_cancel(BOB, record) and not service.can_retry(BOB, service.get(BOB, ids["failed"]))
    assert service.can_cancel(Actor("olga", operator=True), record)
    _figures["refusals_checked"] += len(attempts)


def test_b_cannot_act_on_a_task_through_the_cli(tasks, tmp_path: Path, monkeypatch, capsys) -> None:
    service, ids = tasks
    monkeypatch.setenv("S3TASK_CLI_OPERATOR", "0")
    monkeypatch.chdir(tmp_path)
    before = snapshot(service, ids)
    store = str(tmp_path / "store")
    runs = [
        ["--store", store, "--as", "bob", "cancel", ids["queued"]],
        ["--store", store, "cancel", ids["queued"], "--as", "bob"],
        ["--store", store, "--as", "bob", "retry", ids["failed"]],
        ["--store", store, "--as", "bob", "download", ids["completed"], "-o", str(tmp_path / "stolen.csv")],
    ]
    for argv in runs:
        assert cli.main(argv) == 1, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "belongs to alice" in err, err
    assert not (tmp_path / "stolen.csv").exists() and not list(tmp_path.glob("*.part"))
    assert snapshot(service, ids) == before
    assert cli.main(["--store", store, "--as", "alice", "cancel", ids["queued"]]) == 0  # the owner may
    _figures["refusals_checked"] += len(runs)


def test_b_cannot_act_on_a_task_through_the_http_api(tasks, tmp_path: Path, caplog) -> None:
    service, ids = tasks
    tokens = TokenTable({hash_token("alice-token"): ALICE, hash_token("bob-token"): BOB})
    app = create_app(Settings(store=str(tmp_path / "store")), service=service, tokens=tokens)
    before = snapshot(service, ids)
    bob = {"Authorization": "Bearer bob-token"}
    calls = [
        ("POST", f"/api/tasks/{ids['queued']}/cancel"),
        ("POST", f"/api/tasks/{ids['failed']}/retry"),
        ("POST", f"/api/tasks/{ids['created']}/submit"),
        ("GET", f"/api/tasks/{ids['completed']}/output"),
    ]
    with serve(app) as base:
        for method, path in calls:
            resp = requests.request(method, base + path, headers=bob, timeout=10)
            assert (resp.status_code, resp.json()["code"]) == (403, "access_denied"), resp.text
            assert "url" not in resp.json()
            # A forged identity header changes nothing: only the token names the caller.
            forged = {**bob, "X-Remote-User": "alice", "X-Forwarded-Email": "alice", "X-Forwarded-User": "alice"}
            assert requests.request(method, base + path, headers=forged, timeout=10).status_code == 403
            headers_only = {"X-Remote-User": "alice", "X-Forwarded-Email": "alice", "Cookie": "user=alice"}
            assert requests.request(method, base + path, headers=headers_only, timeout=10).status_code == 401
        view = requests.get(f"{base}/api/tasks/{ids['queued']}", headers=bob, timeout=10).json()["task"]
        assert view["cancellable"] is False and "lease_token" not in view and "write_id" not in view
    assert snapshot(service, ids) == before
    _figures["refusals_checked"] += 3 * len(calls)


# --- URLs: expiry and exactly one key --------------------------------------------------------------


def test_presigned_urls_expire_and_name_exactly_one_key(moto_http_bucket) -> None:
    endpoint, bucket = moto_http_bucket
    # The client the product makes (open_store): SigV4, short record timeouts.
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=_RECORD_CONFIG)
    service = TaskService(S3Store(bucket, client=client), Layout(), url_seconds=600)
    created = service.create(ALICE, "presigned", "copy")
    task_id = created.record.task_id
    service.upload_input(ALICE, task_id, CSV)
    service.submit(ALICE, task_id)
    finish_as_worker(service, task_id)
    download = service.output_url(ALICE, task_id)
    record = service.get(ALICE, task_id)
    for url, key, method in (
        (created.upload_url, service.layout.input_key(task_id), "PUT"),
        (download, record.output_object_path, "GET"),
    ):
        parsed = urlparse(url)
        query = parse_qs(parsed.query)
        assert unquote(parsed.path) == f"/{bucket}/{key}", "the URL names exactly this object"
        assert "*" not in parsed.path and parsed.path.count("/") == key.count("/") + 2
        assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
        assert query["X-Amz-Expires"] == ["600"], "it expires when the service says"
        assert set(query["X-Amz-SignedHeaders"][0].split(";")) <= {"host", "content-type"}
        assert len(query["X-Amz-Signature"][0]) == 64
        assert "prefix" not in query and "list-type" not in query
        if method == "PUT":
            assert requests.put(url, data=b"x,y\n1,2\n", headers={"Content-Type": "text/csv"}, timeout=10).ok
        else:
            assert requests.get(url, timeout=10).content.startswith(b"name,age")


def test_transfer_urls_expire_and_name_exactly_one_key() -> None:
    now = [1_000_000.0]
    signer = UrlSigner(b"k" * 32, clock=lambda: now[0])
    key = "batch-tasks/7ZZZZZZZZZZZZZZZZZZZZZZZZZ/output-attempt-1.csv"
    url = signer.presign_get(key, expires=900, filename="out.csv")
    token = url.rsplit("/", 1)[1]
    payload = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert payload["k"] == key and payload["m"] == "GET" and payload["e"] == 1_000_000 + 900
    assert signer.verify(token, "GET").key == key
    with pytest.raises(TransferDenied, match="allows GET only"):
        signer.verify(token, "PUT")
    forged = base64.urlsafe_b64encode(json.dumps({**payload, "k": key.replace("output", "input")}).encode())
    with pytest.raises(TransferDenied, match="signature"):
        signer.verify(forged.decode().rstrip("=") + "." + token.split(".")[1], "GET")
    now[0] += 900
    with pytest.raises(TransferDenied, match="expired"):
        signer.verify(token, "GET")


# --- identity headers --------------------------------------------------------------------------------


def test_identity_headers_are_ignored_unless_a_trusted_header_is_configured() -> None:
    forged = {"user": "mallory", "email": "mallory@x.example", "X-Remote-User": "mallory"}
    who = resolve(auth_configured=False, user=forged, trusted_headers={}, address="127.0.0.1", operators=["mallory"])
    assert who.actor is not None and who.actor.name == "local"  # the development user, not mallory
    refused = resolve(auth_configured=False, user=forged, trusted_headers={}, address="0.0.0.0", operators=[])
    assert refused.actor is None and refused.problem
    trusted = resolve(
        auth_configured=False,
        user={"user": "ann"},
        trusted_headers={"X-Remote-User": "user"},
        address="0.0.0.0",
        operators=[],
    )
    assert trusted.actor == Actor("ann")
    # With OIDC configured, headers never override the signed-in identity.
    oidc = resolve(
        auth_configured=True,
        user={"is_logged_in": True, "email": "ann@x.example", "email_verified": True, "user": "mallory"},
        trusted_headers={},
        address="0.0.0.0",
        operators=[],
    )
    assert oidc.actor == Actor("ann@x.example")


# --- the app ----------------------------------------------------------------------------------------------


@pytest.fixture
def app(tmp_path: Path, monkeypatch) -> Iterator[Callable[[str | None], AppTest]]:
    monkeypatch.setenv("S3TASK_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("S3TASK_EMBEDDED_WORKER", "0")
    monkeypatch.setenv("S3TASK_OPERATORS", "boss")
    saved = {k: st_config.get_option(k) for k in ("server.address", "server.trustedUserHeaders")}
    st_config.set_option("server.address", "127.0.0.1")

    def make(user: str | None) -> AppTest:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=20)
        if user is not None:
            st_config.set_option("server.trustedUserHeaders", {"X-Remote-User": "user"})
            at.user = {"user": user}
        return at

    yield make
    for k, v in saved.items():
        st_config.set_option(k, v)


def task_page(at: AppTest, task_id: str) -> AppTest:
    if not at._registered_pages:
        at.run()
    at.query_params["id"] = task_id
    return at.switch_page("pages/task.py").run()


def labels(at: AppTest) -> set[str]:
    links = {e.proto.label for e in at.get("page_link")}
    return {b.label for b in at.button} | {b.label for b in at.download_button} | links


def test_b_sees_no_actions_and_no_output_in_the_app(tasks, app, caplog) -> None:
    service, ids = tasks
    before = snapshot(service, ids)
    caplog.set_level(logging.DEBUG)
    for state, forbidden in (
        ("queued", {"Cancel task…"}),
        ("failed", {"Retry now", "Cancel task…", "Start again with a corrected file"}),
        ("completed", {"Download result (CSV)"}),
    ):
        bob = task_page(app("bob"), ids[state])
        assert not bob.exception
        assert not forbidden & labels(bob), (state, labels(bob))
        assert not bob.download_button and not bob.get("link_button")
        if state == "completed":
            assert not [d for d in bob.dataframe if "age" in d.value.columns], "bob must not see the rows"
        alice = task_page(app("alice"), ids[state])
        assert forbidden & labels(alice) or alice.get("link_button"), (state, labels(alice))
    assert snapshot(service, ids) == before
    assert not [r for r in caplog.records if SECRET in r.getMessage() or "Signature=" in r.getMessage()]


def test_task_names_with_html_and_markdown_render_as_plain_text(tmp_path: Path, app) -> None:
    service = TaskService(LocalStore(tmp_path / "store"), Layout())
    task_id = submitted(service, ALICE, HOSTILE_NAME)
    at = task_page(app("alice"), task_id)
    assert not at.exception
    title = at.title[0]
    assert title.value.replace("\\", "").replace("\u2060", "") == HOSTILE_NAME
    # Every Markdown/HTML character arrives escaped (a backslash before it): shown, not interpreted.
    assert not re.findall(r"(?<!\\)[<>*\[\]()$:]", title.value), title.value
    for element in [*at.markdown, *at.caption, *at.title]:
        assert not getattr(element.proto, "allow_html", False) or "<img" not in element.value
    listing = at.switch_page("pages/tasks.py").run()
    names = listing.dataframe[0].value["name"].tolist()
    assert names == [HOSTILE_NAME]  # a table cell: shown as the text it is


# --- logs -------------------------------------------------------------------------------------------------


def test_nothing_logs_credentials_or_url_signatures(moto_http_bucket, tmp_path: Path, caplog) -> None:
    endpoint, bucket = moto_http_bucket
    env = child_env(
        endpoint=endpoint,
        AWS_ACCESS_KEY_ID="AKIAS3TASKTESTKEY123",
        AWS_SECRET_ACCESS_KEY=SECRET,
        S3TASK_LOG_LEVEL="DEBUG",
    )
    caplog.set_level(logging.DEBUG)
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="AKIAS3TASKTESTKEY123",
        aws_secret_access_key=SECRET,
        config=_RECORD_CONFIG,
    )
    service = TaskService(S3Store(bucket, client=client), Layout("batch-tasks"))
    ok = submitted(service)
    bad = submitted(service, name="bad input")
    service.store.put(service.layout.input_key(bad), b"a,b\n1,2,3\n", PutMode.OVERWRITE)  # fails at the worker
    args = ["--poll-interval", "0.2", "--log-format", "json"]
    with Procs(tmp_path, env) as procs:
        worker = procs.worker(f"s3://{bucket}/batch-tasks", *args, worker_id="logcheck")

        def done() -> bool:
            return all(read_record(service.store, service.layout, t)[0].is_terminal for t in (ok, bad))

        worker.wait_until(done, timeout=90, what="both tasks finished")
        worker.terminate()
        worker.wait(30)
    logs = worker.log
    urls = [service.output_url(ALICE, ok), service.create(ALICE, "upload", "copy").upload_url]
    signatures = [parse_qs(urlparse(u).query)["X-Amz-Signature"][0] for u in urls if u]
    with serve(create_app(Settings(store=f"s3://{bucket}/batch-tasks"), service=service, tokens=TokenTable(
        {hash_token("alice-token"): ALICE}))) as base:  # fmt: skip
        resp = requests.get(f"{base}/api/tasks/{ok}/output", headers={"Authorization": "Bearer alice-token"}, timeout=9)
        signatures.append(parse_qs(urlparse(resp.json()["url"]).query)["X-Amz-Signature"][0])
        requests.get(f"{base}/api/tasks/{ok}", headers={"Authorization": "Bearer wrong-token"}, timeout=9)
    text = logs.read_text(errors="replace")
    assert "completed" in text and "failed" in text  # the log did say what happened
    # Our loggers and the servers'; botocore's own DEBUG output (off unless someone turns the root
    # logger to DEBUG) prints request headers and is not ours to filter.
    ours = ("s3task", "ui", "uvicorn", "starlette", "streamlit")
    captured = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith(ours))
    for haystack, where in ((text, "worker log"), (captured, "in-process logs (API, service)")):
        for needle in (SECRET, "X-Amz-Signature", "Signature=", "alice-token", *signatures):
            assert needle not in haystack, f"{where} contains {needle[:12]}…"
    assert "AKIAS3TASKTESTKEY123" not in text
    _figures["log_lines_checked"] = len(text.splitlines()) + len(caplog.records)
    assert read_record(service.store, service.layout, bad)[0].status == "failed"


@figures.at_end
def _publish() -> None:
    if _figures.get("log_lines_checked"):  # the log test ran
        save_figures("access", dict(_figures))
