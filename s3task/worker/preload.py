"""What the worker's fork server loads before it forks any attempt process.

Importing this module imports everything an attempt needs and then runs a
two-row CSV through the engine once, in memory: the first run of anything in
pandas and pyarrow pays for lazy set-up (kernels looked up, caches filled,
the allocator's first pages), about 11 ms here. Done once in the fork server,
every attempt forked from it starts warm instead of paying for it again.

The engine joins its own threads before it returns. What stays behind are
Arrow's idle pool threads (the I/O pool's, as after importing pyarrow), and
Arrow re-creates its thread pools in a forked child by itself (its at-fork
handlers, apache/arrow#14594), so forking after the warm-up is as safe as
forking after the imports alone.
"""

from __future__ import annotations

import contextlib
import io

from .. import processing
from ..csvio import sheetreader, spool  # noqa: F401  (a workbook's reader: imported once, not per attempt)
from ..store import local, s3  # noqa: F401  (imported here so that attempts do not import them)

# cli: multiprocessing runs the worker's main script (worker.py) again in every attempt process
# before the attempt starts (spawn's "fix up __main__"); worker.py imports the command line,
# which imported argparse and gettext there each time: 4.3 ms per attempt, 0.2 ms once they are here.
from . import child, cli  # noqa: F401

_SAMPLE = b'id,name,note\n1,Ada,"two\nlines"\n2,Grace,=1+1\n'


def warm() -> None:
    """Run the sample through the engine; never raise.

    multiprocessing's fork server survives only an ImportError from its
    preload: anything else raised here would take it down, and every attempt
    with it. A failed warm-up only means attempts start cold.
    """
    with contextlib.suppress(Exception):
        processing.run("copy", {}, io.BytesIO(_SAMPLE), io.BytesIO(), lambda counts: None)


warm()
