"""Direct transfers: the browser uploads to and downloads from the store; the app only hands out URLs.

- In a real browser (Playwright on Debian's Chromium), a 50 MB CSV made at test
  time goes from the New task page to the store with a visible, advancing
  progress bar, while the app process's peak memory (``VmHWM``, reset just
  before) grows by far less than the file; the task completes and the result
  downloads through the store's own URL with every row. Once on moto's S3
  server — with its allow-everything CORS switched off, so only the bucket's
  CORS rule, applied by ``python -m s3task init``, lets the browser in — and
  once on a local directory through the app's signed ``/transfer`` routes.
- A PUT through an upload URL after submit cannot change what is processed:
  refused by the local route, and on S3 (which cannot refuse it) the task fails
  saying the input changed.
- Presigned URLs carry the expiry, the signed content type and the exact key;
  the local signed routes refuse expired links.
- ``init`` / ``doctor`` against moto: CORS and lifecycle rules applied
  idempotently, other rules kept, the preflight answered for the app's origin.
- The page logic without a browser (AppTest): preview from the browser's first
  bytes, the upload plan, submit on the browser's report, fallback to
  Streamlit's uploader when the browser cannot reach the store, cancel.
"""

from __future__ import annotations

import base64
import json
import re
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import procs
import pyarrow.csv as pacsv
import pytest
import requests
from browsers import ARTIFACTS, app_on, base_env, copy_task_previewed, moto_without_global_cors, pick_file, settle, shot
from conftest import CHROMIUM, boto_client, free_port, make_store, wait_for

from s3task import cli, lifecycle
from s3task.config import Settings
from s3task.layout import Layout
from s3task.records import read_record, update_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.store.s3 import _DATA_CONFIG, _RECORD_CONFIG, S3Store
from s3task.tasks import Actor, TaskService
from s3task.tasks.browser_uploads import MAX_URL_SECONDS, part_url_seconds
from s3task.tasks.resumable import PART_SIZE, part_size_for
from s3task.web.transfer import TransferDenied, UrlSigner, local_secret, signer_for

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # ui/ lives next to app.py

from ui import direct  # noqa: E402

LOCAL = Actor("local", operator=True)  # the app's development user
ALICE = Actor("alice")
BIG_MB = 50
UPLOAD_BYTES_PER_SECOND = 32 * 2**20
#: The app may grow by this much while a 50 MB file passes: far below the file's size.
MEMORY_BOUND_KB = 25 * 1024
AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
requires_chromium = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found (see tests/browser/test_browser.py)"
)
_figures: dict[str, object] = {}


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cors_moto() -> Iterator[str]:
    """moto's S3 server answering CORS from the bucket's own rules (browsers.moto_without_global_cors)."""
    with moto_without_global_cors() as url:
        yield url


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A 50 MB CSV (id, name, value) and its number of data rows."""
    path = tmp_path_factory.mktemp("big") / "big customers.csv"
    rows, block = 0, 20_000
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write("id,name,value\n")
        while f.tell() < BIG_MB * 2**20:
            f.write("".join(f"{i},customer {i:07d},{i * 7 % 1000:03d}\n" for i in range(rows, rows + block)))
            rows += block
    return path, rows


# --- memory of the app process --------------------------------------------------------------------


def vm_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def reset_peak(pid: int) -> int:
    """Reset the process's peak RSS (``VmHWM``) to its current RSS; returns that, in kB."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return vm_kb(pid, "VmHWM")


# --- the browser side ---------------------------------------------------------------------------

# Record every change of the upload's progress bar and its text, with whether the bar is shown.
_WATCH = """el => {
  window.__progress = [];
  const root = el.getRootNode();
  const note = () => {
    const bar = root.querySelector("progress");
    const box = bar.getBoundingClientRect();
    window.__progress.push({value: bar.value, max: bar.max, text: root.querySelector(".stats").textContent,
                            shown: !bar.closest(".bar").hidden && box.width > 0 && box.height > 0});
  };
  new MutationObserver(note).observe(root, {subtree: true, attributes: true, childList: true, characterData: true});
}"""


