"""Section 3: the store requests of a task's life and of an idle worker, and what they cost on S3."""

from __future__ import annotations

from typing import Any

from .fmt import _cmd, _req, _s, _table, fmt_s


def section(res: dict[str, Any]) -> list[str]:
    req = res.get("requests")
    if not req:
        return []
    lives = req.get("task_life", [])
    kinds = sorted({k for life in lives for k in life["requests"]})
    from ..costs import KIND_CLASS, PRICE_PER_1000

    rows = [[k, KIND_CLASS.get(k, "")] + [str(life["requests"].get(k, 0)) for life in lives] for k in kinds]
    rows.append(["**total**", ""] + [f"**{life['requests_total']}**" for life in lives])
    rows.append(["$ per 1,000 tasks", ""] + [f"${life['dollars_per_1000_tasks']:.3f}" for life in lives])
    rows.append(["(running time)", ""] + [_s(life["running_seconds"]) for life in lives])
    idle = req["idle"]
    prices = ", ".join(f"{k}: ${v} per 1,000" for k, v in PRICE_PER_1000.items())
    header = [f"{life['input_mb']:g} MB, {_FLOWS.get(life.get('flow', ''), 'one call')}" for life in lives]
    out = [
        "## 3. Requests and money",
        "",
        f"Prices used: S3 Standard, US East (N. Virginia) list prices — {prices}. Storage ($0.023 per GB-month) "
        "and transfer out of AWS ($0.09 per GB) come on top and depend on how long outputs are kept and where "
        "they are downloaded; requests are what this design controls.",
        "",
        "Every request of every process is counted by the moto server itself (`bench/motoserver.py`), by kind "
        "and by the key it touched. One `email_enrichment` task from `create` to download, in the two ways a "
        "file arrives: *one call* (`TaskService.submit_file`: the New task page's uploader through the app, "
        "the CLI's `submit`), and *browser upload* (the New task page on S3: "
        "create, the browser's PUT to a presigned URL, then the submit). A task's requests are those on its "
        "own keys; the worker's `LIST` of `active/` and `HEAD` of the active-bell are shared by all tasks and "
        "counted with the idle worker below, and so is the submit's one `PUT` of the active-bell (its ring: "
        "$0.005 per 1,000 tasks on top of the table). The service that created a task keeps the record and "
        "its ETag for the submit (the newest 500); a submit by another process (a task created by the app "
        "and submitted through a separate API server, say) reads the record first: one `GET` more.",
        "",
        _table(["request", "price class", *header], rows),
        "",
        "Longer tasks add one `PART` per 8 MB of input and of output (multipart uploads), a `PUT` of the "
        "record per heartbeat (every third of the lease, 20 s by default; conditional on the last write's "
        "ETag, so no read), a `GET` of the record per poll of the worker while it runs (every 3 s: that is "
        "how a cancel reaches an attempt whose counts stand still) and a `PUT` of the progress object at "
        "most every 1.5 s while the counts move (section 6).",
        "",
        *_steps(lives),
        *_idle_worker(idle),
    ]
    out += [_cmd("requests"), ""]
    return out


_FLOWS = {"one call": "one call", "browser": "browser upload"}
_PHASES = {"submit": "create → submit", "worker": "worker", "download": "download"}


def _steps(lives: list[dict[str, Any]]) -> list[str]:
    """Each request of the smallest browser-upload task, in order, with why it must be there."""
    life = next((x for x in lives if x.get("flow") == "browser" and x.get("steps")), None)
    if life is None:
        return []
    rows: list[list[str]] = []
    seen: dict[tuple[str, str, str], int] = {}
    dropped = False
    for i, step in enumerate(life["steps"], 1):
        kind, obj, phase = step["kind"], step["object"], step["phase"]
        nth = seen[phase, kind, obj] = seen.get((phase, kind, obj), 0) + 1
        why = _why(phase, kind, obj, nth, dropped)
        dropped = dropped or (kind == "DELETE" and obj.startswith("active/"))
        n = f" ×{step['n']}" if step["n"] > 1 else ""
        rows.append([str(i), _PHASES.get(phase, phase), f"`{kind} {obj}`{n}", why])
    return [
        f"Each request of the {life['input_mb']:g} MB browser-upload task, in the order the store saw them "
        "(the one-call way has no `GET` of the input at submit: the file passes through the submit, which "
        "checks its first bytes on the way and takes its ETag from the write). The order and the submit's "
        "requests are also pinned by `tests/unit/test_requests_counted.py`.",
        "",
        _table(["#", "by", "request", "why it must be there"], rows),
        "",
    ]


