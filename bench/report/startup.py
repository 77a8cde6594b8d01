"""Start-up time of the worker, the CLI and a worker's first claim."""

from __future__ import annotations

from typing import Any

from .fmt import _cmd, _s, _table


def section(res: dict[str, Any]) -> list[str]:
    su = res.get("startup")
    if not su:
        return []
    rows = [
        ["`python -c pass` (the interpreter alone)", _s(su["python_s"])],
        ["`worker.py --once` on an empty local store", _s(su["worker_once_empty_s"])],
        ["`python -m s3task list` (a local store with a few tasks)", _s(su["cli_list_s"])],
        ["`python -m s3task show <id>`", _s(su["cli_show_s"])],
        ["a long-running `worker.py`: start → its claim of the task queued before it started", _s(su["first_claim_s"])],
    ]
    return [
        "## Start-up time",
        "",
        f"Process wall time, best of {su['rounds']}. The CLI and the worker's own process import no pandas, pyarrow "
        "or numpy: attempts run in processes forked from the worker's fork server, which imports them itself. A "
        "long-running worker starts that server without waiting for it and polls at once; `--once` starts it only "
        "for a first attempt. The first claim is timed from `Popen` to the task's record leaving `queued` "
        "(read every 5 ms), so it includes the store probe and the first poll.",
        "",
        _table(["", "seconds"], rows),
        "",
        _cmd("startup"),
        "",
    ]