def upload_through_page(page, url: str, pid: int, data: Path, prefix: str) -> tuple[str, int, list[dict]]:
    """New task → pick the file → preview → Submit → the task page. Returns the task id, the app's
    peak-memory growth during the upload (kB) and the progress bar's recorded states."""

    copy_task_previewed(page, url, data)
    assert page.get_by_role("textbox", name="Task name").input_value() == "big customers"  # from the file name
    page.locator("progress").evaluate(_WATCH)
    # A loopback upload takes a fraction of a second; at a (fast) 32 MB/s the bar has time to be seen moving.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1,
                                                  "uploadThroughput": UPLOAD_BYTES_PER_SECOND})  # fmt: skip
    shot(page, f"direct-{prefix}-1-preview")
    base = reset_peak(pid)
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=90_000)
    growth = vm_kb(pid, "VmHWM") - base
    return page.url.rsplit("=", 1)[1], growth, page.evaluate("window.__progress")


def assert_progress_advanced(log: list[dict], size: int) -> None:
    assert log, "the progress bar never changed"
    values = [e["value"] for e in log]
    assert values == sorted(values), "progress went backwards"
    during = [e for e in log if 0 < e["value"] < size]
    assert len({e["value"] for e in during}) >= 5, f"too few observations while uploading: {values}"
    assert all(e["shown"] and e["max"] == size for e in during), "the bar was not visible while uploading"
    assert values[-1] == size
    assert any("MB/s" in e["text"] and "left" in e["text"] for e in during), [e["text"] for e in log]
    assert log[-1]["text"].startswith(f"Uploaded {size / 2**20:.1f} MB in ")


def download_result(page, prefix: str) -> tuple[object, Path]:
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name="Result")).to_be_visible(timeout=120_000)
    settle(page)
    shot(page, f"direct-{prefix}-2-completed")
    with page.expect_download(timeout=60_000) as download:
        page.get_by_role("button", name="Download result (CSV)").click()
    return download.value, Path(download.value.path())


def assert_all_rows(saved: Path, rows: int) -> None:
    table = pacsv.read_csv(saved, convert_options=pacsv.ConvertOptions(strings_can_be_null=False))
    assert table.column_names == ["id", "name", "value"]  # copied unchanged (Arrow skips the BOM)
    assert table.num_rows == rows
    first, last = table.slice(0, 1).to_pylist()[0], table.slice(rows - 1, 1).to_pylist()[0]
    assert (first["id"], first["name"], first["value"]) == (0, "customer 0000000", 0)
    assert (last["id"], last["name"]) == (rows - 1, f"customer {rows - 1:07d}")


def save_figures() -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "direct-transfer.json").write_text(json.dumps(_figures, indent=1))


# --- the 50 MB round trip, S3 --------------------------------------------------------------------


