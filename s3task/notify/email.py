"""Email to a task's owner when it ends, through the SMTP server named by ``S3TASK_SMTP_URL``.

``smtp://host[:25]`` (plain), ``smtp+starttls://host[:587]`` (upgraded with STARTTLS) or
``smtps://host[:465]`` (TLS from the start); ``user:password@`` logs in (percent-encode special
characters), over smtp+starttls:// or smtps:// only (or smtp:// to localhost): smtp:// would send
the password unencrypted. TLS certificates are verified against the system's authorities.
"""

from __future__ import annotations

import ipaddress
import smtplib
import socket
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any
from urllib.parse import unquote, urlsplit

from ..config import SettingsError
from . import events
from .deadline import Cutoff

#: The one thing said about an unusable S3TASK_SMTP_URL (its value may hold a password).
_UNUSABLE = (
    "S3TASK_SMTP_URL (its value is not shown: it may hold a password) cannot be used: write"
    " smtp://, smtps:// or smtp+starttls://[user:password@]host[:port] with a port from 1 up to 65535,"
    " and percent-encode ? # / @ [ ] in the user name and password (%3F %23 %2F %40 %5B %5D)"
)
_PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}
#: smtp:// never encrypts, so a password in it would cross the network as it is (smtplib's AUTH PLAIN
#: and LOGIN are base64, not encryption). Allowed only to a relay on this computer.
_PLAIN_PASSWORD = (
    "S3TASK_SMTP_URL (its value is not shown: it may hold a password) has a user name and password with"
    " smtp://, which would send them unencrypted: use smtps://…:465 or smtp+starttls://…:587, or smtp://"
    " without user:password@ (smtp:// with a password is allowed only to localhost)"
)


def _this_computer(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Smtp:
    scheme: str
    host: str
    port: int
    user: str | None = None
    password: str | None = None

    @classmethod
    def parse(cls, url: str) -> Smtp:
        """The server of ``S3TASK_SMTP_URL``; :class:`SettingsError` (never showing the URL) if unusable."""
        try:
            parts = urlsplit(url)
            port = parts.port  # ValueError for a port that is not a number from 0 to 65535
            ok = parts.scheme in _PORTS and bool(parts.hostname) and port != 0
            user = unquote(parts.username) if parts.username else None
            password = unquote(parts.password) if parts.password else None
        except ValueError:  # its text would hold the part of the URL it choked on: maybe the password
            ok = False
        if not ok:
            raise SettingsError(_UNUSABLE) from None
        if parts.scheme == "smtp" and (user or password) and not _this_computer(str(parts.hostname)):
            raise SettingsError(_PLAIN_PASSWORD)
        return cls(parts.scheme, str(parts.hostname), port or _PORTS[parts.scheme], user, password)

    def __repr__(self) -> str:  # never the password
        return f"Smtp({self.scheme}://{self.host}:{self.port})"

    def send(self, message: EmailMessage, timeout: float) -> None:
        """One SMTP session; ``timeout`` bounds the whole of it (a server trickling its answers is cut off)."""
        context = ssl.create_default_context()
        server: smtplib.SMTP
        if self.scheme == "smtps":
            server = smtplib.SMTP_SSL(self.host, self.port, timeout=timeout, context=context)
        else:
            server = smtplib.SMTP(self.host, self.port, timeout=timeout)
        cutoff = Cutoff(timeout, lambda: server.sock)
        try:
            with server:
                if self.scheme == "smtp+starttls":
                    server.starttls(context=context)
                if self.user:
                    server.login(self.user, self.password or "")
                server.send_message(message)
        except (OSError, smtplib.SMTPException) as e:
            if cutoff.fired:
                raise TimeoutError(f"no end of the SMTP session within {timeout:g}s") from e
            raise
        finally:
            cutoff.cancel()


def default_sender() -> str:
    return f"s3task@{socket.getfqdn() or 'localhost'}"


def task_link(app_url: str, task_id: str) -> str | None:
    return f"{app_url.rstrip('/')}/task?id={task_id}" if app_url else None


def message(event: dict[str, Any], to: str, sender: str, app_url: str) -> EmailMessage:
    """The email about one ending: the outcome in the subject, the counts and the link in the body."""
    task = event["task"]
    name = " ".join(str(task["name"]).split())  # no line breaks into a header
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = f"[s3task] {events.summary(event)}"
    msg["Message-ID"] = f"<{event['id']}@s3task>"  # the same on a re-send: mail clients drop the copy
    ended = "completed" if task["state"] == "completed" else events.outcome(event)
    lines = [f'Your task "{name}" {ended}.', ""]
    if task["state"] == "completed":
        lines += [f"{label}: {value}" for label, value in events.count_lines(event)]  # as on the task's page
    if task["state"] == "failed_for_good" and task.get("last_error"):
        lines.append(f"Last error: {task['last_error']}")
    link = task_link(app_url, str(task["id"]))
    if link:
        lines += ["", f"Open the task: {link}"]
    lines += ["", f"Task id: {task['id']}"]
    msg.set_content("\n".join(lines) + "\n")
    return msg
