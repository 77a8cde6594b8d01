"""Settings: command-line flags > environment (``S3TASK_*``) > defaults, checked where they are loaded.

With no configuration at all everything runs locally on ``./s3task-data``.

Each field declares what it accepts (:func:`setting`); a value outside that —
from a flag, a variable or a constructor call — raises :class:`SettingsError`
with one line that names the setting, the bad value and what is allowed. Every
entry point (``worker.py``, the CLI, the API server, the app) loads settings
before it touches the store, so a bad one stops the process at the door instead
of, say, after a worker has claimed a task under a worker id no key can hold.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar
from urllib.parse import urlsplit

from .clock import Clock
from .errors import SettingsError as SettingsError  # re-exported: its home was here
from .layout import WORKER_ID_PATTERN
from .store import DEFAULT_LOCAL_STORE

#: The longest a presigned S3 URL may live (SigV4's limit: seven days).
MAX_URL_SECONDS = 7 * 24 * 3600
#: The shortest key that may sign the local store's /transfer URLs (HMAC-SHA256).
MIN_SIGNING_KEY_CHARS = 32
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+")
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_ORIGIN = re.compile(r"https?://[^/\s?#]+")
_HOST_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def _host(value: Any) -> bool:
    """An address to bind: an IP address or a DNS host name (letters, digits, hyphens; dot-separated)."""
    if not isinstance(value, str) or not 0 < len(value) <= 253:
        return False
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return all(_HOST_LABEL.fullmatch(label) for label in value.removesuffix(".").split("."))


def _whole_url_or_path(value: str) -> bool:
    if not _SCHEME.match(value):
        return True
    return _URL.fullmatch(value) is not None


@dataclass(frozen=True)
class Rule:
    """What one setting accepts: ``check`` returns True for a usable (already parsed) value."""

    allowed: str
    check: Callable[[Any], bool] = lambda _value: True


def setting(
    default: Any = MISSING, *, rule: Rule, factory: Callable[[], Any] | None = None, secret: bool = False
) -> Any:
    """A dataclass field that carries its rule (read by :func:`validate` and :func:`load_fields`).

    A ``secret`` setting (a key, a password or a URL that may hold one) is never shown: not in an
    error message, not in the settings' repr, so neither can put it in a log.
    """
    metadata = {"rule": rule, "secret": secret}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata, repr=not secret)
    return field(default=default, metadata=metadata, repr=not secret)


def number(low: float, high: float, *, unit: str = "", whole: bool = False, above: bool = False) -> Rule:
    """A number in [low, high] (or (low, high] with ``above``)."""
    kind = "a whole number" if whole else "a number"
    bound = f"above {low:g}" if above else f"from {low:g}"
    unit = f" {unit}" if unit else ""

    def check(value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if whole and not isinstance(value, int):
            return False
        return (value > low if above else value >= low) and value <= high

    return Rule(f"{kind}{unit} {bound} up to {high:g}", check)


def one_of(*choices: str) -> Rule:
    return Rule("one of " + ", ".join(choices), lambda value: value in choices)


def matching(pattern: re.Pattern[str], allowed: str) -> Rule:
    return Rule(allowed, lambda value: isinstance(value, str) and pattern.fullmatch(value) is not None)


def each(rule: Rule, allowed: str) -> Rule:
    return Rule(allowed, lambda values: isinstance(values, tuple) and all(rule.check(v) for v in values))


FLAG = Rule("1/0, true/false, yes/no or on/off", lambda value: isinstance(value, bool))
TEXT = Rule("any text")
METRICS_PORT = Rule(
    "0 (no metrics server) or a port number from 1 up to 65535",
    lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 65535,
)
METRICS_HOST = Rule("an IP address (127.0.0.1, 0.0.0.0, ::) or a host name", _host)
STORE = Rule(
    "s3://bucket/prefix, az://container/prefix or a local directory",
    # Something that starts like a URL ("s3:/bucket", "file://") must be a whole one: a typo must
    # not quietly become a local directory named "s3:".
    lambda value: isinstance(value, str) and value.strip() != "" and _whole_url_or_path(value),
)
WORKER_ID = matching(WORKER_ID_PATTERN, "1-128 letters, digits or . _ : @ - (no spaces or slashes)")
MODULES = each(matching(_MODULE, ""), "comma-separated Python module names (my_company.tasks)")
ORIGINS = each(matching(_ORIGIN, ""), "comma-separated origins like https://tasks.example.com (no path)")
USERS = each(Rule("", lambda v: 0 < len(v) <= 200 and v.isprintable()), "comma-separated user names")
# Notifications (s3task.notify, docs/NOTIFICATIONS.md): endpoints come from the deployment, never a request.
_HTTP_URL = re.compile(r"https?://[^/\s?#@]+(/\S*)?")
# The user name and password must be percent-encoded: a raw ? # / @ would end them early, and the
# rest of the password would then be read as the host or the port (and end up in an error message).
_SMTP_URL = re.compile(r"(smtp|smtps|smtp\+starttls)://([^@\s/?#\[\]]+@)?[^@\s/:?#\[\]]+(?::([0-9]{1,5}))?/?")
_ADDRESS = re.compile(r"[^@\s<>,;\"]+@[^@\s<>,;\"]+\.[^@\s<>,;\"]+")


def _webhook_url(value: Any) -> bool:
    """An http(s) URL a POST can be sent to: its host there, brackets closed, its port from 1 to 65535
    (``http://127.0.0.1:99999/`` and ``https://[::1`` would otherwise turn every event into ``missed``)."""
    if not (isinstance(value, str) and _HTTP_URL.fullmatch(value)):
        return False
    try:
        parts = urlsplit(value)
        return bool(parts.hostname) and parts.port != 0  # .port: ValueError when not a number up to 65535
    except ValueError:
        return False


WEBHOOK_URLS = each(
    Rule("", _webhook_url),
    "comma-separated http:// or https:// URLs with a host and a port from 1 up to 65535 (no user:password@)",
)


def _smtp_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    if value == "":
        return True
    found = _SMTP_URL.fullmatch(value)
    return found is not None and (found.group(3) is None or 1 <= int(found.group(3)) <= 65535)


SMTP_URL = Rule(
    "nothing (no email), or smtp://host[:port], smtps://user:password@host[:465] (TLS) or smtp+starttls://…"
    " with a port from 1 up to 65535; percent-encode ? # / @ [ ] in the user name and password"
    " (%3F %23 %2F %40 %5B %5D)",
    _smtp_url,
)
ADDRESS = Rule("nothing, or one email address (tasks@example.com)", lambda v: v == "" or bool(_ADDRESS.fullmatch(v)))
APP_URL = Rule(
    "nothing, or the app's address like https://tasks.example.com (a path is allowed)",
    lambda v: isinstance(v, str) and (v == "" or _HTTP_URL.fullmatch(v) is not None),
)
SECRET = Rule("nothing, or at least 16 characters", lambda v: v == "" or (len(v) >= 16 and v.isprintable()))
SIGNING_KEY = Rule(
    f"nothing (a key kept in the store's .s3task-meta/), or at least {MIN_SIGNING_KEY_CHARS} printable characters",
    lambda v: isinstance(v, str) and (v == "" or (len(v) >= MIN_SIGNING_KEY_CHARS and v.isprintable())),
)
USER = Rule(
    "nothing ($USER), or a user name (printable, at most 200 characters)",
    lambda v: isinstance(v, str) and len(v) <= 200 and v.isprintable(),
)
INBOX_INTERVAL = Rule(
    "0 (this worker does not sweep inboxes) or a number of seconds from 1 up to 86400",
    lambda v: isinstance(v, int | float) and not isinstance(v, bool) and (v == 0 or 1 <= v <= 86400),
)
PATH = Rule("nothing, or the path of a file", lambda v: isinstance(v, str) and v.isprintable())


@dataclass(frozen=True)
class Settings:
    store: str = setting(DEFAULT_LOCAL_STORE, rule=STORE)
    #: Users who may act on every task.
    operators: tuple[str, ...] = setting((), rule=USERS)
    poll_interval: float = setting(3.0, rule=number(0.01, 3600, unit="of seconds"))
    #: An idle worker HEADs the active-bell each poll and lists active/ only when it rang, while work is
    #: in progress, or at least this often (the safety net for a ring that failed; s3task.markers).
    idle_list_seconds: float = setting(300.0, rule=number(0.1, 3600, unit="of seconds"))
    #: Seconds between sweeps of the recipes' inboxes by the one worker holding the sweep's lease (0: this
    #: worker never sweeps): the pickup promise for a dropped file (docs/INBOXES.md).
    inbox_interval: float = setting(300.0, rule=INBOX_INTERVAL)
    #: Renewed every third of it; below a second a renewal could not finish in time.
    lease_seconds: float = setting(60.0, rule=number(1, 86400, unit="of seconds"))
    #: How long past lease expiry (by the store's clock) before a task counts as abandoned by its worker.
    lease_grace_seconds: float = setting(10.0, rule=number(0, 3600, unit="of seconds"))
    max_attempts: int = setting(3, rule=number(1, 100, whole=True))
    #: First automatic retry waits this long; each further one twice as long (at most 10 minutes).
    retry_backoff_seconds: float = setting(10.0, rule=number(0, 600, unit="of seconds"))
    concurrency: int = setting(1, rule=number(1, 64, whole=True))
    #: A handler whose progress does not move for this long is killed.
    stall_timeout: float = setting(300.0, rule=number(0, 86400, unit="of seconds", above=True))
    #: A task's process using more memory than this (MB of RSS) is killed and the attempt fails.
    max_child_memory_mb: int = setting(2048, rule=number(64, 1 << 20, whole=True))
    worker_id: str = setting(rule=WORKER_ID, factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    handlers: tuple[str, ...] = setting((), rule=MODULES)
    log_format: str = setting("text", rule=one_of("text", "json"))
    log_level: str = setting("INFO", rule=Rule("DEBUG, INFO, WARNING or ERROR", lambda v: v.upper() in _LEVELS))
    #: worker.py serves Prometheus metrics on this port (0: not at all); the app and the API server
    #: serve them on their own port, at /metrics.
    metrics_port: int = setting(0, rule=METRICS_PORT)
    #: The address worker.py's metrics server binds: loopback unless you open it up (0.0.0.0, ::).
    metrics_host: str = setting("127.0.0.1", rule=METRICS_HOST)
    embedded_worker: bool = setting(True, rule=FLAG)
    #: Tasks one user may create per minute, in each app or API process (0: no limit): more are refused
    #: (HTTP 429 with Retry-After), so one user cannot flood everyone's list or the service's memory.
    max_creates_per_minute: int = setting(60, rule=number(0, 100_000, whole=True))
    #: Uploads in parts open at once on one user's tasks (0: no limit): one more is refused in words
    #: (s3task.tasks.open_uploads); a task holds at most two whatever this says.
    max_open_uploads: int = setting(10, rule=number(0, 10_000, whole=True))
    #: Largest parameters of one task, in KiB of JSON (at most 64: the record must stay readable).
    max_parameters_kb: int = setting(16, rule=number(1, 64, whole=True))
    #: Largest upload the app accepts, in megabytes.
    max_upload_mb: int = setting(200, rule=number(1, 5 * 1024 * 1024, whole=True))
    #: Lifetime of presigned URLs, in seconds (S3 refuses more than seven days).
    url_seconds: int = setting(900, rule=number(1, MAX_URL_SECONDS, unit="of seconds", whole=True))
    #: Where browsers load the app from (``https://tasks.example.org``; comma-separated if several):
    #: the origins the bucket's CORS rule lets upload and download directly (``python -m s3task init``).
    app_origin: str = setting("", rule=Rule(ORIGINS.allowed, lambda v: ORIGINS.check(_split(v))))
    #: The app's address, for links in notifications (``<app-url>/task?id=…``); else the first app_origin.
    app_url: str = setting("", rule=APP_URL)
    #: Email the owner when a task ends (docs/NOTIFICATIONS.md); off while empty.
    smtp_url: str = setting("", rule=SMTP_URL, secret=True)
    smtp_from: str = setting("", rule=ADDRESS)
    #: Receive a signed JSON event for every state change (docs/NOTIFICATIONS.md); off while empty.
    #: Secret: a URL may carry a token in its path or query (Slack's do); logs show scheme://host[:port] only.
    webhook_urls: tuple[str, ...] = setting((), rule=WEBHOOK_URLS, secret=True)
    webhook_secret: str = setting("", rule=SECRET, secret=True)
    #: Seconds one delivery (an HTTP POST, an SMTP session) may take before it counts as failed.
    notify_timeout: float = setting(5.0, rule=number(0.1, 60, unit="of seconds"))
    #: Deliveries tried again after a failure, waiting notify_backoff_seconds, then twice as long each time.
    notify_retries: int = setting(8, rule=number(0, 20, whole=True))
    notify_backoff_seconds: float = setting(1.0, rule=number(0.01, 300, unit="of seconds"))
    #: A notification its sender has not finished after this long is taken over by a worker (sender died).
    outbox_recover_seconds: float = setting(900.0, rule=number(1, 86400, unit="of seconds"))
    #: The API's bearer tokens, hashed, in a JSON or TOML file (s3task.web.tokens); while empty, none.
    api_tokens_file: str = setting("", rule=PATH)
    #: Signs the local store's /transfer URLs; while empty, a key generated once into the store's .s3task-meta/.
    signing_key: str = setting("", rule=SIGNING_KEY, secret=True)
    #: Who the CLI acts as when ``--as`` is not given (while empty: $USER, else $LOGNAME).
    user: str = setting("", rule=USER)
    #: The CLI acts as an operator (whoever holds the store's credentials can change every object anyway).
    cli_operator: bool = setting(True, rule=FLAG)
    #: This machine's clock as s3task reads it is off by this much: a test seam for a wrong clock (leases
    #: follow the store's clock, so it must change nothing there).
    clock_skew_seconds: float = setting(0.0, rule=number(-86400, 86400, unit="of seconds"))

    def __post_init__(self) -> None:
        validate(self)

    @property
    def clock(self) -> Clock:
        """The machine's clock, ``clock_skew_seconds`` off: hand it to ``open_store``."""
        return Clock(self.clock_skew_seconds)

    @classmethod
    def load(cls, overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
        """Defaults, then ``S3TASK_<NAME>`` variables, then non-``None`` overrides (flags)."""
        return load_fields(cls, overrides, environ)


T = TypeVar("T")


def env_name(name: str) -> str:
    return "S3TASK_" + name.upper()


def load_fields(
    cls: type[T], overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> T:
    """Build a settings dataclass from ``S3TASK_*`` variables and flag overrides, checking each value."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        raw = env.get(env_name(f.name))
        if raw is not None and raw.strip() != "":
            values[f.name] = _checked(f, parse(f.type, raw.strip()), _shown(f, env_name(f.name) + "=", raw))
    for name, value in (overrides or {}).items():
        if value is not None:
            value = tuple(value) if isinstance(value, list) else value
            f = _field(cls, name)
            values[name] = _checked(f, value, _shown(f, f"--{name.replace('_', '-')} ", value))
    return cls(**values)


def validate(obj: Any) -> None:
    for f in fields(obj):
        _checked(f, getattr(obj, f.name), _shown(f, env_name(f.name) + "=", getattr(obj, f.name)))


def _shown(f: Any, name: str, value: Any) -> str:
    """How an error names a setting and its value: a secret one's value is never repeated."""
    if f.metadata.get("secret"):
        return f"{name.rstrip('= ')} (its value is not shown: it may hold a password or key)"
    return f"{name}{value!r}"


def parse(kind: Any, raw: str) -> Any:
    """A variable's text as the field's type; text that is not one stays text, for the rule to refuse."""
    kind = str(kind)
    if kind == "bool":
        low = raw.lower()
        return True if low in _TRUE else False if low in _FALSE else raw
    if kind.startswith("tuple"):
        return _split(raw)
    if kind in ("float", "int") and _NUMBER.fullmatch(raw):  # ASCII digits only: no "１", "1_0"
        if kind == "int" or _INTEGER.fullmatch(raw):
            return int(raw) if _INTEGER.fullmatch(raw) else raw
        return float(raw)  # "1e400" is inf, which no rule allows
    return raw


def _checked(f: Any, value: Any, shown: str) -> Any:
    rule: Rule = f.metadata["rule"]
    if isinstance(value, int) and not isinstance(value, bool) and str(f.type) == "float":
        try:
            value = float(value)
        except OverflowError:
            value = float("inf")  # refused below, like any number out of range
    if not rule.check(value):
        raise SettingsError(f"{shown} is not allowed: use {rule.allowed}")
    return value


def _field(cls: type, name: str) -> Any:
    for f in fields(cls):
        if f.name == name:
            return f
    raise SettingsError(f"unknown setting {name!r}")


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())
