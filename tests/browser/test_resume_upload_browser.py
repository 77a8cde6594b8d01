"""Continue upload in the browser (issue 24 item 1): an upload in parts that stops — the page reloaded
mid-upload, the connection cut part-way through a part — goes on into the same task, sending only what
the store does not hold; a different file picked on the task's page is refused in plain words and the
task still waits. In Chromium, on moto's S3 server over HTTP behind a proxy that counts every body byte
that reaches the store (tests/s3proxy.py), with the browser's upload throttled as in
test_upload_in_view.py. The local store takes a browser's file in one piece (it has no parts): there
Continue upload sends the whole file again, checked the same way (the refusal is tested there too).

The bytes sent after an interruption are written to tests/artifacts/resume_upload.json and, with
UPDATE_DOC_SHOTS=1, the screenshot to docs/images/continue-upload.png (docs/TRANSFERS.md shows both).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import procs
import pytest
from browsers import ARTIFACTS, base_env, moto_without_global_cors, settle, shot, streamlit_app
from conftest import CHROMIUM, boto_client, free_port, wait_for
from s3proxy import byte_counting_proxy

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; see tests/browser/test_browser.py"),
]

ROOT = Path(__file__).resolve().parents[2]
DOCS_SHOT = ROOT / "docs" / "images" / "continue-upload.png"
FIGURES = ARTIFACTS / "resume_upload.json"
MB = 1 << 20
SIZE = 64 * MB  # 8 parts of 8 MiB (ui/direct.py), sent four at a time
PART = 8 * MB
#: Bytes a second the browser may send before the reload: the first four parts take about 4 s.
RATE = 8 * MB
AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
PREFIX = "batch-tasks"


@pytest.fixture(scope="module")
def cors_moto() -> Iterator[str]:
    """moto's S3 server answering CORS from the bucket's rule (which exposes ETag, as the parts need),
    not with its global allow-everything (as in test_direct_transfer.py)."""
    with moto_without_global_cors() as url:
        yield url


def make_csv(path: Path, size: int, marker: bytes = b"") -> Path:
    line = b"%07d,customer %07d,some notes about this customer" + marker + b"\n"
    with path.open("wb") as f:
        f.write(b"id,name,notes\n")
        n = 0
        while f.tell() < size:
            f.write(line % (n, n))
            n += 1
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_csv(tmp_path_factory.mktemp("files") / "customers.csv", SIZE)


def throttle(page, rate: int) -> None:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.emulateNetworkConditions",
             {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": rate})  # fmt: skip


def bucket_for(cors_moto: str, port: int) -> tuple[str, dict[str, str]]:
    """A new bucket set up by ``s3task init`` for the app at ``port`` (its CORS rule)."""
    bucket = f"resume-{uuid.uuid4().hex[:8]}"
    env = base_env(S3TASK_STORE=f"s3://{bucket}/{PREFIX}", AWS_ENDPOINT_URL_S3=cors_moto, **AWS)
    init = procs.cli("init", "--origin", f"http://127.0.0.1:{port}", env=env, timeout=60)
    assert init.returncode == 0, init.stderr
    return bucket, env


def task_ids(s3, bucket: str) -> list[str]:
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=PREFIX + "/").get("Contents", [])]
    return sorted({k.split("/")[1] for k in keys if k.endswith("/status.json")})


def record_of(s3, bucket: str, task_id: str) -> dict:
    return json.loads(s3.get_object(Bucket=bucket, Key=f"{PREFIX}/{task_id}/status.json")["Body"].read())


def held_parts(s3, bucket: str, task_id: str) -> int:
    uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    mine = [u for u in uploads if u["Key"] == f"{PREFIX}/{task_id}/input.csv"]
    if not mine:
        return 0
    return len(s3.list_parts(Bucket=bucket, Key=mine[0]["Key"], UploadId=mine[0]["UploadId"]).get("Parts", []))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def start_on_new_task(page, url: str, path: Path) -> None:
    from playwright.sync_api import expect

    page.goto(f"{url}/new_task")
    settle(page)
    page.locator("input[type='file']").set_input_files(str(path))
    expect(page.get_by_text("3 columns: id, name, notes")).to_be_visible(timeout=30_000)
    settle(page)


def continue_on_task_page(page, url: str, task_id: str, path: Path, *, screenshot: bool = False) -> None:
    from playwright.sync_api import expect

    page.goto(f"{url}/task?id={task_id}")
    settle(page)
    expect(page.get_by_text("did not finish. To continue it, choose the same file again")).to_be_visible(timeout=20_000)
    page.locator("input[type='file']").set_input_files(str(path))
    button = page.get_by_role("button", name="Continue upload")
    expect(button).to_be_enabled(timeout=30_000)
    settle(page)
    if screenshot:
        shot(page, "continue-upload")
        if os.environ.get("UPDATE_DOC_SHOTS") == "1":
            shutil.copyfile(ARTIFACTS / "continue-upload.png", DOCS_SHOT)
    button.click()


def wait_queued(s3, bucket: str, task_id: str) -> dict:
    return wait_for(
        lambda: (r := record_of(s3, bucket, task_id))["status"] != "created" and r, 120, what="the task queued"
    )


def assert_input_is_the_file(s3, bucket: str, task_id: str, path: Path) -> None:
    stored = s3.get_object(Bucket=bucket, Key=f"{PREFIX}/{task_id}/input.csv")["Body"].read()
    assert sha256(stored) == sha256(path.read_bytes()), "the input in the store is not the file picked"


def keep_figure(name: str, value: dict) -> None:
    figures = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    figures[name] = value
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text(json.dumps(figures, indent=2) + "\n")


def test_a_reload_mid_upload_then_continue_upload_sends_only_the_missing_parts(
    browser, cors_moto: str, big: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    port = free_port()
    bucket, env = bucket_for(cors_moto, port)
    s3 = boto_client(cors_moto)
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.on("dialog", lambda dialog: dialog.accept())  # "Leave page?": yes, leave (the reload goes on)
    try:
        with byte_counting_proxy(cors_moto) as (proxy, counted):
            env = {**env, "AWS_ENDPOINT_URL_S3": proxy, "S3TASK_EMBEDDED_WORKER": "0"}
            with procs.Procs(tmp_path, env) as started:
                url = started.streamlit("app.py", port=port, name="app").url
                start_on_new_task(page, url, big)
                throttle(page, RATE)
                page.get_by_role("button", name="Submit").click()
                (task_id,) = wait_for(lambda: task_ids(s3, bucket), 30, what="the task created")
                held = wait_for(lambda: held_parts(s3, bucket, task_id) >= 4 and held_parts(s3, bucket, task_id), 60,
                                what="four parts in the store")  # fmt: skip
                page.evaluate("() => location.reload()")  # the person reloads mid-upload
                settle(page)
                assert record_of(s3, bucket, task_id)["status"] == "created"
                # The New task page they land on offers it (issue 36 item 13); its link is the task's page.
                offered = page.get_by_text("did not finish.").filter(has_text=big.name)
                expect(offered).to_be_visible(timeout=30_000)
                link = page.get_by_role("link", name="Continue it")
                assert link.get_attribute("href", timeout=10_000).endswith(f"task?id={task_id}")
                shot(page, "new-task-unfinished-upload")
                before = counted.received
                throttle(page, -1)
                continue_on_task_page(page, url, task_id, big, screenshot=True)
                record = wait_queued(s3, bucket, task_id)
                sent_after = counted.received - before
        assert task_ids(s3, bucket) == [task_id], "continuing made another task"
        assert (record["status"], record["input_size_bytes"]) == ("queued", big.stat().st_size)
        assert_input_is_the_file(s3, bucket, task_id, big)
        assert counted.received <= 1.3 * big.stat().st_size, (
            f"{counted.received:,} bytes sent for a {big.stat().st_size:,}-byte file"
        )
        # Only what the store did not hold went after the reload (the parts held then: at least `held`).
        assert sent_after <= big.stat().st_size - held * PART + 64 * 1024, f"{sent_after:,} bytes sent after the reload"
    finally:
        page.close()
    keep_figure("reload", {
        "file_bytes": big.stat().st_size, "parts": -(-big.stat().st_size // PART), "parts_held_at_reload": held,
        "bytes_sent_in_all": counted.received, "bytes_sent_after_reload": sent_after,
        "sent_over_file": round(counted.received / big.stat().st_size, 3),
    })  # fmt: skip


def test_a_connection_cut_part_way_through_a_part_is_retried_on_its_own(
    browser, cors_moto: str, big: Path, tmp_path: Path
) -> None:
    port = free_port()
    bucket, env = bucket_for(cors_moto, port)
    s3 = boto_client(cors_moto)
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    try:
        with byte_counting_proxy(cors_moto, cut_after=PART // 2) as (proxy, counted):
            env = {**env, "AWS_ENDPOINT_URL_S3": proxy, "S3TASK_EMBEDDED_WORKER": "0"}
            with procs.Procs(tmp_path, env) as started:
                url = started.streamlit("app.py", port=port, name="app").url
                start_on_new_task(page, url, big)
                page.get_by_role("button", name="Submit").click()
                (task_id,) = wait_for(lambda: task_ids(s3, bucket), 30, what="the task created")
                record = wait_queued(s3, bucket, task_id)
        assert len(counted.cut) == 1, "the proxy did not cut a part"
        assert task_ids(s3, bucket) == [task_id]
        assert (record["status"], record["input_size_bytes"]) == ("queued", big.stat().st_size)
        assert_input_is_the_file(s3, bucket, task_id, big)
        # The cut part went again on its own: the half sent before the cut, and nothing else more.
        assert counted.received <= 1.3 * big.stat().st_size
        assert counted.received < big.stat().st_size + PART, f"{counted.received:,} bytes: more than the cut part again"
    finally:
        page.close()
    keep_figure("cut", {"file_bytes": big.stat().st_size, "bytes_sent_in_all": counted.received,
                        "sent_over_file": round(counted.received / big.stat().st_size, 3)})  # fmt: skip


def test_a_part_that_keeps_breaking_stops_the_upload_and_the_tasks_page_continues_it(
    browser, cors_moto: str, big: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    port = free_port()
    bucket, env = bucket_for(cors_moto, port)
    s3 = boto_client(cors_moto)
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    try:
        # One part breaks off at each try (the browser's four, and any Chromium makes of its own).
        with byte_counting_proxy(cors_moto, cut_after=PART // 16, cuts=1000) as (proxy, counted):
            env = {**env, "AWS_ENDPOINT_URL_S3": proxy, "S3TASK_EMBEDDED_WORKER": "0"}
            with procs.Procs(tmp_path, env) as started:
                url = started.streamlit("app.py", port=port, name="app").url
                start_on_new_task(page, url, big)
                page.get_by_role("button", name="Submit").click()
                page.wait_for_url(f"{url}/task?id=*", timeout=120_000)  # the upload stopped: the task's page
                task_id = page.url.rsplit("=", 1)[1]
                expect(page.get_by_text("What the task store holds is kept. Choose the file again to continue."))\
                    .to_be_visible(timeout=20_000)  # fmt: skip
                assert len(counted.cut) >= 4 and len(set(counted.cut)) == 1, counted.cut
                counted.stop_cutting()  # the network is good again
                assert record_of(s3, bucket, task_id)["status"] == "created"
                held = held_parts(s3, bucket, task_id)
                continue_on_task_page(page, url, task_id, big)
                record = wait_queued(s3, bucket, task_id)
        size = big.stat().st_size
        assert task_ids(s3, bucket) == [task_id]
        assert (record["status"], record["input_size_bytes"]) == ("queued", size)
        assert_input_is_the_file(s3, bucket, task_id, big)
        assert held >= 1 and counted.received <= 1.3 * size, f"{counted.received:,} bytes for {size:,}"
    finally:
        page.close()
    keep_figure("cut_until_stopped", {"file_bytes": size, "parts_held_when_stopped": held, "cuts": len(counted.cut),
                                      "bytes_sent_in_all": counted.received,
                                      "sent_over_file": round(counted.received / size, 3)})  # fmt: skip


def test_a_part_the_store_keeps_answering_503_slowdown_stops_the_upload_and_keeps_the_task(
    browser, cors_moto: str, big: Path, tmp_path: Path
) -> None:
    """Throttling is when the parts held must stay: a 5xx at every try of one part used to cancel the task
    and drop every part (found by the second outside review; a broken connection was kept, a 503 was not)."""
    from playwright.sync_api import expect

    port = free_port()
    bucket, env = bucket_for(cors_moto, port)
    s3 = boto_client(cors_moto)
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    try:
        with byte_counting_proxy(cors_moto, slow_part="partNumber=5") as (proxy, counted):
            env = {**env, "AWS_ENDPOINT_URL_S3": proxy, "S3TASK_EMBEDDED_WORKER": "0"}
            with procs.Procs(tmp_path, env) as started:
                url = started.streamlit("app.py", port=port, name="app").url
                start_on_new_task(page, url, big)
                page.get_by_role("button", name="Submit").click()
                page.wait_for_url(f"{url}/task?id=*", timeout=120_000)  # the upload stopped: the task's page
                task_id = page.url.rsplit("=", 1)[1]
                expect(page.get_by_text("What the task store holds is kept. Choose the file again to continue."))\
                    .to_be_visible(timeout=20_000)  # fmt: skip
                assert record_of(s3, bucket, task_id)["status"] == "created"
                held = held_parts(s3, bucket, task_id)
                counted.stop_cutting()  # the store takes part 5 again
                continue_on_task_page(page, url, task_id, big)
                record = wait_queued(s3, bucket, task_id)
        assert held >= 1 and task_ids(s3, bucket) == [task_id]
        assert (record["status"], record["input_size_bytes"]) == ("queued", big.stat().st_size)
        assert_input_is_the_file(s3, bucket, task_id, big)
    finally:
        page.close()


def refused_then_waits(page, url: str, task_id: str, other: Path) -> None:
    from playwright.sync_api import expect

    page.goto(f"{url}/task?id={task_id}")
    settle(page)
    # The task page's picker can take a busy machine's half minute to come: wait for it, then choose the file.
    # Twice in some twenty clean-clone runs it never came (not reproduced in ten runs since); a person would
    # load the page again, and so does this, once, saying what the page showed (a warning in the summary).
    picker = page.locator("input[type='file']")
    for tries_left in (1, 0):
        try:
            picker.wait_for(state="attached", timeout=60_000)
            break
        except Exception as e:  # what the page shows instead: the words say which branch of the page ran
            shot(page, "continue-upload-no-picker")
            said = f"no file picker on the task's page; it says:\n{page.inner_text('body')[:3000]}"
            if not tries_left:
                raise AssertionError(said) from e
            warnings.warn(f"{said}\n(loading the page again)", stacklevel=1)
            page.reload()
            settle(page)
    picker.set_input_files(str(other))
    expect(page.get_by_text(f"This is not the file task {task_id} was made for")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("nothing was sent, and the task still waits for 'customers.csv'")).to_be_visible()
    expect(page.get_by_role("button", name="Continue upload")).to_be_disabled()


def test_a_different_file_is_refused_in_plain_words_and_the_task_still_waits(
    browser, cors_moto: str, big: Path, tmp_path: Path
) -> None:
    port = free_port()
    bucket, env = bucket_for(cors_moto, port)
    s3 = boto_client(cors_moto)
    other = make_csv(tmp_path / "customers.csv", SIZE, marker=b" (edited)")  # same name, other bytes
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.on("dialog", lambda dialog: dialog.accept())
    try:
        with procs.Procs(tmp_path, {**env, "S3TASK_EMBEDDED_WORKER": "0"}) as started:
            url = started.streamlit("app.py", port=port, name="app").url
            start_on_new_task(page, url, big)
            throttle(page, RATE)
            page.get_by_role("button", name="Submit").click()
            (task_id,) = wait_for(lambda: task_ids(s3, bucket), 30, what="the task created")
            wait_for(lambda: held_parts(s3, bucket, task_id) >= 1, 60, what="a part in the store")
            page.evaluate("() => location.reload()")
            settle(page)
            throttle(page, -1)
            held = held_parts(s3, bucket, task_id)
            refused_then_waits(page, url, task_id, other)
            shot(page, "continue-upload-refused")
            record = record_of(s3, bucket, task_id)
            assert record["status"] == "created" and record["input_upload"]["upload_id"]
            assert held_parts(s3, bucket, task_id) == held, "a refused file changed the parts held"
    finally:
        page.close()


def test_on_the_local_store_continue_upload_sends_the_whole_file_again_into_the_same_task(
    browser, big: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    other = make_csv(tmp_path / "customers.csv", SIZE, marker=b" (edited)")
    env = base_env(S3TASK_STORE=str(store), S3TASK_EMBEDDED_WORKER="0")
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.on("dialog", lambda dialog: dialog.accept())
    try:
        with streamlit_app(env, tmp_path / "app.log") as url:
            start_on_new_task(page, url, big)
            throttle(page, RATE)
            page.get_by_role("button", name="Submit").click()
            path = wait_for(lambda: list(store.glob("**/status.json")), 30, what="the task created")[0]
            task_id = path.parent.name
            page.evaluate("() => location.reload()")
            settle(page)
            throttle(page, -1)
            assert json.loads(path.read_text())["status"] == "created"
            refused_then_waits(page, url, task_id, other)
            continue_on_task_page(page, url, task_id, big)
            record = wait_for(lambda: (r := json.loads(path.read_text()))["status"] != "created" and r, 120,
                              what="the task queued")  # fmt: skip
        assert [p.parent.name for p in store.glob("**/status.json")] == [task_id]
        assert (record["status"], record["input_size_bytes"]) == ("queued", big.stat().st_size)
        assert sha256((path.parent / "input.csv").read_bytes()) == sha256(big.read_bytes())
    finally:
        page.close()
