"""The limits an attempt's process runs within: progress, running time, memory."""

from __future__ import annotations

from .. import handlers
from ..config import Settings
from ..errors import S3TaskError
from .forkserver import TaskProcess


def broken(settings: Settings, proc: TaskProcess, still: float, running: float, max_runtime: float | None) -> str:
    """Why the attempt must stop now ("" while it may go on): ``still`` seconds without progress,
    ``running`` seconds since its process started, and the memory that process uses."""
    if still > settings.stall_timeout:
        return f"stalled: no progress for {settings.stall_timeout:.0f} seconds"
    if max_runtime and running > max_runtime:
        return f"ran longer than the {max_runtime:.0f} seconds this task type allows"
    if proc.rss_mb() > settings.max_child_memory_mb:
        return f"used more than {settings.max_child_memory_mb} MB of memory"
    return ""


def max_runtime(task_type: str) -> float | None:
    """The task type's own limit on an attempt's running time, if it has one."""
    try:
        return handlers.get(task_type).max_runtime
    except S3TaskError:
        return None
