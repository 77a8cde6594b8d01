"""Task types used only by the worker tests, loaded with ``--handlers worker_handlers``."""

from __future__ import annotations

import os
import time

import pandas as pd

from s3task.handlers import ERROR_COLUMN, Param, TaskType, register


@register
class Gated(TaskType):
    """Waits until the file named by ``gate`` exists, then copies rows. Lets a test hold a task mid-flight."""

    name = "test_gated"
    title = "Gated copy (tests)"
    description = "Copies rows once a gate file exists."
    params = (Param("gate", required=True),)

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        while not os.path.exists(self.values["gate"]):
            time.sleep(0.05)
        out = chunk.copy()
        out[ERROR_COLUMN] = ""
        return out


@register
class Hang(TaskType):
    name = "test_hang"
    title = "Hangs (tests)"
    description = "Never finishes."

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        while True:
            time.sleep(1)


@register
class Boom(TaskType):
    name = "test_boom"
    title = "Always fails (tests)"
    description = "Raises on every attempt."

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        raise RuntimeError("deliberate failure")


@register
class Slow(TaskType):
    """Takes ``seconds`` per chunk and writes the chunk's first row; its process id goes to ``pidfile``.

    With an input of several engine blocks, its counts move block by block, slowly enough to watch.
    """

    name = "test_slow"
    title = "Slow copy that leaves its pid (tests)"
    description = "Copies the first row of each chunk, slowly."
    params = (Param("seconds", "float", default=1.0), Param("pidfile", default=""))

    def process(self, chunk: pd.DataFrame) -> pd.DataFrame:
        if self.values["pidfile"] and not os.path.exists(self.values["pidfile"]):
            with open(self.values["pidfile"], "w") as f:
                f.write(str(os.getpid()))
        time.sleep(self.values["seconds"])
        out = chunk.head(1).copy()
        out[ERROR_COLUMN] = ""
        return out
