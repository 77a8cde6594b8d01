"""Section 4: the cost of listing the newest tasks against the length of the history."""

from __future__ import annotations

from typing import Any

from .fmt import _cmd, _ms, _req, _table, _x

#: The timings of a page, in the table's columns' order (bench/listing.py measures them).
TIMINGS = ("list_newest_50", "list_mine_newest_50", "LIST_only", "reads_parallel_50", "reads_sequential_50")


def section(res: dict[str, Any]) -> list[str]:
    lst = res.get("listing")
    if not lst or "moto" not in lst:
        return []
    sizes = [str(s) for s in lst["sizes"]]
    rows = _rows(lst["moto"], "moto", sizes)
    if lst.get("moto_latency"):
        rows += _rows(lst["moto_latency"], f"moto + {lst['latency_ms']:g} ms/request", sizes)
    if "local" in lst:
        rows += _rows(lst["local"], "local store", sizes)
    req = lst["requests"]
    out = [
        "## 4. Listing cost does not grow with history",
        "",
        "Stores filled with a history of N tasks (each with its record, input, output and by-user marker; the "
        "newest five still running), then `TaskService.list(limit=50)` with an empty cache (best of "
        f"{res['config']['listing_repeats']}), its `LIST` alone, and its 50 record reads through the service's "
        "thread pool or one after another. Moto answers from Python in about a millisecond per request, so "
        "the same is repeated with 20 ms added to every request (roughly S3's latency for small objects), "
        "where reading in parallel is what keeps a page fast.",
        "",
        _table(
            [
                "store",
                "tasks",
                "newest 50",
                "newest 50 of mine",
                "LIST alone",
                "50 reads, parallel",
                "50 reads, one by one",
            ],
            rows,
        ),
        "",
        f"Ratio {int(sizes[-1]):,} ÷ {int(sizes[0]):,} tasks for the whole page: moto **{_x(lst.get('ratio_moto'))}**"
        + (f", moto with latency **{_x(lst.get('ratio_moto_latency'))}**" if "ratio_moto_latency" in lst else "")
        + (f", local store **{_x(lst['local'].get('ratio'))}**" if "local" in lst else "")
        + ". The page is always one `LIST` (`start-after` + `max-keys` 51) and 50 GETs whatever the history; "
        "what still grows is the LIST itself on moto, which scans every key of the bucket for each request "
        "(S3 reads an index), and on the local store, which reads the whole directory to sort it."
        + _local_reads_note(lst),
        "",
        f"**One refresh of an open Tasks page** (the page's fragment calls `list` again on the same service, "
        f"which keeps completed and abandoned records): first load {_req(req['first_load'])}; each refresh "
        f"{_req(req['refresh'])} — the {req['live_on_page']} running tasks on the page, nothing for the "
        "finished ones.",
        "",
        _cmd("listing"),
        "",
    ]
    return out


def _rows(block: dict[str, Any], label: str, sizes: list[str]) -> list[list[str]]:
    """A table row per history size that ``block`` (one store's timings by size) has."""
    return [[label, f"{int(n):,}"] + [_ms(block[n][k]) for k in TIMINGS] for n in sizes if n in block]


def _local_reads_note(lst: dict[str, Any]) -> str:
    local = lst.get("local", {})
    big = local.get(str(lst["sizes"][-1]))
    if not big or big["reads_parallel_50"] <= big["reads_sequential_50"]:
        return ""
    return (
        f" On the local store the service's thread pool is slower than reading one by one "
        f"({_ms(big['reads_parallel_50'])} against {_ms(big['reads_sequential_50'])}): fifty small file reads "
        "cost less than starting the pool; `Looking.read_many` could read sequentially when the store "
        "has no network latency (a `s3task/tasks/looking.py` change)."
    )