@pytest.mark.browser
@requires_chromium
def test_big_upload_to_s3_goes_browser_to_bucket(browser, cors_moto, big_csv, tmp_path: Path) -> None:
    data, rows = big_csv
    bucket, port = f"direct-{uuid.uuid4().hex[:8]}", free_port()
    origin = f"http://127.0.0.1:{port}"
    store_url = f"s3://{bucket}/batch-tasks"
    env = base_env(S3TASK_STORE=store_url, AWS_ENDPOINT_URL_S3=cors_moto, **AWS)
    init = procs.cli("init", "--origin", origin, env=env, timeout=60)
    assert init.returncode == 0, init.stderr
    assert f"created: bucket {bucket}" in init.stdout and "added: CORS rule" in init.stdout

    page = browser.new_page(viewport={"width": 1300, "height": 1000}, accept_downloads=True)
    sent: list[tuple[str, str]] = []
    page.on("request", lambda r: sent.append((r.method, r.url)))
    try:
        with app_on(port, env, tmp_path / "streamlit.log") as (url, pid):
            task_id, growth, progress = upload_through_page(page, url, pid, data, "s3")
            assert_progress_advanced(progress, data.stat().st_size)
            assert growth < MEMORY_BOUND_KB, f"the app grew by {growth} kB during a {BIG_MB} MB upload"
            # Every byte went to the bucket, in parallel parts; none through the app.
            parts = [u for m, u in sent if m == "PUT" and u.startswith(cors_moto) and "partNumber=" in u]
            assert len(parts) == -(-data.stat().st_size // PART_SIZE) >= 2
            assert f"/{bucket}/batch-tasks/{task_id}/input.csv?" in parts[0]
            assert not [u for m, u in sent if m == "PUT" and u.startswith(url)]

            download, saved = download_result(page, "s3")
            assert download.url.startswith(f"{cors_moto}/{bucket}/batch-tasks/{task_id}/output-attempt-1.csv?")
            query = parse_qs(urlparse(download.url).query)
            assert query["response-content-disposition"] == [
                f'attachment; filename="big-customers-{task_id[-6:].lower()}.csv"'
            ]
            assert download.suggested_filename == f"big-customers-{task_id[-6:].lower()}.csv"
            assert_all_rows(saved, rows)
    finally:
        page.close()
    _figures["s3"] = {"upload_mb": BIG_MB, "app_peak_growth_kb": growth, "progress_observations": len(progress)}
    save_figures()


# --- the 50 MB round trip, local directory --------------------------------------------------------


@pytest.mark.browser
@requires_chromium
def test_big_upload_to_a_local_store_streams_through_the_signed_route(browser, big_csv, tmp_path: Path) -> None:
    data, rows = big_csv
    root = tmp_path / "store"
    env = base_env(S3TASK_STORE=str(root))
    page = browser.new_page(viewport={"width": 1300, "height": 1000}, accept_downloads=True)
    sent: list[tuple[str, str]] = []
    page.on("request", lambda r: sent.append((r.method, r.url)))
    try:
        with app_on(free_port(), env, tmp_path / "streamlit.log") as (url, pid):
            task_id, growth, progress = upload_through_page(page, url, pid, data, "local")
            assert_progress_advanced(progress, data.stat().st_size)
            assert growth < MEMORY_BOUND_KB, f"the app grew by {growth} kB during a {BIG_MB} MB upload"
            assert [m for m, u in sent if u.startswith(url + "/transfer/")] == ["PUT"]

            base = reset_peak(pid)
            download, saved = download_result(page, "local")
            download_growth = vm_kb(pid, "VmHWM") - base
            assert download.url.startswith(url + "/transfer/")
            assert download.suggested_filename == f"big-customers-{task_id[-6:].lower()}.csv"
            assert_all_rows(saved, rows)
            assert download_growth < MEMORY_BOUND_KB, f"the app grew by {download_growth} kB sending the result"

            # The app's own routes: a link past its expiry is refused; a late upload to a submitted task too.
            late_put_is_refused_by_the_route(url, root)
            old = UrlSigner(local_secret(root), clock=lambda: time.time() - 3600)
            expired = old.presign_get(Layout().output_key(task_id, 1), expires=60)
            resp = requests.get(url + expired, timeout=10)
            assert (resp.status_code, resp.json()["code"]) == (403, "expired")
    finally:
        page.close()
    _figures["local"] = {
        "upload_mb": BIG_MB,
        "app_peak_growth_kb": growth,
        "download_peak_growth_kb": download_growth,
        "progress_observations": len(progress),
    }
    save_figures()


@pytest.mark.browser
@requires_chromium
def test_a_bucket_without_cors_makes_the_page_upload_through_the_app(browser, cors_moto, tmp_path: Path) -> None:
    bucket = f"nocors-{uuid.uuid4().hex[:8]}"
    boto_client(cors_moto).create_bucket(Bucket=bucket)  # no init: no CORS rule, so the browser is refused
    store_url = f"s3://{bucket}/batch-tasks"
    env = base_env(S3TASK_STORE=store_url, S3TASK_EMBEDDED_WORKER="0", AWS_ENDPOINT_URL_S3=cors_moto, **AWS)
    data = tmp_path / "people.csv"
    data.write_bytes(b"name,age\nann,007\n")
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    try:
        from playwright.sync_api import expect

        with app_on(free_port(), env, tmp_path / "streamlit.log") as (url, _):
            page.goto(url + "/new_task")
            settle(page)
            pick_file(page, data, "2 columns: name, age")
            settle(page)
            page.get_by_role("button", name="Submit").click()
            expect(page.get_by_text("could not send the file to the task store directly")).to_be_visible(timeout=60_000)
            settle(page)
            shot(page, "direct-fallback")
            page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(str(data))
            expect(page.get_by_text("2 columns: name, age")).to_be_visible(timeout=20_000)
            settle(page)
            page.get_by_role("button", name="Submit").click()
            page.wait_for_url(re.compile(r".*/task\?id=[0-9A-Z]{26}$"), timeout=20_000)
            task_id = page.url.rsplit("=", 1)[1]
        service = TaskService(S3Store(bucket, client=boto_client(cors_moto)), Layout("batch-tasks"))
        assert service.get(ALICE, task_id).status == "queued"
        statuses = [r.status for r in service.list(LOCAL, limit=10).tasks]
        assert sorted(statuses) == ["abandoned", "queued"]  # the direct attempt's task was cancelled
    finally:
        page.close()


def late_put_is_refused_by_the_route(url: str, root: Path) -> None:
    store = LocalStore(root)
    service = TaskService(store, Layout(), url_signer=signer_for(store))  # the app's key: same store, same file
    created = service.create(ALICE, "late", "copy")
    task_id, upload = created.record.task_id, url + created.upload_url
    assert requests.put(upload, data=b"a,b\n1,2\n", headers={"Content-Type": "text/csv"}, timeout=10).ok
    queued = service.submit(ALICE, task_id)
    late = requests.put(upload, data=b"a,b\nevil,row\n", headers={"Content-Type": "text/csv"}, timeout=10)
    assert (late.status_code, late.json()["code"]) == (409, "invalid_transition")
    assert store.get(queued.input_object_path).body == b"a,b\n1,2\n"


# --- the server around the pages ----------------------------------------------------------------


@pytest.fixture
def gated_type() -> Iterator[str]:
    """The tests' task type that waits for a gate file (tests/worker_handlers.py), registered for this test."""
    from s3task import handlers

    handlers.all_types()  # the built-in types load lazily: load them first, or they would be removed below
    before = set(handlers._REGISTRY)
    import worker_handlers

    handlers.register(worker_handlers.Gated)
    yield worker_handlers.Gated.name
    for name in set(handlers._REGISTRY) - before:
        handlers._REGISTRY.pop(name, None)


def test_the_server_runs_the_worker_and_hands_its_task_back_when_it_stops(gated_type, tmp_path: Path) -> None:
    """No page is opened: the embedded worker starts with the server and is stopped by its shutdown hook."""
    root = tmp_path / "store"
    service = TaskService(LocalStore(root), Layout())
    task_id = service.create(ALICE, "held", gated_type, {"gate": str(tmp_path / "never")}).record.task_id
    service.upload_input(ALICE, task_id, b"a\n1\n")
    service.submit(ALICE, task_id)
    env = base_env(S3TASK_STORE=str(root), S3TASK_HANDLERS="worker_handlers")
    log = tmp_path / "streamlit.log"
    with app_on(free_port(), env, log) as (url, _):
        assert requests.get(url + "/api/openapi.json", timeout=5).ok  # the API is served by the same process
        wait_for(lambda: service.get(ALICE, task_id).status == "running", timeout=60, what="the task claimed")
    # app_on sent SIGTERM and waited for the exit.
    record = service.get(ALICE, task_id)
    assert record.status == "queued", log.read_text()
    assert record.history[-1]["event"] == "release" and record.failed_attempts == 0


# --- a late PUT on S3 -----------------------------------------------------------------------------


def test_a_late_put_on_s3_cannot_change_what_is_processed(moto_http_bucket, tmp_path: Path) -> None:
    endpoint, bucket = moto_http_bucket
    store = S3Store(
        bucket, client=boto_client(endpoint, _RECORD_CONFIG), data_client=boto_client(endpoint, _DATA_CONFIG)
    )
    service = TaskService(store, Layout("batch-tasks"), max_attempts=1)
    created = service.create(ALICE, "late put", "copy")
    task_id, headers = created.record.task_id, {"Content-Type": "text/csv"}
    assert requests.put(created.upload_url, data=b"a,b\n1,2\n", headers=headers, timeout=10).ok
    queued = service.submit(ALICE, task_id)
    # S3 cannot refuse it: the URL is still valid, so the object is replaced...
    assert requests.put(created.upload_url, data=b"a,b\nevil,row\n", headers=headers, timeout=10).ok
    assert store.head(queued.input_object_path).etag != queued.input_etag
    # ...but the worker reads the input only if it is the one pinned at submit.
    env = base_env(AWS_ENDPOINT_URL_S3=endpoint, **AWS)
    cmd = procs.worker_args(f"s3://{bucket}/batch-tasks", "--once", "--poll-interval", "0.2")
    done = procs.run(cmd, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    record = read_record(store, service.layout, task_id)[0]
    assert (record.status, record.final) == ("failed", True)
    assert "the input file changed after the task was submitted" in (record.last_error or "")
    assert not store.list_keys(service.layout.task_prefix(task_id) + "output")


# --- the URLs themselves ---------------------------------------------------------------------------


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


def test_presigned_urls_carry_expiry_signed_content_type_and_the_exact_key(tmp_path: Path, request) -> None:
    store = make_store("moto", tmp_path, request)
    service = TaskService(store, Layout("batch-tasks"), url_seconds=600)
    created = service.create(ALICE, "March list", "copy")
    task_id = created.record.task_id
    put = urlparse(created.upload_url)
    q = query_of(created.upload_url)
    assert f"/{task_id}/input.csv" in put.path and put.path.endswith("batch-tasks/" + task_id + "/input.csv")
    assert q["X-Amz-Expires"] == "600"
    assert set(q["X-Amz-SignedHeaders"].split(";")) == {"content-type", "host"}  # the browser must send text/csv
    assert created.upload_content_type == "text/csv"

    # A large file: a multipart upload whose part URLs outlive the upload at a slow rate.
    size = 100 * 2**20
    plan = service.begin_browser_upload(ALICE, "big", "copy", None, None, size)  # no fingerprint: not noted
    assert plan.upload_id and plan.part_size == PART_SIZE and plan.parts and len(plan.parts) == 13
    parts = [query_of(u) for u in plan.parts]
    assert [p["partNumber"] for p in parts] == [str(n) for n in range(1, 14)]
    assert {p["uploadId"] for p in parts} == {plan.upload_id}
    assert {p["X-Amz-Expires"] for p in parts} == {str(600 + 100)}  # + 100 s at 1 MB/s
    browser_view = direct.Plan(plan, "f").for_browser()
    assert browser_view["parts"] == list(plan.parts) and "url" not in browser_view
    huge = 200 * 2**30
    assert part_size_for(huge) > PART_SIZE and -(-huge // part_size_for(huge)) <= 1000
    assert part_url_seconds(10**13, 600) == MAX_URL_SECONDS
    small = service.begin_browser_upload(ALICE, "small", "copy", None, None, 10)
    assert small.parts is None and direct.Plan(small, "f").for_browser()["content_type"] == "text/csv"

    # The download: the output's key, a friendly file name, the same short life.
    store.put(service.layout.input_key(task_id), b"a\n1\n", PutMode.OVERWRITE)
    _complete(service, task_id)
    got = query_of(service.output_url(ALICE, task_id))
    assert got["X-Amz-Expires"] == "600"
    assert got["response-content-disposition"] == f'attachment; filename="March-list-{task_id[-6:].lower()}.csv"'
    assert urlparse(service.output_url(ALICE, task_id)).path.endswith(f"{task_id}/output-attempt-1.csv")


def _complete(service: TaskService, task_id: str) -> None:
    """What a worker does, in short: claim, write the output, complete."""
    store, layout = service.store, service.layout
    service.submit(ALICE, task_id)
    claim = update_record(
        store, layout, task_id, lambda r, now: lifecycle.claim(r, now, worker_id="w", lease_seconds=60)[0]
    )
    lease = lifecycle.Lease(claim.attempt_id, claim.lease_token or "", "w")
    key = layout.output_key(task_id, claim.attempt_id)
    store.put(key, b"a,error\n1,\n", PutMode.CREATE)
    update_record(
        store,
        layout,
        task_id,
        lambda r, now: lifecycle.complete(
            r, now, lease=lease, output_path=key, progress=lifecycle.Progress(1, 1, 0, 4), row_count=1
        ),
    )


def test_local_transfer_urls_name_one_key_one_method_and_expire(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    now = [1_000_000.0]
    signer = UrlSigner(local_secret(store.root), clock=lambda: now[0])
    service = TaskService(store, Layout(), url_seconds=300, url_signer=signer)
    created = service.create(ALICE, "local", "copy")
    token = created.upload_url.removeprefix("/transfer/")
    assert created.upload_url.startswith("/transfer/") and token != created.upload_url
    grant = signer.verify(token, "PUT")
    assert (grant.key, grant.content_type, grant.expires) == (created.record.input_object_path, "text/csv", 1_000_300)
    with pytest.raises(TransferDenied, match="allows PUT only"):
        signer.verify(token, "GET")
    now[0] = 1_000_300.0
    with pytest.raises(TransferDenied, match="expired"):
        signer.verify(token, "PUT")


# --- init and doctor against moto --------------------------------------------------------------------


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_init_applies_cors_and_lifecycle_idempotently_and_doctor_checks_cors(cors_moto, monkeypatch, capsys) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", cors_moto)
    monkeypatch.delenv("S3TASK_APP_ORIGIN", raising=False)
    bucket, app = f"init-{uuid.uuid4().hex[:8]}", "https://tasks.example.org"
    store = ["--store", f"s3://{bucket}/jobs"]
    s3 = boto_client(cors_moto)

    code, out, _ = run_cli(capsys, *store, "init", "--origin", app)
    assert code == 0
    assert out.splitlines() == [
        f"created: bucket {bucket}",
        f"added: CORS rule s3task-browser-transfers: PUT, GET, HEAD from {app}, exposes ETag",
        "added: lifecycle rule s3task-abort-incomplete-uploads: abort unfinished multipart uploads after 1 day",
    ]
    (rule,) = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    assert rule["AllowedOrigins"] == [app] and sorted(rule["AllowedMethods"]) == ["GET", "HEAD", "PUT"]
    assert "Content-Type" in rule["AllowedHeaders"] and rule["ExposeHeaders"] == ["ETag"]
    (abort,) = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert abort["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert abort["Filter"]["Prefix"] == "jobs/"

    # The preflight a browser at the app's origin sends before its PUT is answered; another origin's is not.
    key_url = f"{cors_moto}/{bucket}/jobs/x/input.csv"
    pre = {"Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "content-type"}
    ok = requests.options(key_url, headers={"Origin": app, **pre}, timeout=5)
    assert ok.status_code == 200 and ok.headers["Access-Control-Allow-Origin"] == app
    assert "PUT" in ok.headers["Access-Control-Allow-Methods"] and "ETag" in ok.headers["Access-Control-Expose-Headers"]
    assert requests.options(key_url, headers={"Origin": "https://evil.example", **pre}, timeout=5).status_code == 403

    # Run again: nothing changes. Rules that are not ours are kept when ours change.
    code, out, _ = run_cli(capsys, *store, "init", "--origin", app)
    assert code == 0 and [line.split(":")[0] for line in out.splitlines()] == ["unchanged"] * 3
    other = {"ID": "website", "AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [other, rule]})
    code, out, _ = run_cli(
        capsys, *store, "init", "--origin", app, "--origin", "http://127.0.0.1:8501", "--retain-days", "30"
    )
    assert code == 0
    assert (
        "updated: CORS rule s3task-browser-transfers: PUT, GET, HEAD from "
        "https://tasks.example.org, http://127.0.0.1:8501" in out
    )
    assert (
        "added: lifecycle rule s3task-retention: delete task inputs and outputs (objects over 256 KiB) after 30 days"
        in out
    )
    rules = {r.get("ID"): r for r in s3.get_bucket_cors(Bucket=bucket)["CORSRules"]}
    assert set(rules) == {"website", "s3task-browser-transfers"}
    assert rules["s3task-browser-transfers"]["AllowedOrigins"] == [app, "http://127.0.0.1:8501"]
    by_id = {r["ID"]: r for r in s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]}
    assert by_id["s3task-retention"]["Expiration"] == {"Days": 30}
    code, out, _ = run_cli(capsys, *store, "init", "--origin", app, "--retain-days", "0")
    assert "removed: lifecycle rule s3task-retention" in out
    assert [r["ID"] for r in s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]] == [
        "s3task-abort-incomplete-uploads"
    ]

    # doctor: the configured origin is let in; another is not, and it says how to fix that.
    code, out, err = run_cli(capsys, *store, "doctor", "--origin", app)
    assert code == 0, err
    assert f"ok: the bucket's CORS rule lets browsers at {app} upload (PUT)" in out
    monkeypatch.setenv("S3TASK_APP_ORIGIN", "https://other.example.org")
    code, out, err = run_cli(capsys, *store, "doctor")
    assert code == 1
    # (the website's rule lets every origin GET; only ours lets the app's origin PUT)
    assert "problem: the CORS rule for https://other.example.org does not allow PUT, HEAD" in err
    assert "python -m s3task init --origin" in err


def test_doctor_without_cors_and_init_on_a_local_store(cors_moto, monkeypatch, capsys, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", cors_moto)
    bucket = f"bare-{uuid.uuid4().hex[:8]}"
    boto_client(cors_moto).create_bucket(Bucket=bucket)
    code, _, err = run_cli(capsys, "--store", f"s3://{bucket}/p", "doctor")
    assert code == 1 and "problem: the bucket has no CORS rule" in err
    code, out, _ = run_cli(capsys, "--store", f"s3://{bucket}/p", "init", "--origin", "not an origin")
    assert code == 1
    code, out, _ = run_cli(capsys, "--store", str(tmp_path / "local"), "init")
    assert code == 0 and "nothing to set up" in out
    code, out, _ = run_cli(capsys, "--store", str(tmp_path / "local"), "doctor")
    assert code == 0 and "signed /transfer routes" in out


# --- the page logic without a browser (AppTest) -------------------------------------------------------


@pytest.fixture
def new_task_page(tmp_path: Path, monkeypatch):
    from streamlit import config as st_config
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("S3TASK_STORE", str(tmp_path / "store"))
    monkeypatch.setenv("S3TASK_EMBEDDED_WORKER", "0")
    monkeypatch.delenv("S3TASK_DIRECT_UPLOAD", raising=False)
    saved = st_config.get_option("server.address")
    st_config.set_option("server.address", "127.0.0.1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=20)
    at.run()
    at.switch_page("pages/new_task.py").run()
    yield at, TaskService(LocalStore(tmp_path / "store"), Layout())
    st_config.set_option("server.address", saved)


CSV = b"name,age\nann,007\nbob,42\n"


def browser_reports(at, **state: object) -> None:
    """What the component's JavaScript would send: its state (``file``) and events (``uploaded``, ``failed``)."""
    at.session_state["upload_0"] = {**dict(at.session_state["upload_0"]), **state}
    at.run()


def chosen(data: bytes = CSV, size: int | None = None) -> dict[str, object]:
    return {"id": "f1", "name": "people.csv", "size": size or len(data), "head": base64.b64encode(data).decode()}


def said(elements) -> str:
    """What a list of st.error/st.info/... says, with fmt.plain's escapes taken out."""
    return "\n".join(str(e.value) for e in elements).replace("\\", "").replace("\u2060", "")


def plan_sent_to_browser(at) -> dict | None:
    return json.loads(at.get("bidi_component")[0].proto.json)["upload"]


def test_preview_from_the_first_bytes_then_the_browser_uploads_and_the_task_is_queued(new_task_page) -> None:
    at, service = new_task_page
    assert not at.exception and plan_sent_to_browser(at) is None
    # Only the first 64 KB reach the app; a row cut at their end is left out of the preview.
    head = CSV + b"cy,1"
    browser_reports(at, file=chosen(head, size=10 * 2**20))
    assert at.dataframe[0].value["age"].tolist() == ["007", "42"]
    assert "2 columns: name, age" in at.caption[-2].value or any("2 columns" in c.value for c in at.caption)
    at.text_input[0].input("People").run()
    next(b for b in at.button if b.label == "Submit").click().run()
    plan = plan_sent_to_browser(at)
    task_id = plan["id"]
    assert plan["file"] == "f1" and plan["content_type"] == "text/csv" and plan["url"].startswith("/transfer/")
    assert service.get(LOCAL, task_id).status == "created"
    assert "Cancel upload" in [b.label for b in at.button] and "Submit" not in [b.label for b in at.button]

    service.upload_input(LOCAL, task_id, CSV)  # what the browser's PUT does
    browser_reports(at, uploaded={"id": task_id, "file": "f1", "size": 10 * 2**20})
    assert "holds 24 bytes of the file's 10,485,760" in said(at.error)  # a short upload is not queued
    assert service.get(LOCAL, task_id).status == "abandoned"

    next(b for b in at.button if b.label == "Submit").click().run()
    task_id = plan_sent_to_browser(at)["id"]
    service.upload_input(LOCAL, task_id, b"x" * (10 * 2**20))
    browser_reports(at, uploaded={"id": task_id, "file": "f1", "size": 10 * 2**20})
    assert not at.exception
    assert service.get(LOCAL, task_id).status == "queued"
    assert at.query_params["id"] == task_id


def test_a_browser_that_cannot_reach_the_store_falls_back_to_the_uploader(new_task_page) -> None:
    at, service = new_task_page
    browser_reports(at, file=chosen())
    at.text_input[0].input("People").run()
    next(b for b in at.button if b.label == "Submit").click().run()
    task_id = plan_sent_to_browser(at)["id"]
    browser_reports(
        at, failed={"id": task_id, "kind": "network", "message": "the browser could not reach the task store"}
    )
    assert service.get(LOCAL, task_id).status == "abandoned"
    assert "could not send the file to the task store directly" in said(at.warning)
    assert at.file_uploader and not at.get("bidi_component")  # Streamlit's uploader instead
    at.file_uploader[0].set_value(("people.csv", CSV, "text/csv")).run()
    next(b for b in at.button if b.label == "Submit").click().run()
    assert service.get(LOCAL, at.query_params["id"]).status == "queued"


def test_a_store_that_gives_no_upload_link_now_falls_back_to_the_uploader(new_task_page, monkeypatch) -> None:
    """Azure signed in with a token gives no links while it refuses the identity a user delegation key
    (s3task/store/azure_uploads.py): the page uploads through the app, and leaves no task behind."""
    from s3task.tasks.urls import Urls

    at, service = new_task_page
    browser_reports(at, file=chosen())
    at.text_input[0].input("People").run()
    monkeypatch.setattr(
        Urls, "put_request", lambda self, key, content_type, size=None: (None, {"Content-Type": content_type})
    )
    next(b for b in at.button if b.label == "Submit").click().run()
    assert not at.exception and not at.error, said(at.error)
    assert "gives no upload links now" in said(at.warning) and "uploads it through the app instead" in said(at.warning)
    assert service.list(LOCAL).tasks == []  # the task made for the link: removed
    assert at.file_uploader and not at.get("bidi_component")  # Streamlit's uploader instead
    at.file_uploader[0].set_value(("people.csv", CSV, "text/csv")).run()
    next(b for b in at.button if b.label == "Submit").click().run()
    assert service.get(LOCAL, at.query_params["id"]).status == "queued"


def test_cancelling_an_upload_abandons_its_task(new_task_page) -> None:
    at, service = new_task_page
    browser_reports(at, file=chosen())
    at.text_input[0].input("People").run()
    next(b for b in at.button if b.label == "Submit").click().run()
    task_id = plan_sent_to_browser(at)["id"]
    next(b for b in at.button if b.label == "Cancel upload").click().run()
    assert service.get(LOCAL, task_id).status == "abandoned"
    assert plan_sent_to_browser(at) is None and "Upload cancelled" in said(at.info)
    # An HTTP failure (an expired link, a refused type) says what happened; Submit tries again.
    next(b for b in at.button if b.label == "Submit").click().run()
    task_id = plan_sent_to_browser(at)["id"]
    browser_reports(at, failed={"id": task_id, "kind": "http", "status": 403, "message": "AccessDenied"})
    assert "The upload failed (AccessDenied)" in said(at.error)
    assert service.get(LOCAL, task_id).status == "abandoned" and not at.warning


def test_settings_know_the_app_origin() -> None:
    assert Settings.load(environ={"S3TASK_APP_ORIGIN": "https://t.example"}).app_origin == "https://t.example"
