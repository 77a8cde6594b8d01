"""Every setting is checked where it is loaded: one line naming it, the bad value and what is allowed."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import fields
from pathlib import Path

import pytest
from procs import child_env, run, worker_args

from s3task.config import Settings, SettingsError, env_name
from ui.appsettings import AppSettings

ROOT = Path(__file__).resolve().parents[2]

#: For every setting: values that must be refused, and values that must be accepted (as loaded).
TABLE: dict[str, tuple[list[str], list[tuple[str, object]]]] = {
    "store": (["s3://", "s3:/bucket", "file://", "S3:bucket"],
              [("s3://bucket/prefix", "s3://bucket/prefix"), ("/srv/tasks", "/srv/tasks"), ("file:///srv/t", "file:///srv/t"),
               ("./data", "./data")]),
    "operators": (["ann,\x07bob"], [("ann@x.org, bob@x.org", ("ann@x.org", "bob@x.org"))]),
    "poll_interval": (["0", "-1", "abc", "3601", "9" * 400, "1e-320", "nan", "inf"], [("0.5", 0.5), ("3", 3.0)]),
    "idle_list_seconds": (["0", "0.05", "3601", "often"], [("0.5", 0.5), ("300", 300.0)]),
    "inbox_interval": (["-1", "0.5", "86401", "5m", "nan"], [("0", 0.0), ("1", 1.0), ("300", 300.0)]),
    "lease_seconds": (["-5", "0", "0.5", "1e9", "sixty", "1" + "0" * 320], [("1", 1.0), ("60", 60.0), ("1e2", 100.0)]),
    "lease_grace_seconds": (["-1", "x"], [("0", 0.0), ("10", 10.0)]),
    "max_attempts": (["0", "1.5", "101"], [("1", 1), ("5", 5)]),
    "retry_backoff_seconds": (["-0.1", "601"], [("0", 0.0), ("30", 30.0)]),
    "concurrency": (["0", "-1", "2.5", "many", "65", "\uff11", "1_0", "2.0"], [("1", 1), ("8", 8), ("+2", 2)]),
    "stall_timeout": (["0", "-3"], [("30", 30.0)]),
    "max_child_memory_mb": (["0", "63", "lots"], [("64", 64), ("4096", 4096)]),
    "worker_id": (["etl worker", "a/b", "x" * 129, "tab\there"],
                  [("etl-1", "etl-1"), ("host.example:42", "host.example:42")]),
    "handlers": (["my tasks", "1module", "a..b"], [("my_company.tasks, other", ("my_company.tasks", "other"))]),
    "log_format": (["xml", "JSON "], [("json", "json"), ("text", "text")]),
    "log_level": (["verbose", "trace"], [("DEBUG", "DEBUG"), ("warning", "warning")]),
    "metrics_port": (["-1", "65536", "99999", "abc", "9100.5", "8o80", "\uff19\uff11"],
                     [("0", 0), ("9100", 9100), ("65535", 65535)]),
    "metrics_host": (["local host", "http://0.0.0.0", "1.2.3.4:9100", "-bad.example", "a/b", "x" * 254, "a..b"],
                     [("0.0.0.0", "0.0.0.0"), ("::", "::"), ("metrics.internal", "metrics.internal"),
                      ("10.0.0.7", "10.0.0.7")]),
    "embedded_worker": (["ture", "2", "maybe"], [("0", False), ("off", False), ("TRUE", True), ("yes", True)]),
    "max_upload_mb": (["0", "-1", "1.5"], [("1", 1), ("500", 500)]),
    "max_creates_per_minute": (["-1", "100001", "1.5", "lots"], [("0", 0), ("60", 60)]),
    "max_parameters_kb": (["0", "65", "1.5"], [("1", 1), ("64", 64)]),
    "max_open_uploads": (["-1", "10001", "2.5", "many"], [("0", 0), ("10", 10)]),
    "url_seconds": (["0", "604801", "700000", "1h"], [("604800", 604800), ("900", 900)]),
    "app_origin": (["https://x.example/path", "tasks.example.com", "ftp://x"],
                   [("https://a.example, http://127.0.0.1:8501", "https://a.example, http://127.0.0.1:8501")]),
    "app_url": (["tasks.example.com", "ftp://x.example", "https://u:p@x.example"],
                [("https://tasks.example.com/app", "https://tasks.example.com/app")]),
    "smtp_url": (["smtp:/mail.example", "imap://mail.example", "smtps://", "mail.example:25", "smtp://a b",
                  "smtps://u:hunter2?x@mail.example:465", "smtp://u:p#w@mail.example", "smtp://u:p/w@mail.example",
                  "smtp://u:p@w@mail.example", "smtp://mail.example:65536", "smtp://mail.example:0"],
                 [("smtp://127.0.0.1:25", "smtp://127.0.0.1:25"), ("smtps://u:p%40w@mail.example:465",
                   "smtps://u:p%40w@mail.example:465"), ("smtp+starttls://mail.example", "smtp+starttls://mail.example")]),
    "smtp_from": (["tasks", "a@b", "a@b.c, d@e.f", "<a@b.c>"], [("tasks@example.com", "tasks@example.com")]),
    "webhook_urls": (["ftp://x.example/h", "x.example/h", "https://user:pw@x.example/h", "file:///etc/passwd"],
                     [("https://a.example/h, http://10.0.0.5:8080/t", ("https://a.example/h", "http://10.0.0.5:8080/t"))]),
    "webhook_secret": (["short", "fifteen-chars-x"], [("sixteen-chars-xx", "sixteen-chars-xx")]),
    "notify_timeout": (["0", "61", "soon"], [("0.5", 0.5), ("5", 5.0)]),
    "notify_retries": (["-1", "21", "1.5"], [("0", 0), ("8", 8)]),
    "notify_backoff_seconds": (["0", "301", "-1"], [("0.05", 0.05), ("1", 1.0)]),
    "outbox_recover_seconds": (["0", "86401", "x"], [("1", 1.0), ("900", 900.0)]),
    "api_tokens_file": (["tokens\x00.json", "a\nb"], [("/etc/s3task/tokens.toml", "/etc/s3task/tokens.toml")]),
    "signing_key": (["short", "k" * 31, "k" * 31 + "\x07"], [("k" * 32, "k" * 32)]),
    "user": (["x" * 201, "ann\tbob"], [("ada", "ada"), ("ada@example.com", "ada@example.com")]),
    "cli_operator": (["ture", "2"], [("0", False), ("false", False), ("1", True)]),
    "clock_skew_seconds": (["86401", "-86401", "ten", "nan"], [("-600", -600.0), ("3600", 3600.0)]),
    "direct_upload": (["ture", "2"], [("0", False), ("on", True)]),
    "refresh_seconds": (["0", "-2", "soon"], [("0.5", 0.5)]),
    "page_size": (["0", "201", "ten"], [("1", 1), ("200", 200)]),
}  # fmt: skip

SETTINGS = [(Settings, f.name) for f in fields(Settings)] + [(AppSettings, f.name) for f in fields(AppSettings)]


def load(cls: type, name: str, raw: str):
    return cls.load(environ={env_name(name): raw})


def test_the_table_covers_every_setting() -> None:
    assert sorted(TABLE) == sorted(name for _, name in SETTINGS)


@pytest.mark.parametrize(("cls", "name"), SETTINGS)
def test_bad_values_are_refused_with_one_line_that_names_them(cls: type, name: str) -> None:
    for raw in TABLE[name][0]:
        with pytest.raises(SettingsError) as caught:
            load(cls, name, raw)
        message = str(caught.value)
        if _is_secret(cls, name):  # named, but its value never repeated (it may hold a password or key)
            assert message.startswith(f"{env_name(name)} (its value is not shown"), message
            assert repr(raw) not in message
        else:
            assert message.startswith(f"{env_name(name)}={raw!r} is not allowed: use "), message
        assert "\n" not in message


def _is_secret(cls: type, name: str) -> bool:
    return bool(next(f for f in dataclasses.fields(cls) if f.name == name).metadata.get("secret"))


def test_secrets_never_reach_a_message_or_a_repr() -> None:
    password, key = "hunter2-hunter2-pw", "k" * 15  # the key is one character short: refused
    with pytest.raises(SettingsError) as caught:
        Settings.load(
            environ={"S3TASK_SMTP_URL": f"smtp://tasks:{password}@mail example", "S3TASK_WEBHOOK_SECRET": "x"}
        )
    assert password not in str(caught.value) and "S3TASK_SMTP_URL" in str(caught.value)
    with pytest.raises(SettingsError) as caught:
        Settings.load({"webhook_secret": key}, environ={})
    assert key not in str(caught.value) and "--webhook-secret" in str(caught.value)
    good = Settings(smtp_url=f"smtps://tasks:{password}@mail.example:465", webhook_secret="s" * 20)
    assert password not in repr(good) and "s" * 20 not in repr(good)


@pytest.mark.parametrize(("cls", "name"), SETTINGS)
def test_good_values_are_accepted(cls: type, name: str) -> None:
    for raw, expected in TABLE[name][1]:
        assert getattr(load(cls, name, raw), name) == expected


def test_defaults_need_no_configuration() -> None:
    assert Settings.load(environ={}).store == "./s3task-data"
    assert AppSettings.load(environ={}) == AppSettings()


def test_flags_are_checked_too_and_named_as_flags() -> None:
    with pytest.raises(SettingsError, match=r"^--concurrency 0 is not allowed: use a whole number from 1 up to 64$"):
        Settings.load({"concurrency": 0}, environ={})
    with pytest.raises(SettingsError, match=r"^--worker-id 'a b' is not allowed"):
        Settings.load({"worker_id": "a b"}, environ={})


def test_settings_built_in_code_are_checked() -> None:
    with pytest.raises(SettingsError, match="S3TASK_LEASE_SECONDS=-5"):
        Settings(lease_seconds=-5)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("S3TASK_WORKER_ID", "etl worker"),
        ("S3TASK_CONCURRENCY", "0"),
        ("S3TASK_LOG_FORMAT", "xml"),
        ("S3TASK_LEASE_SECONDS", "-5"),
    ],
)
def test_worker_stops_at_the_door_before_any_store_call(tmp_path: Path, variable: str, value: str) -> None:
    """A bad worker id used to be found only after the claim was written, leaving the task `running`."""
    store = tmp_path / "store"
    proc = run(worker_args(str(store), "--once"), env=child_env(**{variable: value}))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"error: {variable}={value!r} is not allowed: use " + proc.stderr.split(": use ", 1)[1].strip()
    ]
    assert not store.exists(), "the store was touched"


@pytest.mark.parametrize(("variable", "value"), [("S3TASK_EMBEDDED_WORKER", "ture"), ("S3TASK_PAGE_SIZE", "500")])
def test_the_app_names_a_bad_setting_on_its_problem_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    from streamlit import config as st_config
    from streamlit.testing.v1 import AppTest

    for name in [k for k in os.environ if k.startswith("S3TASK_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("S3TASK_STORE", str(tmp_path / "store"))
    monkeypatch.setenv(variable, value)
    saved = st_config.get_option("server.address")
    st_config.set_option("server.address", "127.0.0.1")
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=15).run()
    finally:
        st_config.set_option("server.address", saved)
    assert [t.value for t in at.title] == ["s3task is not configured correctly"]
    assert f"{variable}={value!r} is not allowed" in at.error[0].value.replace("\\", "")
    assert not (tmp_path / "store").exists()
