"""Email to a task's owner when it ends, through the SMTP server named by ``S3TASK_SMTP_URL``.

``smtp://host[:25]`` (plain), ``smtp+starttls://host[:587]`` (upgraded with STARTTLS) or
``smtps://host[:465]`` (TLS from the start); ``user:password@`` logs in (percent-encode special
characters). TLS certificates are verified against the system's authorities.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any
from urllib.parse import unquote, urlsplit

from . import events

_PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}


@dataclass(frozen=True)
class Smtp:
    scheme: str
    host: str
    port: int
    user: str | None = None
    password: str | None = None

    @classmethod
    def parse(cls, url: str) -> Smtp:
        parts = urlsplit(url)
        if parts.scheme not in _PORTS or not parts.hostname:
            raise ValueError("S3TASK_SMTP_URL must be smtp://, smtps:// or smtp+starttls:// with a host")
        user = unquote(parts.username) if parts.username else None
        password = unquote(parts.password) if parts.password else None
        return cls(parts.scheme, parts.hostname, parts.port or _PORTS[parts.scheme], user, password)

    def __repr__(self) -> str:  # never the password
        return f"Smtp({self.scheme}://{self.host}:{self.port})"

    def send(self, message: EmailMessage, timeout: float) -> None:
        context = ssl.create_default_context()
        server: smtplib.SMTP
        if self.scheme == "smtps":
            server = smtplib.SMTP_SSL(self.host, self.port, timeout=timeout, context=context)
        else:
            server = smtplib.SMTP(self.host, self.port, timeout=timeout)
        with server:
            if self.scheme == "smtp+starttls":
                server.starttls(context=context)
            if self.user:
                server.login(self.user, self.password or "")
            server.send_message(message)


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
    counts = task["counts"]
    lines = [f'Your task "{name}" {events.outcome(event)}.', ""]
    if task["state"] == "completed" and isinstance(counts["rows"], int):
        lines.append(f"Rows: {counts['rows']:,} ({counts['succeeded']:,} fine, {counts['errors']:,} with errors)")
    if task["state"] == "failed_for_good" and task.get("last_error"):
        lines.append(f"Last error: {task['last_error']}")
    link = task_link(app_url, str(task["id"]))
    if link:
        lines += ["", f"Open the task: {link}"]
    lines += ["", f"Task id: {task['id']}"]
    msg.set_content("\n".join(lines) + "\n")
    return msg
