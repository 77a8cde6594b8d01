"""Pass-through on one input, timed by a real worker of *another checkout*: an A/B of two commits.

    git archive <commit> | tar -x -C /tmp/other
    .venv/bin/python bench/compare.py /tmp/other  100 3   # the other commit's code
    .venv/bin/python bench/compare.py .           100 3   # this checkout

Prints the best of N wall and CPU seconds of the Arrow loop and of the pass-through task (the
pandas loop left out where the checkout allows it). Run the two one after the other, twice,
interleaved: the machine's speed drifts from minute to minute.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __name__ == "__main__":
    root, mb, rounds = Path(sys.argv[1]).resolve(), int(sys.argv[2]), int(sys.argv[3])
    sys.path.insert(0, str(root))
    from bench import data, passthrough, throughput
    from bench import harness as h

    out = Path("/tmp") / f"bench-compare-{root.name}"
    out.mkdir(parents=True, exist_ok=True)
    path = data.ensure(Path(__file__).resolve().parent / "out" / "data", mb)
    kwargs = {"pandas_too": False} if "pandas_too" in throughput.measure_size.__code__.co_varnames else {}
    r = throughput.measure_size(h.local_site(out / "store"), path, rounds, out, handlers=(passthrough.NAME,), **kwargs)
    print(root, json.dumps({"seconds_best": r["seconds_best"], "cpu_s": r["cpu_s"]}))
