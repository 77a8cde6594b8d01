"""Notifications (docs/NOTIFICATIONS.md): email to a local SMTP server, signed webhooks to a local
HTTP receiver, exactly one sender per event across real worker processes, the outbox after a
SIGKILL, and the browser's title and notification in Chromium."""

from __future__ import annotations

import email
import email.policy
import http.server
import json
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import procs
import pytest
import worker_handlers  # noqa: F401  (registers the test task types here too)
from conftest import CHROMIUM, free_port, wait_for
from procs import S3Workers as Env
from support import CountingStore, csv_rows

from s3task import lifecycle, notify
from s3task.config import Settings, SettingsError
from s3task.layout import Layout
from s3task.notify import events, outbox
from s3task.record import HISTORY_LIMIT
from s3task.records import read_record, update_record
from s3task.store.base import PutMode
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService
from s3task.worker import Worker

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "NOTIFICATIONS.md"
SECRET = "a-shared-secret-of-some-length"
ANN = Actor("ann@example.com")
OPERATOR = Actor("ops@example.com", operator=True)


def documented_verify() -> Callable[..., dict]:
    """The receiver's check, taken from the docs as written (so the docs cannot drift)."""
    text = DOC.read_text()
    section = text.split("### Verifying a delivery", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code, "docs/NOTIFICATIONS.md lost its verification snippet"
    namespace: dict[str, Any] = {}
    exec(compile(code.group(1), str(DOC), "exec"), namespace)
    return namespace["verify"]


# --- a webhook receiver and an SMTP server on 127.0.0.1 -------------------------------------------


@dataclass
class Receiver:
    """Takes webhook POSTs; can refuse the first few, or hold requests until released."""

    url: str = ""
    verify: Callable[..., dict] | None = None
    fail_first: int = 0
    hold: Callable[[dict], bool] = lambda _event: False
    released: threading.Event = field(default_factory=threading.Event)
    received: list[dict] = field(default_factory=list)  # every POST, in order
    accepted: list[dict] = field(default_factory=list)  # those answered 2xx
    bad_signatures: int = 0
    holding: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ids(self, which: str = "accepted") -> Counter:
        with self.lock:
            return Counter(e["id"] for e in getattr(self, which))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver(verify=documented_verify())

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                event = state.verify(SECRET, body, self.headers.get("S3Task-Signature", ""))
            except ValueError:
                with state.lock:
                    state.bad_signatures += 1
                self.send_response(400)
                self.end_headers()
                return
            assert self.headers["S3Task-Event-Id"] == event["id"]
            with state.lock:
                state.received.append(event)
                refuse = len(state.received) <= state.fail_first
                hold = state.hold(event)
                state.holding += hold
            if hold:  # then refused: whoever sent it is not expected to be listening any more
                state.released.wait(60)
                with state.lock:
                    state.holding -= 1
                refuse = True
            if refuse:
                self.send_response(500)
                self.end_headers()
                return
            with state.lock:
                state.accepted.append(event)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    state.released.set()
    server.shutdown()
    server.server_close()


@dataclass
class Mailbox:
    url: str
    messages: list[email.message.EmailMessage] = field(default_factory=list)


@pytest.fixture
def smtp() -> Iterator[Mailbox]:
    from aiosmtpd.controller import Controller

    box = Mailbox("")

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
            box.messages.append(msg)  # type: ignore[arg-type]
            return "250 OK"

    port = free_port()
    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    box.url = f"smtp://127.0.0.1:{port}"
    yield box
    controller.stop()


# --- in this process, on the local store -------------------------------------------------------------


@dataclass
class Local:
    store: LocalStore
    layout: Layout
    service: TaskService
    settings: Settings
    #: This process's channels, handed to the service and the worker alike (None: no channel set).
    notifier: notify.Notifier | None

    def task(self, actor: Actor, name: str, body: bytes = b"a,b\n1,2\n3,4\n", submit: bool = True, **kw: Any) -> str:
        created = self.service.create(actor, name, kw.pop("task_type", "copy"), kw.pop("params", None))
        task_id = created.record.task_id
        self.service.upload_input(actor, task_id, body)
        if submit:
            self.service.submit(actor, task_id)
        return task_id

    def work(self) -> None:
        Worker(self.settings, self.store, self.layout, notifier=self.notifier).run_once()

    def pending(self) -> list[str]:
        return self.store.list_keys(self.layout.outbox_root())

    def record(self, task_id: str):
        return read_record(self.store, self.layout, task_id)[0]


def local_env(tmp_path: Path, **settings: Any) -> Local:
    values = {"store": str(tmp_path / "data"), "poll_interval": 0.1, "worker_id": "w-local", **settings}
    values.setdefault("notify_backoff_seconds", 0.05)
    values.setdefault("max_attempts", 1)
    values.setdefault("handlers", ("worker_handlers",))
    full = Settings(**values)
    notifier = notify.from_settings(full)
    store = LocalStore(tmp_path / "data")
    layout = Layout("batch-tasks")
    assert (notifier is not None) == bool(full.smtp_url or full.webhook_urls)
    return Local(store, layout, TaskService(store, layout, max_attempts=1, hook=notifier), full, notifier)


def drained(env: Local) -> bool:
    return env.notifier is None or env.notifier.drain(30)


def test_the_owner_gets_one_email_per_ending_with_a_link(tmp_path: Path, smtp: Mailbox) -> None:
    env = local_env(tmp_path, smtp_url=smtp.url, smtp_from="tasks@example.com", app_url="https://tasks.example.com/")
    done = env.task(ANN, "March customer list")
    boom = env.task(ANN, "Broken list", task_type="test_boom")
    by_ops = env.task(ANN, "Stopped by ops", submit=False)
    by_self = env.task(ANN, "Stopped by me", submit=False)
    not_an_address = env.task(Actor("bob"), "No address")
    env.service.cancel(OPERATOR, by_ops)
    env.service.cancel(ANN, by_self)
    env.work()
    assert env.record(done).status == "completed" and env.record(boom).state == "failed_for_good"
    assert env.record(not_an_address).status == "completed"
    wait_for(lambda: len(smtp.messages) >= 3, timeout=30, what="three emails")
    assert drained(env)
    assert len(smtp.messages) == 3
    by_subject = {m["Subject"]: m for m in smtp.messages}
    assert sorted(by_subject) == [
        "[s3task] Broken list — failed",
        "[s3task] March customer list — completed, 2 rows read, 2 rows written",
        "[s3task] Stopped by ops — cancelled by ops@example.com",
    ]  # one each; none for the task its owner cancelled, none for "bob", none for queued/started
    mail = by_subject["[s3task] March customer list — completed, 2 rows read, 2 rows written"]
    assert mail["To"] == "ann@example.com" and mail["From"] == "tasks@example.com"
    assert f"https://tasks.example.com/task?id={done}" in mail.get_content()
    assert "deliberate failure" in by_subject["[s3task] Broken list — failed"].get_content()
    assert env.pending() == []  # every outbox entry was settled


def test_a_recipes_owner_is_told_when_a_file_dropped_in_its_inbox_does_not_fit(
    tmp_path: Path, smtp: Mailbox, receiver: Receiver
) -> None:
    """Issue 33: a file whose header does not fit the recipe becomes a failed task, made as the recipe's owner,
    and the owner is told as they chose (an email to them, the webhook event), by the worker that swept it."""
    env = local_env(
        tmp_path, smtp_url=smtp.url, smtp_from="tasks@example.com", app_url="https://tasks.example.com/",
        webhook_urls=(receiver.url,), webhook_secret=SECRET,
    )  # fmt: skip
    first = env.task(ANN, "first", body=b"id,name,email\n1,ada,ada@example.com\n")
    recipe = env.service.recipes.save(ANN, "CRM weekly", first)
    inbox = env.layout.inbox_prefix(env.service.inboxes.id_of(recipe))
    env.store.put(inbox + "other.csv", b"sku,price\nA1,9.90\n", PutMode.OVERWRITE)  # as `cp` would drop it
    worker = Worker(env.settings, env.store, env.layout, notifier=env.notifier)
    assert worker.inbox.sweeper is not None, "a worker sweeps the inboxes by default"
    worker.inbox.sweeper.sweep()
    worker.inbox.sweeper.sweep()  # the local store takes a file whose size and time held over two sweeps
    [task] = [t for t in env.service.list(OPERATOR).tasks if t.task_name == "other.csv"]
    assert (task.created_by, task.state.value) == (ANN.name, "failed_for_good")
    words = "the file 'other.csv' does not fit recipe “CRM weekly” (ann@example.com's: copy): it has no column"
    assert task.last_error.startswith(words), task.last_error

    def failed() -> list[dict]:
        with receiver.lock:
            return [e for e in receiver.accepted if e["task"]["id"] == task.task_id and e["type"] == "task.failed"]

    [event] = wait_for(failed, timeout=30, what="the webhook event of the failed task")
    assert (event["task"]["created_by"], event["task"]["state"]) == (ANN.name, "failed_for_good")
    assert event["task"]["last_error"] == task.last_error
    wait_for(lambda: smtp.messages, timeout=30, what="the email to the recipe's owner")
    assert drained(env) and env.pending() == []
    [mail] = smtp.messages  # the recipe's first task is queued, not ended: no email of its own
    assert (mail["To"], mail["Subject"]) == (ANN.name, "[s3task] other.csv — failed")
    assert words in " ".join(mail.get_content().split())
    assert f"https://tasks.example.com/task?id={task.task_id}" in mail.get_content()


def test_no_channel_means_no_notification_and_no_extra_request(tmp_path: Path, smtp: Mailbox) -> None:
    env = local_env(tmp_path)
    assert env.notifier is None
    task_id = env.task(ANN, "quiet")
    env.work()
    assert env.record(task_id).status == "completed"
    assert not (tmp_path / "data" / "batch-tasks" / "outbox").exists()
    assert smtp.messages == []


@pytest.mark.parametrize("on", [False, True], ids=["off", "webhooks"])
def test_what_notifications_cost_in_requests(tmp_path: Path, receiver: Receiver, on: bool) -> None:
    """docs/NOTIFICATIONS.md: with a channel, a PUT and a DELETE per state change; without, nothing."""
    channels = {"webhook_urls": (receiver.url,), "webhook_secret": SECRET} if on else {}
    env = local_env(tmp_path, **channels)
    env.store = CountingStore(tmp_path / "data")
    env.service = TaskService(env.store, env.layout, max_attempts=1, hook=env.notifier)
    task_id = env.task(ANN, "counted")  # submitted, then started and completed: three state changes
    env.work()
    assert env.record(task_id).status == "completed"
    if on:
        wait_for(lambda: len(receiver.accepted) == 3, timeout=30, what="three events")
        wait_for(lambda: env.pending() == [], timeout=30, what="the outbox empty")
    # (A worker's sweep adds one LIST every third of outbox_recover_seconds; run_once does not sweep.)
    outbox_calls = Counter(kind for kind, key in env.store.calls if "/outbox/" in key and kind != "list")
    assert outbox_calls == (Counter(put=3, delete=3) if on else Counter())
    if not on:
        assert not any("/outbox/" in key for _, key in env.store.calls)


def test_settings_are_checked_where_they_are_loaded(tmp_path: Path) -> None:
    for name, bad in [
        ("S3TASK_WEBHOOK_URLS", "ftp://x.example/hook"),
        ("S3TASK_WEBHOOK_URLS", "https://user:pw@x.example/hook"),
        ("S3TASK_SMTP_URL", "smtp:/mail.example"),
        ("S3TASK_SMTP_URL", "imap://mail.example"),
        ("S3TASK_WEBHOOK_SECRET", "short"),
        ("S3TASK_APP_URL", "tasks.example.com"),
    ]:
        with pytest.raises(SettingsError, match=f"^{name}[= ]"):  # secret ones: named, their value not shown
            Settings.load(environ={name: bad})
    # A webhook is always signed: a URL without a secret stops a worker at the door.
    settings = Settings(store=str(tmp_path / "d"), webhook_urls=("http://127.0.0.1:9/h",))
    with pytest.raises(SettingsError, match="S3TASK_WEBHOOK_SECRET"):
        Worker(settings)


def test_webhooks_are_signed_as_documented_and_cover_every_state_change(tmp_path: Path, receiver: Receiver) -> None:
    env = local_env(tmp_path, webhook_urls=(receiver.url,), webhook_secret=SECRET)
    task_id = env.task(ANN, "March customer list")
    env.work()
    wait_for(lambda: len(receiver.accepted) >= 3, timeout=30, what="three events")
    assert drained(env)
    assert receiver.bad_signatures == 0
    got = sorted(receiver.accepted, key=lambda e: e["task"]["revision"])
    assert [e["type"] for e in got] == ["task.submitted", "task.started", "task.completed"]
    last = got[-1]
    record = env.record(task_id)
    assert last["id"] == f"{task_id}.{record.revision}"
    assert last["task"]["counts"] == {"rows": 2, "processed": 2, "succeeded": 2, "errors": 0}
    assert last["previous_state"] == "running" and last["task"]["attempt"] == 1
    assert env.pending() == []
    # The documented check refuses a changed body, a wrong secret and an old timestamp.
    verify = documented_verify()
    from s3task.notify import webhook

    body = json.dumps(last).encode()
    header = webhook.headers(SECRET, last, body)["S3Task-Signature"]
    assert verify(SECRET, body, header)["id"] == last["id"]
    for args in [
        (SECRET, body.replace(b"completed", b"cancelled"), header),
        ("another-secret-entirely", body, header),
        (SECRET, body, webhook.headers(SECRET, last, body, timestamp=int(time.time()) - 3600)["S3Task-Signature"]),
    ]:
        with pytest.raises(ValueError):
            verify(*args)


def test_a_receiver_failing_five_times_gets_the_event_a_sixth_time(tmp_path: Path, receiver: Receiver) -> None:
    receiver.fail_first = 5
    env = local_env(tmp_path, webhook_urls=(receiver.url,), webhook_secret=SECRET)
    task_id = env.task(ANN, "cancel me", submit=False)
    env.service.cancel(ANN, task_id)  # one state change: one event
    wait_for(lambda: receiver.accepted, timeout=30, what="the event accepted")
    assert drained(env)
    event_id = f"{task_id}.{env.record(task_id).revision}"
    assert receiver.ids("received") == {event_id: 6}
    assert receiver.ids() == {event_id: 1}
    assert env.pending() == []


def test_a_receiver_that_never_answers_delays_nothing(tmp_path: Path, receiver: Receiver) -> None:
    """Every POST hangs (far past the 10 s a slow receiver might take); the task still runs as usual."""
    receiver.hold = lambda _event: not receiver.released.is_set()
    env = local_env(tmp_path, webhook_urls=(receiver.url,), webhook_secret=SECRET, notify_timeout=60)
    task_id = env.task(ANN, "March customer list")
    wait_for(lambda: receiver.holding == 1, timeout=30, what="the submit event held by the receiver")
    started = time.monotonic()
    env.work()  # claims, heartbeats and completes while the receiver sits on every request
    took = time.monotonic() - started
    record = env.record(task_id)
    assert record.status == "completed"
    assert receiver.accepted == [] and receiver.holding >= 1, "completed before the receiver answered anything"
    assert took < 60, took  # far below the 60 s a single blocked delivery would take
    receiver.released.set()
    wait_for(lambda: len(receiver.accepted) == 3, timeout=30, what="all three delivered once released")


def test_an_outbox_entry_left_by_a_dead_sender_is_settled_against_the_record(
    tmp_path: Path, receiver: Receiver
) -> None:
    env = local_env(tmp_path, webhook_urls=(receiver.url,), webhook_secret=SECRET, outbox_recover_seconds=1)
    notifier = env.notifier
    assert notifier is not None
    task_id = env.task(ANN, "t", submit=False)
    wait_for(lambda: env.pending() == [], timeout=30, what="nothing pending")  # (no event yet: created only)
    old, _ = read_record(env.store, env.layout, task_id)

    def entry_for(change: Callable) -> tuple[str, Any]:
        new = change(old, env.store.now())
        return outbox.write(env.store, env.layout, events.build(old, new), new), new

    # 1. Died after its write landed, before sending: the record holds that very write.
    landed_key, landed = entry_for(lambda r, t: lifecycle.cancel(r, t, by="ops@example.com"))
    env.store.put(env.layout.status_key(task_id), landed.to_json(), outbox.PutMode.OVERWRITE)
    # 2. Died before its write (or lost it): a competing write took the same revision.
    lost_key, _ = entry_for(lambda r, t: lifecycle.cancel(r, t, by="someone-else"))
    time.sleep(1.1)  # the entries must be older than outbox_recover_seconds (1 s) by the store's clock
    counts = notifier.sweep_if_due(env.store, env.layout)
    assert counts == {"resent": 1, "dropped": 1, "missed": 0}
    wait_for(lambda: receiver.accepted, timeout=30, what="the re-sent event")
    assert drained(env)
    assert receiver.ids() == {f"{task_id}.{landed.revision}": 1}
    assert receiver.accepted[0]["cancelled_by"] == "ops@example.com"
    assert env.pending() == [] and landed_key != lost_key

    # 3. Cannot tell any more: the history was trimmed past the write → listed as possibly missed.
    other = env.task(ANN, "long history", submit=False)
    base, _ = read_record(env.store, env.layout, other)
    gone = base.replace(revision=base.revision + 1, write_id="ab" * 8, history=[*base.history, {"at": "x"}])
    key = outbox.write(env.store, env.layout, events.build(base, gone), gone)
    trimmed = base.replace(
        revision=base.revision + 5,
        history=[{"at": "2999-01-01T00:00:00.000Z", "event": "retry", "attempt": 1}] * HISTORY_LIMIT,
    )
    env.store.put(env.layout.status_key(other), trimmed.to_json(), outbox.PutMode.OVERWRITE)
    time.sleep(1.1)
    notifier._last_sweep = float("-inf")  # sweep again now, not a third of the recover time later
    assert notifier.sweep_if_due(env.store, env.layout) == {"resent": 0, "dropped": 0, "missed": 1}
    assert env.pending() == []
    listed = procs.cli("--store", str(tmp_path / "data"), "missed", module="s3task.notify", check=True)
    assert f"{other}.{gone.revision}" in listed.stdout and key.rsplit("/", 1)[-1] in key


def test_a_lost_claim_race_sends_nothing_and_leaves_nothing(tmp_path: Path, receiver: Receiver) -> None:
    env = local_env(tmp_path, webhook_urls=(receiver.url,), webhook_secret=SECRET)
    task_id = env.task(ANN, "raced")
    first = read_record(env.store, env.layout, task_id)
    update_record(
        env.store, env.layout, task_id, lambda r, t: lifecycle.cancel(r, t, by="ann@example.com"), hook=env.notifier
    )
    with pytest.raises(Exception):  # noqa: B017 - the stale claim loses (any refusal)
        update_record(
            env.store,
            env.layout,
            task_id,
            lambda r, t: lifecycle.claim(r, t, worker_id="late", lease_seconds=5)[0],
            tries=1,
            first=first,
            hook=env.notifier,
        )
    wait_for(lambda: len(receiver.accepted) == 2, timeout=30, what="submitted and cancelled")
    assert drained(env)
    assert sorted(e["type"] for e in receiver.accepted) == ["task.cancelled", "task.submitted"]
    wait_for(lambda: env.pending() == [], timeout=10, what="the loser's outbox entry removed")


# --- real worker processes on one S3 store (moto over HTTP), as in tests/system/test_worker.py -------------


@pytest.fixture
def many(s3_workers: Env) -> Env:
    """Real worker processes on one moto S3 store over HTTP (conftest.py's ``s3_workers``)."""
    return s3_workers


def hooked(receiver: Receiver, **extra: str) -> dict[str, str]:
    """The environment of a worker process that sends webhooks to ``receiver``."""
    return {
        "S3TASK_WEBHOOK_URLS": receiver.url,
        "S3TASK_WEBHOOK_SECRET": SECRET,
        "S3TASK_NOTIFY_BACKOFF_SECONDS": "0.05",
        **extra,
    }


def test_every_state_change_of_many_tasks_reaches_the_receiver_exactly_once(many: Env, receiver: Receiver) -> None:
    # This process submits (three app replicas would do the same): its submits are its events to send.
    notifier = notify.from_settings(Settings(store=many.url, webhook_urls=(receiver.url,), webhook_secret=SECRET))
    many.service = TaskService(many.store, many.layout, hook=notifier)
    ids = [many.submit(f"t{i}", csv_rows(i + 1)) for i in range(8)]
    workers = [many.worker(name=f"race{i}", env=hooked(receiver)) for i in range(3)]
    for task_id in ids:
        wait_for(lambda t=task_id: many.done(t), timeout=120 + many.start, what=f"{task_id} completed")
    wait_for(lambda: len(receiver.ids()) >= 3 * len(ids), timeout=60, what="every event")
    wait_for(lambda: many.store.list_keys(many.layout.outbox_root()) == [], timeout=60, what="the outbox empty")
    for w in workers:  # a worker that lost every race may still be starting: stop it once it runs
        w.worker_ready(20 + many.start)
        w.send_signal(signal.SIGTERM)
    for w in workers:
        assert w.wait(20 + many.start) == 0, w.output()
    assert receiver.bad_signatures == 0
    assert set(receiver.ids().values()) == {1}, "each event delivered once"
    assert receiver.ids("received") == receiver.ids(), "and never sent twice"
    by_task: dict[str, list[str]] = {}
    for event in sorted(receiver.accepted, key=lambda ev: ev["task"]["revision"]):
        by_task.setdefault(event["task"]["id"], []).append(event["type"])
    assert by_task == {t: ["task.submitted", "task.started", "task.completed"] for t in ids}
    for task_id in ids:  # the completion's id is the completed record's revision
        assert f"{task_id}.{many.record(task_id).revision}" in receiver.ids()
    claimers = {h.get("note") for t in ids for h in many.record(t).history if h["event"] == "claim"}
    assert len(claimers) > 1, "the tasks should be spread over several workers (several senders)"
    assert many.store.list_keys(many.layout.outbox_root("missed")) == []


def test_a_worker_killed_before_its_event_was_taken_has_it_sent_by_another(many: Env, receiver: Receiver) -> None:
    """SIGKILL while the receiver has not yet taken the completion: a second worker's sweep sends it."""
    receiver.hold = lambda event: event["type"] == "task.completed" and not receiver.released.is_set()
    recover = hooked(receiver, S3TASK_OUTBOX_RECOVER_SECONDS="3", S3TASK_NOTIFY_TIMEOUT="30")
    task_id = many.submit("killed while sending", csv_rows(5))
    victim = many.worker(name="victim", env=recover)
    wait_for(lambda: receiver.holding == 1, timeout=60 + many.start, what="the completion held by the receiver")
    victim.kill()  # the task is completed; its event was never taken
    victim.wait(10)
    record = many.done(task_id)
    assert record is not None
    completed_id = f"{task_id}.{record.revision}"
    assert completed_id not in receiver.ids()
    pending = many.store.list_keys(many.layout.outbox_root())
    assert any(f".{task_id}.{record.revision}." in key for key in pending), pending
    receiver.released.set()  # the held request is answered now; the victim is no longer there to hear it
    rescuer = many.worker(name="rescuer", env=recover)
    wait_for(lambda: completed_id in receiver.ids(), timeout=60 + many.start, what="the completion re-sent")
    wait_for(lambda: many.store.list_keys(many.layout.outbox_root()) == [], timeout=30, what="the outbox empty")
    assert receiver.ids()[completed_id] == 1  # taken once (the first, held copy went to a dead sender)
    assert [ev["type"] for ev in receiver.received if ev["id"] == completed_id] == ["task.completed"] * 2
    assert "re-sending notification" in rescuer.output()
    rescuer.terminate()
    assert rescuer.wait(20 + many.start) == 0


# --- in the browser -------------------------------------------------------------------------------------

#: Records every desktop notification the page creates (headless Chromium shows none on a screen),
#: keeping the real constructor's permission logic.
NOTIFICATION_SHIM = """
(() => {
  const Real = window.Notification;
  window.__notes = [];
  class Recorded {
    constructor(title, options) {
      if (Real.permission !== "granted") throw new TypeError("permission not granted");
      this.title = title;
      this.body = (options || {}).body;
      this.onclick = null;
      window.__notes.push(this);
    }
    close() {}
    static get permission() { return Real.permission; }
    static requestPermission(cb) { return Real.requestPermission(cb); }
  }
  window.Notification = Recorded;
})();
"""


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found; see tests/browser/test_browser.py")
def test_the_tab_title_and_a_desktop_notification_say_when_my_task_ends(browser, tmp_path: Path) -> None:
    from browsers import base_env, settle, streamlit_app
    from playwright.sync_api import expect

    store = tmp_path / "store"
    service = TaskService(LocalStore(store), Layout())
    me = Actor("local", operator=True)  # the app's development user

    def gated(name: str) -> tuple[str, Path]:
        gate = tmp_path / f"gate-{name}"
        task_id = service.create(me, name, "test_gated", {"gate": str(gate)}).record.task_id
        service.upload_input(me, task_id, csv_rows(5))
        return task_id, gate

    first, first_gate = gated("March customer list")
    second, second_gate = gated("April list")
    service.submit(me, first)
    env = base_env(S3TASK_STORE=str(store), S3TASK_HANDLERS="worker_handlers")
    with streamlit_app(env, tmp_path / "streamlit.log") as url:
        context = browser.new_context()
        context.grant_permissions(["notifications"], origin=url)
        context.add_init_script(NOTIFICATION_SHIM)
        page = context.new_page()

        def seen(task_id: str) -> str | None:
            """The state the page's watcher last saw the task in."""
            return page.evaluate("id => globalThis.__s3taskNotify?.seen.get(id) ?? null", task_id)

        try:
            # 1. The task's own page is open while it runs; it ends.
            page.goto(f"{url}/task?id={first}")
            settle(page)
            wait_for(lambda: service.get(me, first).status == "running", timeout=60, what="the first task running")
            wait_for(lambda: seen(first) == "running", timeout=30, what="the page showing it running")
            expect(page.get_by_text("Notify me when my tasks finish")).to_be_hidden()  # already allowed
            first_gate.touch()
            expect(page).to_have_title("✓ March customer list — completed", timeout=30_000)
            notes = page.evaluate("window.__notes.map(n => [n.title, n.body])")
            assert notes == [
                [
                    "March customer list — completed, 5 rows read, 5 rows written, 0 rows with errors",
                    "Click to open the task.",
                ]
            ]

            # 2. The task list is open; another of my tasks ends; the notification opens it.
            service.submit(me, second)
            page.goto(f"{url}/tasks")
            settle(page)
            wait_for(lambda: seen(second), timeout=30, what="the list page showing the second task")
            second_gate.touch()
            expect(page).to_have_title("✓ April list — completed", timeout=60_000)
            assert page.evaluate("window.__notes.map(n => n.title)") == [
                "April list — completed, 5 rows read, 5 rows written, 0 rows with errors"
            ]
            page.evaluate("window.__notes[0].onclick()")
            page.wait_for_url(f"**/task?id={second}", timeout=20_000)
            settle(page)
            expect(page.get_by_text("April list").first).to_be_visible()
        finally:
            context.close()
        # Someone who has not decided yet is offered the browser's question.
        fresh = browser.new_context()
        try:
            page = fresh.new_page()
            page.goto(f"{url}/tasks")
            settle(page)
            assert page.evaluate("Notification.permission") == "default"
            expect(page.get_by_role("button", name="Notify me when my tasks finish")).to_be_visible()
        finally:
            fresh.close()


# --- review fixes: secrets, a stuck receiver, no failed state change, the counts' words ----------------

PASSWORD = "hunter2"


def cli(tmp_path: Path, env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m s3task --store {tmp_path}/data ARGS`` with the notification settings in ``env``."""
    return procs.cli("--store", str(tmp_path / "data"), *args, env=procs.child_env(**env), timeout=timeout)


def test_an_smtp_password_with_a_question_mark_is_refused_at_load_and_never_shown(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text("a,b\n1,2\n")
    for url in [
        f"smtps://user:{PASSWORD}?x@smtp.example.com:465",
        f"smtps://user:{PASSWORD}#x@smtp.example.com:465",
        f"smtp://user:{PASSWORD}@smtp.example.com:99999",
    ]:
        with pytest.raises(SettingsError) as caught:
            Settings.load(environ={"S3TASK_SMTP_URL": url})
        assert PASSWORD not in str(caught.value) and "percent-encode" in str(caught.value)
        with pytest.raises(ValueError) as parsed:  # and the parser itself never quotes it either
            from s3task.notify.email import Smtp

            Smtp.parse(url)
        assert PASSWORD not in str(parsed.value) and "S3TASK_SMTP_URL" in str(parsed.value)
    run = cli(tmp_path, {"S3TASK_SMTP_URL": f"smtps://user:{PASSWORD}?x@smtp.example.com:465"},
              "submit", str(tmp_path / "in.csv"), "--name", "t")  # fmt: skip
    assert run.returncode != 0
    assert "S3TASK_SMTP_URL" in run.stderr and "percent-encode" in run.stderr
    assert PASSWORD not in run.stdout + run.stderr
    # Percent-encoded, the same password is fine.
    assert Smtp.parse("smtps://user:hunter2%3Fx@smtp.example.com:465").password == "hunter2?x"


def test_no_state_change_fails_because_of_notifications(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    env = local_env(tmp_path, webhook_urls=(receiver.url,), webhook_secret=SECRET)
    secret_text = "https://hooks.example.com/T0/B0/s3cr3t-token"

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise ValueError(f"cannot use {secret_text}")

    monkeypatch.setattr(notify.Notifier, "before", broken)
    caplog.set_level("DEBUG")
    task_id = env.task(ANN, "goes on", submit=False)
    env.service.submit(ANN, task_id)  # the notification cannot even be prepared: the submit still lands
    assert env.record(task_id).status == "queued"
    monkeypatch.undo()
    monkeypatch.setattr(notify.sender.Outgoing, "done", broken)  # nor queued after the write
    env.service.cancel(ANN, task_id)
    assert env.record(task_id).state == "abandoned"
    assert "s3cr3t-token" not in caplog.text and "no notification for task" in caplog.text


class Trickler:
    """A webhook receiver that answers a status line, then one header line every ``every`` seconds."""

    def __init__(self, every: float) -> None:
        import socket

        self.every = every
        self.stop = threading.Event()
        self.requests = 0
        self.durations: list[float] = []  # from a request's arrival to the sender hanging up
        self.lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/slow"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: Any) -> None:
        with conn:
            conn.recv(65536)
            started = time.monotonic()
            with self.lock:
                self.requests += 1
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while not self.stop.is_set():
                    if self.stop.wait(self.every):
                        return
                    conn.sendall(b"X-Still-Thinking: yes\r\n")
            except OSError:  # the sender hung up: its deadline
                with self.lock:
                    self.durations.append(time.monotonic() - started)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def trickler() -> Iterator[Trickler]:
    slow = Trickler(every=0.2)  # never silent for a whole socket timeout: only a deadline ends it
    yield slow
    slow.close()


def test_a_trickling_receiver_holds_up_no_other_receiver(
    tmp_path: Path, receiver: Receiver, trickler: Trickler
) -> None:
    timeout = 1.0
    env = local_env(
        tmp_path, webhook_urls=(trickler.url, receiver.url), webhook_secret=SECRET, notify_timeout=timeout,
        notify_retries=2, notify_backoff_seconds=0.05,
    )  # fmt: skip
    ids = []
    for i in range(8):  # each a submit and a cancel: 16 events, each to both receivers
        task_id = env.task(ANN, f"t{i}")
        env.service.cancel(ANN, task_id)
        ids.append(task_id)
    # The good receiver's lane is its own: it gets all 16 while the slow one is still being tried.
    wait_for(lambda: len(receiver.ids()) == 16, timeout=10 * timeout, what="every event at the good receiver")
    assert trickler.requests < 16 * 3, "the slow receiver is still being tried"
    # Each delivery to the trickler ends at its deadline, though it never goes quiet for `timeout`.
    wait_for(lambda: len(trickler.durations) >= 2, timeout=10 * timeout, what="two deliveries cut off")
    assert max(trickler.durations) < timeout + 1.0, trickler.durations
    assert set(receiver.ids().values()) == {1}


def test_the_cli_does_not_wait_for_a_stuck_receiver_at_exit(
    tmp_path: Path, receiver: Receiver, trickler: Trickler
) -> None:
    from s3task.notify.sender import EXIT_WAIT_SECONDS

    (tmp_path / "in.csv").write_text("a,b\n1,2\n")
    # Long, so that waiting for the stuck receiver stands out from any start-up a busy machine gives the
    # CLI (measured 2.9 s for the baseline and 5.9 s with the receivers at load 23: 3 s apart, not 1).
    timeout = 30.0
    plain = {"S3TASK_NOTIFY_TIMEOUT": str(timeout)}
    started = time.monotonic()
    assert cli(tmp_path, plain, "submit", str(tmp_path / "in.csv"), "--name", "baseline").returncode == 0
    baseline = time.monotonic() - started  # the same command with no notifications: start-up and the store
    hooks = {**plain, "S3TASK_WEBHOOK_URLS": f"{trickler.url},{receiver.url}", "S3TASK_WEBHOOK_SECRET": SECRET}
    started = time.monotonic()
    run = cli(tmp_path, hooks, "submit", str(tmp_path / "in.csv"), "--name", "t")
    took = time.monotonic() - started
    assert run.returncode == 0, run.stderr
    assert took < baseline + EXIT_WAIT_SECONDS + 10.0 < baseline + timeout, (took, baseline)
    wait_for(lambda: len(receiver.ids()) == 1, timeout=timeout, what="the good receiver's event")
    # The slow receiver's delivery was cut short by the exit: its entry waits for a worker's sweep.
    layout = Layout("batch-tasks")
    assert len(LocalStore(tmp_path / "data").list_keys(layout.outbox_root())) == 1


def test_webhook_urls_are_secret_wherever_they_could_be_shown(
    tmp_path: Path, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    receiver.fail_first = 1000
    port = receiver.url.split(":")[2].split("/")[0]
    url = f"http://127.0.0.1:{port}/services/T0/B0/path-s3cr3t?token=query-s3cr3t"
    other = "https://hooks.example.invalid/other-s3cr3t"
    caplog.set_level("DEBUG")
    env = local_env(tmp_path, webhook_urls=(other, url), webhook_secret=SECRET, notify_retries=1, notify_timeout=2)
    assert "s3cr3t" not in repr(env.settings)
    task_id = env.task(ANN, "t", submit=False)
    env.service.cancel(ANN, task_id)
    missed_root = env.layout.outbox_root("missed")
    wait_for(lambda: env.store.list_keys(missed_root), timeout=30, what="the event listed as missed")
    assert drained(env)
    entries = [env.store.get(k).body.decode() for k in env.store.list_keys(missed_root)]
    listed = [
        procs.cli("--store", str(tmp_path / "data"), "missed", *extra, module="s3task.notify", check=True)
        for extra in ([], ["--json"])
    ]
    shown = [caplog.text, *entries, *(r.stdout + r.stderr for r in listed)]
    for text in shown:
        assert "s3cr3t" not in text
    assert f"webhook 2 of 2 (http://127.0.0.1:{port})" in listed[0].stdout
    assert "webhook 1 of 2 (https://hooks.example.invalid)" in entries[0]
    with pytest.raises(SettingsError) as caught:
        Settings.load(environ={"S3TASK_WEBHOOK_URLS": f"{url},ftp://x.example/ftp-s3cr3t"})
    assert "s3cr3t" not in str(caught.value) and "S3TASK_WEBHOOK_URLS" in str(caught.value)


@pytest.mark.parametrize("task_type", ["profile", "clean"])
def test_emails_and_the_browser_say_what_the_task_page_says(tmp_path: Path, smtp: Mailbox, task_type: str) -> None:
    from s3task.counts import counts_of
    from ui.notify import for_browser

    env = local_env(tmp_path, smtp_url=smtp.url, smtp_from="tasks@example.com", handlers=())
    body = b"a,b\n1,2\n1,2\n,\n3,4\n1,2\n"  # 5 rows: 2 repeats and an empty one for clean to leave out
    task_id = env.task(ANN, "Counted", body=body, task_type=task_type)
    env.work()
    record = env.record(task_id)
    assert record.status == "completed", record.last_error
    wait_for(lambda: smtp.messages, timeout=30, what="the email")
    mail = smtp.messages[0]
    lines = counts_of(record).lines()
    assert lines[0] == ("Rows read", "5")
    words = ", ".join(f"{value} {label.lower()}" for label, value in lines)
    assert mail["Subject"] == f"[s3task] Counted — completed, {words}"
    assert [f"{label}: {value}" for label, value in lines] == [
        line for line in mail.get_content().splitlines() if line.startswith(tuple(label for label, _ in lines))
    ]
    assert "with errors" not in mail.get_content() and "fine" not in mail.get_content()
    assert for_browser(record)["text"] == f"Counted — completed, {words}"