def _why(phase: str, kind: str, obj: str, nth: int, dropped: bool) -> str:
    """Why a request is there: ``nth`` of its kind on that object in that phase; ``dropped``: after the
    marker's delete."""
    if obj.startswith("by-user/"):
        return 'the "my tasks" index: a person\'s list reads these, not every task'
    if obj.startswith("active/"):
        if kind == "PUT":
            return "the workers' index of tasks in progress, written before the record says queued"
        return "the task is done: out of the workers' index"
    if obj.endswith("input.csv"):
        if phase == "submit" and kind == "PUT":
            return "the file itself"
        if phase == "submit":
            return "the first 64 KB for the header check, with the size and ETag that the record pins"
        return "the attempt reads the file, on the pinned ETag (If-Match)"
    if "output-attempt" in obj:
        return "the result, under this attempt's own name" if kind != "GET" else "the download (presigned GET)"
    if "progress-attempt" in obj:
        return "live counts while the attempt runs (section 6)"
    if not obj.endswith("status.json"):
        return ""
    if phase == "submit":
        if kind == "GET":
            return "the record, read to check who may submit it and that it still waits for its file"
        if nth == 1:
            return "the record, created (create-only)"
        return "queued, conditional on the create's ETag (kept by the service that created it): no read between"
    if phase == "download":
        return "the person opens the task page"
    if kind == "GET" and dropped:
        return "after the marker's delete: puts it back if a person's retry queued the task meanwhile"
    if kind == "GET":
        return "the worker's poll reads each task in the index: a claim needs the record and its ETag"
    if nth == 1:
        return "the claim: running, with a lease, conditional on the poll's ETag"
    return "completed, conditional on the claim's ETag (or the last heartbeat's): no read between"


def _idle_worker(idle: dict[str, Any]) -> list[str]:
    """The idle worker's paragraph and table: the active-bell's HEAD per poll, the safety-net LIST, presence."""
    if "head_per_poll" not in idle:  # results from before the bell: a LIST every poll
        return [
            f"**An idle worker** polls every {idle['poll_interval_s']:g} s: one `LIST` per poll "
            f"({idle['list_per_poll']} measured over {idle['window_s']:.0f} s: {_req(idle['measured'])}), plus its "
            f"presence object, one PUT a minute: ${idle['dollars_per_idle_worker_month']:.2f} a worker-month.",
            "",
        ]
    from ..costs import dollars

    per_hour, month = idle["per_hour"], idle["per_month"]
    net, beat = idle["safety_net_s"], idle["presence_idle_s"]
    kinds = ["HEAD", "LIST", "PUT"]
    what = {
        "HEAD": f"the active-bell, once a poll (every {idle['poll_interval_s']:g} s)",
        "LIST": f"`active/`, the safety net: every {fmt_s(net)} while the bell is silent",
        "PUT": f"presence, every {fmt_s(beat)} while idle",
    }
    rows = [[f"`{k}`", what[k], f"{per_hour[k]:,}", f"{month[k]:,}", f"${dollars({k: month[k]}):.2f}"] for k in kinds]
    rows.append(["**total**", "", "", "", f"**${idle['dollars_per_idle_worker_month']:.2f}**"])
    before = idle["before_bell_per_month"]
    rows.append(
        [
            "before the bell",
            f"a `LIST` every poll, presence every minute ({before['LIST']:,} LIST + {before['PUT']:,} PUT a month)",
            "",
            "",
            f"${idle['before_bell_dollars_per_idle_worker_month']:.2f}",
        ]
    )
    return [
        f"**An idle worker** (nothing in progress in `active/`) HEADs one small object, `<prefix>/active-bell`, "
        f"each poll ({idle['head_per_poll']} HEAD and {idle['list_per_poll']} LIST per poll measured over "
        f"{idle['window_s']:.0f} s: {_req(idle['measured']) or 'nothing else'}). `submit`, `retry` and `repair` "
        "overwrite the bell after their marker and record writes; a worker lists `active/` only when the bell's "
        "ETag changed since its last listing (read *before* listing, so a ring during a listing makes the next "
        "poll list), while its last listing found work in progress (queued, running, failed and waiting for a "
        f"retry: every poll then, as before), when the app's own submit wakes it, and every {fmt_s(net)} as a "
        "safety net (`S3TASK_IDLE_LIST_SECONDS`) for a ring that failed. Pickup after a ring is the next poll, "
        "as before. The presence object is written every minute while the worker runs a task and every "
        f"{fmt_s(beat)} while idle, so the app counts a worker as seen for {fmt_s(2 * beat)} after its last beat "
        f'(an idle worker\'s "last seen" may be {fmt_s(beat)} old).',
        "",
        _table(["request", "what", "per hour", "per idle worker-month (730 h)", "$"], rows),
        "",
        "No event is missed: everything that makes a task claimable writes its marker first and rings last, "
        "and everything time-driven (a retry coming due, a lease running out) has a marker, which keeps the "
        "worker listing (`tests/system/test_bell.py`: a poll between marker and bell, a ring during a listing, a "
        "failed ring, a retry coming due, a lease running out, the embedded wake).",
        "",
    ]
