"""A ``compare`` held mid-way, loaded with ``--handlers compare_gate`` (tests/system/test_compare_worker.py).

With ``COMPARE_GATE`` set to a path, the comparison stops after the first block of the newer result has been
spooled (the older one is by then, and its bytes counted): it writes its process id to
``<path>.reached`` and waits until ``<path>.open`` exists, offering its counts so far meanwhile (the child
sends them on at most every half second). Without it, it is the real type, unchanged.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from s3task.handlers import register
from s3task.handlers.compare import Compare


@register
class GatedCompare(Compare):
    name = "compare"

    def run_file(self, source: Any, sink: Any, on_progress: Any) -> Any:
        gate = os.environ.get("COMPARE_GATE")
        if gate and self.context is not None:
            inner = self.context.open_result

            def held(pin: Any, moved: Any, label: str) -> Iterator[Any]:
                for n, table in enumerate(inner(pin, moved, label)):
                    yield table
                    if label == "this result" and n == 0:
                        Path(gate + ".reached").write_text(str(os.getpid()))
                        while not Path(gate + ".open").exists():  # the counts so far go on being offered
                            moved(0)
                            time.sleep(0.02)

            self.context = replace(self.context, open_result=held)
        return super().run_file(source, sink, on_progress)
