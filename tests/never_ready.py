"""Test-only: a worker whose fork server never becomes ready (``--handlers never_ready``).

Imported as a handlers module in the worker (the one extension point the worker has, so the product
carries no test hook), it adds itself to what the fork server preloads. Imported there, in the fork
server, it blocks for as long as the worker that started the server lives (at most
:data:`LONGEST` seconds), so the server never forks an attempt and does not outlive the test.
"""

from __future__ import annotations

import os
import time

from s3task.worker import forkserver

LONGEST = 120.0
_WORKER = "S3TASK_TEST_NEVER_READY_WORKER"

if os.environ.get(_WORKER) is None:  # the worker: have the fork server load this module too
    os.environ[_WORKER] = str(os.getpid())
    forkserver._MP.set_forkserver_preload(["s3task.worker.preload", __name__])
else:  # the fork server: hang in the import while the worker lives
    worker, until = int(os.environ[_WORKER]), time.monotonic() + LONGEST
    while time.monotonic() < until:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
