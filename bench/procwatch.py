"""Peak memory of a worker and its attempt children, read from /proc (Linux only, no psutil).

The worker starts a multiprocessing *fork server* (a child of the worker),
and each attempt's process is forked from that server: worker → fork server →
attempt child. A sampler thread walks /proc every few milliseconds, finds the
worker's descendants, and keeps each one's ``VmHWM`` (the kernel's own
high-water mark of resident memory, so sampling only has to catch the last
value before the process exits, not the peak itself) along with when it was
first and last seen.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass


@dataclass
class Proc:
    pid: int
    ppid: int
    cmdline: str
    first_seen: float
    last_seen: float
    hwm_kb: int = 0
    rss_kb: int = 0
    #: user + system CPU seconds of all its threads, at the last sample
    cpu_s: float = 0.0

    @property
    def hwm_mb(self) -> float:
        return self.hwm_kb / 1024


def _status(pid: int) -> dict[str, str] | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            return dict(line.split(":", 1) for line in f if ":" in line)
    except (OSError, ValueError):
        return None


def _kb(value: str | None) -> int:
    try:
        return int((value or "0").split()[0])
    except (ValueError, IndexError):
        return 0


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """utime + stime from /proc/<pid>/stat (fields 14 and 15, after the parenthesised name)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, ValueError, IndexError):
        return 0.0


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


class Watcher:
    """Samples ``root_pid`` and all its descendants until :meth:`stop`."""

    def __init__(self, root_pid: int, interval: float = 0.02) -> None:
        self.root_pid = root_pid
        self.interval = interval
        self.procs: dict[int, Proc] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="procwatch", daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sample()
            except Exception as e:  # a process vanishing mid-read must not end the sampling
                self.errors.append(repr(e))
            self._stop.wait(self.interval)

    def sample(self) -> None:
        now = time.monotonic()
        tree = {self.root_pid}
        todo = [self.root_pid]
        while todo:  # the live tree, through /proc/<pid>/task/<tid>/children
            for child in _children(todo.pop()):
                if child not in tree:
                    tree.add(child)
                    todo.append(child)
        for pid in tree:
            st = _status(pid)
            if st is None:
                continue
            proc = self.procs.get(pid)
            if proc is None:
                proc = self.procs[pid] = Proc(pid, _kb(st.get("PPid")), _cmdline(pid), now, now)
            proc.last_seen = now
            if "forkserver" not in proc.cmdline:  # first seen between fork and exec: read it again
                proc.cmdline = _cmdline(pid) or proc.cmdline
            proc.hwm_kb = max(proc.hwm_kb, _kb(st.get("VmHWM")))
            proc.cpu_s = max(proc.cpu_s, _cpu_seconds(pid))
            proc.rss_kb = _kb(st.get("VmRSS"))

    # --- who is who ------------------------------------------------------------

    def worker(self) -> Proc | None:
        return self.procs.get(self.root_pid)

    def fork_server(self) -> Proc | None:
        for p in self.procs.values():
            if p.ppid == self.root_pid and "forkserver" in p.cmdline:
                return p
        return None

    def attempt_children(self) -> list[Proc]:
        """Processes forked by the fork server (attempts, and the short warm-up child), oldest first."""
        server = self.fork_server()
        if server is None:
            return []
        return sorted((p for p in self.procs.values() if p.ppid == server.pid), key=lambda p: p.first_seen)
