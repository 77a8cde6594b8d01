"""Worker presence: ``<prefix>/workers/<worker-id>``, rewritten when the worker starts, takes a task
or stops, and in between once a minute while it runs a task, every five minutes while it has none.

Lets the app say whether anyone will pick a task up, and its Workers page (operators) show who runs
what, for a few PUTs an hour. ``beat_every`` in the object says when to expect the next one; the app
counts a worker as seen for :data:`SEEN_WITHIN` after its last beat (two idle beats), so a worker that
died idle is still shown as seen for up to that long.
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

#: Seconds between beats while the worker runs a task (the Workers page shows its tasks' progress).
PRESENCE_INTERVAL = 60.0
#: Seconds between beats while it has no task: 8,760 PUTs ($0.04) a worker-month instead of 43,800 ($0.22).
PRESENCE_IDLE_INTERVAL = 300.0
#: How long after its last beat the app counts a worker as seen: two idle beats, so one lost beat is no alarm.
SEEN_WITHIN = 2 * PRESENCE_IDLE_INTERVAL


class Presence:
    def __init__(self, store: ObjectStore, layout: Layout, worker_id: str) -> None:
        self.store, self.layout, self.worker_id = store, layout, worker_id
        self._last = -PRESENCE_IDLE_INTERVAL
        self._every = 0.0  # the beat_every of the last object written (0: none yet)
        self._started = to_iso(store.now())

    def beat(self, task_ids: list[str], *, force: bool = False, stopped: bool = False) -> None:
        """Write the presence object when the last one's ``beat_every`` has passed (or ``force``).

        Each object promises the next within its own ``beat_every``: a worker that finished its
        last task still beats a minute after the last busy beat, and says 5 minutes from then on.
        """
        every = PRESENCE_INTERVAL if task_ids else PRESENCE_IDLE_INTERVAL
        if not force and time.monotonic() - self._last < self._every:
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
            "beat_every": every,
        }
        try:
            self.store.put(
                self.layout.worker_key(self.worker_id),
                json.dumps(body).encode(),
                PutMode.OVERWRITE,
                content_type="application/json",
            )
            self._last, self._every = time.monotonic(), every
        except (S3TaskError, OSError, ValueError) as e:  # best effort: the work matters more
            log.warning("could not write presence: %s", e)


def live_workers(
    store: ObjectStore, layout: Layout, within_seconds: float = SEEN_WITHIN, *, include_stopped: bool = False
) -> list[dict[str, Any]]:
    """Workers that reported within ``within_seconds`` (by the store's clock) and have not stopped.

    ``include_stopped``: also those that said they stopped within that time (``"stopped": true``).
    """
    keys = store.list_keys(layout.workers_root, limit=200)
    cutoff = store.now() - timedelta(seconds=within_seconds)

    def read(key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(store.get(key).body)
        except (S3TaskError, ValueError):
            return None
        seen = parse_iso(data.get("last_seen")) if isinstance(data, dict) else None
        if seen is None or seen < cutoff or (data.get("stopped") and not include_stopped):
            return None
        return dict(data)

    if not keys:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(keys))) as pool:
        return [w for w in pool.map(read, keys) if w]
