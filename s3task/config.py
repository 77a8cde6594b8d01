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

import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

from .layout import WORKER_ID_PATTERN
from .store import DEFAULT_LOCAL_STORE

#: The longest a presigned S3 URL may live (SigV4's limit: seven days).
MAX_URL_SECONDS = 7 * 24 * 3600
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_URL = re.compile(r"[a-z][a-z0-9+.-]*://\S+")
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_ORIGIN = re.compile(r"https?://[^/\s?#]+")


def _whole_url_or_path(value: str) -> bool:
    if not _SCHEME.match(value):
        return True
    return _URL.fullmatch(value) is not None


class SettingsError(ValueError):
    """A setting has a value s3task cannot use (the message names it, the value, and what is allowed)."""


@dataclass(frozen=True)
class Rule:
    """What one setting accepts: ``check`` returns True for a usable (already parsed) value."""

    allowed: str
    check: Callable[[Any], bool] = lambda _value: True


def setting(default: Any = MISSING, *, rule: Rule, factory: Callable[[], Any] | None = None) -> Any:
    """A dataclass field that carries its rule (read by :func:`validate` and :func:`load_fields`)."""
    if factory is not None:
        return field(default_factory=factory, metadata={"rule": rule})
    return field(default=default, metadata={"rule": rule})


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
STORE = Rule(
    "s3://bucket/prefix or a local directory",
    # Something that starts like a URL ("s3:/bucket", "file://") must be a whole one: a typo must
    # not quietly become a local directory named "s3:".
    lambda value: isinstance(value, str) and value.strip() != "" and _whole_url_or_path(value),
)
WORKER_ID = matching(WORKER_ID_PATTERN, "1-128 letters, digits or . _ : @ - (no spaces or slashes)")
MODULES = each(matching(_MODULE, ""), "comma-separated Python module names (my_company.tasks)")
ORIGINS = each(matching(_ORIGIN, ""), "comma-separated origins like https://tasks.example.com (no path)")
USERS = each(Rule("", lambda v: 0 < len(v) <= 200 and v.isprintable()), "comma-separated user names")


@dataclass(frozen=True)
class Settings:
    store: str = setting(DEFAULT_LOCAL_STORE, rule=STORE)
    #: Users who may act on every task.
    operators: tuple[str, ...] = setting((), rule=USERS)
    poll_interval: float = setting(3.0, rule=number(0.01, 3600, unit="of seconds"))
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
    embedded_worker: bool = setting(True, rule=FLAG)
    #: Largest upload the app accepts, in megabytes.
    max_upload_mb: int = setting(200, rule=number(1, 5 * 1024 * 1024, whole=True))
    #: Lifetime of presigned URLs, in seconds (S3 refuses more than seven days).
    url_seconds: int = setting(900, rule=number(1, MAX_URL_SECONDS, unit="of seconds", whole=True))
    #: Where browsers load the app from (``https://tasks.example.org``; comma-separated if several):
    #: the origins the bucket's CORS rule lets upload and download directly (``python -m s3task init``).
    app_origin: str = setting("", rule=Rule(ORIGINS.allowed, lambda v: ORIGINS.check(_split(v))))

    def __post_init__(self) -> None:
        validate(self)

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
            values[f.name] = _checked(f, parse(f.type, raw.strip()), f"{env_name(f.name)}={raw!r}")
    for name, value in (overrides or {}).items():
        if value is not None:
            value = tuple(value) if isinstance(value, list) else value
            values[name] = _checked(_field(cls, name), value, f"--{name.replace('_', '-')} {value!r}")
    return cls(**values)


def validate(obj: Any) -> None:
    for f in fields(obj):
        _checked(f, getattr(obj, f.name), f"{env_name(f.name)}={getattr(obj, f.name)!r}")


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
