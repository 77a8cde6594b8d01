"""The smaller misuses of issue 26, item 5: a tokens file rotated with its old size and time, webhook
URLs that can never be delivered to, a password sent over plain SMTP, a port out of range."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import wait_for

from s3task.config import Settings
from s3task.errors import SettingsError
from s3task.notify.email import Smtp
from s3task.web.tokens import TokenTable, hash_token

PASSWORD = "hunter2-secret"


def tokens_file(path: Path, token: str) -> None:
    path.write_text(json.dumps({hash_token(token): {"user": "alice", "role": "user"}}))


def next_tick(probe: Path, after: int) -> None:
    """Wait until a file written now gets a status-change time after ``after`` (the kernel's clock for
    file times is coarse: a rewrite in the same tick could not be told apart by any stat field)."""

    def later() -> bool:
        probe.write_text("x")
        return probe.stat().st_ctime_ns > after

    wait_for(later, timeout=5, what="the file clock to move on")


@pytest.mark.parametrize("how", ["cp -p in place", "renamed over it, same size and time"])
def test_a_tokens_file_rotated_with_the_same_size_and_time_is_read_again(tmp_path: Path, how: str) -> None:
    path, fresh = tmp_path / "tokens.json", tmp_path / "fresh.json"
    tokens_file(path, "old-token-0000")
    table = TokenTable(path=path)
    assert table.actor_for("old-token-0000") is not None
    before = path.stat()
    next_tick(tmp_path / "probe", before.st_ctime_ns)
    tokens_file(fresh, "new-token-1111")  # same length: the same size
    os.utime(fresh, ns=(before.st_atime_ns, before.st_mtime_ns))
    if how == "cp -p in place":
        shutil.copy2(fresh, path)  # what cp -p does: new bytes into the same inode, the old times put back
        assert path.stat().st_ino == before.st_ino
    else:
        os.replace(fresh, path)
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert table.actor_for("old-token-0000") is None, "the rotated-out token is still accepted"
    assert table.actor_for("new-token-1111") is not None


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:99999/", "https://[::1", "https://[::1/hook", "http://:8080/x", "http://h:0/x"]
)
def test_a_webhook_url_that_cannot_be_posted_to_is_refused_at_start(url: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.load(environ={"S3TASK_WEBHOOK_URLS": f"https://ok.example/h,{url}", "S3TASK_WEBHOOK_SECRET": "s" * 16})
    message = str(caught.value)
    assert message.startswith("S3TASK_WEBHOOK_URLS") and "port from 1 up to 65535" in message
    assert url not in message  # the URLs are secrets: never repeated


@pytest.mark.parametrize(
    "url", ["https://hooks.example.com/s3task", "http://10.0.0.5:8080/tasks", "http://[::1]:8080/h"]
)
def test_a_usable_webhook_url_is_accepted(url: str) -> None:
    settings = Settings.load(environ={"S3TASK_WEBHOOK_URLS": url, "S3TASK_WEBHOOK_SECRET": "s" * 16})
    assert settings.webhook_urls == (url,)


def test_a_password_over_plain_smtp_is_refused_without_showing_it() -> None:
    for url in (f"smtp://tasks:{PASSWORD}@mail.example.com", f"smtp://tasks:{PASSWORD}@mail.example.com:587"):
        with pytest.raises(SettingsError) as caught:
            Smtp.parse(url)
        assert "unencrypted" in str(caught.value) and "smtp+starttls://" in str(caught.value)
        assert PASSWORD not in str(caught.value)
    # Encrypted, to a relay on this computer, or without a password: as before.
    assert Smtp.parse(f"smtp+starttls://tasks:{PASSWORD}@mail.example.com:587").password == PASSWORD
    assert Smtp.parse(f"smtps://tasks:{PASSWORD}@mail.example.com").port == 465
    assert Smtp.parse(f"smtp://tasks:{PASSWORD}@localhost:25").user == "tasks"
    assert Smtp.parse("smtp://mail.example.com").user is None


def test_a_port_out_of_range_is_one_line_and_exit_2(capsys) -> None:
    from s3task.web import cli as web_cli

    assert web_cli.main(["serve", "--port", "99999"]) == 2
    assert (
        capsys.readouterr().err
        == "error: --port 99999 is not allowed: use a port number up to 65535 (0: any free one)\n"
    )
