"""Section 5: pickup latency, from submit to the worker's claim."""

from __future__ import annotations

from typing import Any

from .fmt import _cmd, _s, _table

_PICKUP_NAMES = {
    "local": ("`worker.py`", "local store"),
    "s3_moto": ("`worker.py`", "S3 (moto)"),
    "embedded_local": ("the app's embedded worker", "local store"),
    "embedded_s3_moto": ("the app's embedded worker", "S3 (moto)"),
}


def section(res: dict[str, Any]) -> list[str]:
    pk = res.get("pickup")
    if not pk:
        return []
    names = _PICKUP_NAMES
    rows = [
        [
            *names.get(k, (k, "")),
            str(p["tasks"]),
            f"{p['poll_interval_s']:g} s",
            _s(p["median_s"]),
            _s(p["p95_s"]),
            _s(p["max_s"]),
        ]
        for k, p in pk.items()
    ]
    return [
        "## 5. Pickup latency",
        "",
        "Default settings; tiny tasks submitted one at a time at a random moment of the worker's poll cycle; "
        "latency = the worker's `claimed` log line minus the moment `submit` returned, on this machine's clock. "
        "A separate `worker.py` finds a task at its next poll (an idle one after its HEAD of the active-bell "
        "shows the ring): expected uniform between 0 and the poll interval, plus the claim itself. The app's "
        "embedded worker is woken by the submit itself (`TaskService.on_queued`, as the app wires it: "
        "`s3task.worker.wake_embedded`), so its pickup is the listing, the record read and the claim.",
        "",
        _table(["worker", "store", "tasks", "poll interval", "median", "p95", "max"], rows),
        "",
        _cmd("pickup"),
        "",
    ]
