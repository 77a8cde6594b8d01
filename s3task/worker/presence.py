"""Worker presence: ``<prefix>/workers/<worker-id>``, rewritten at most once a minute.

Lets the app say whether anyone will pick a task up, for a few PUTs an hour.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from .. import __version__
from ..errors import S3TaskError
from ..layout import Layout
from ..record import parse_iso, to_iso
from ..store.base import ObjectStore, PutMode

log = logging.getLogger("s3task.worker")

PRESENCE_INTERVAL = 60.0


class Presence:
    def __init__(self, store: ObjectStore, layout: Layout, worker_id: str) -> None:
        self.store, self.layout, self.worker_id = store, layout, worker_id
        self._last = -PRESENCE_INTERVAL
        self._started = to_iso(store.now())

    def beat(self, task_ids: list[str], *, force: bool = False, stopped: bool = False) -> None:
        if not force and time.monotonic() - self._last < PRESENCE_INTERVAL:
            return
        body: dict[str, Any] = {
            "worker_id": self.worker_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "version": __version__,
            "started_at": self._started,
            "last_seen": to_iso(self.store.now()),
            "task_ids": task_ids,
            "task_id": task_ids[0] if task_ids else None,
            "stopped": stopped,
        }
        try:
            self.store.put(
                self.layout.worker_key(self.worker_id),
                json.dumps(body).encode(),
                PutMode.OVERWRITE,
                content_type="application/json",
            )
            self._last = time.monotonic()
        except (S3TaskError, OSError, ValueError) as e:  # best effort: the work matters more
            log.warning("could not write presence: %s", e)


def live_workers(store: ObjectStore, layout: Layout, within_seconds: float = 180) -> list[dict[str, Any]]:
    """Workers that reported within ``within_seconds`` (by the store's clock) and have not stopped."""
    keys = store.list_keys(layout.workers_root, limit=200)
    cutoff = store.now() - timedelta(seconds=within_seconds)

    def read(key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(store.get(key).body)
        except (S3TaskError, ValueError):
            return None
        seen = parse_iso(data.get("last_seen")) if isinstance(data, dict) else None
        if seen is None or seen < cutoff or data.get("stopped"):
            return None
        return dict(data)

    if not keys:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(keys))) as pool:
        return [w for w in pool.map(read, keys) if w]
