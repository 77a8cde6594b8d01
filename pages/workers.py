"""Workers (operators only): each worker seen in the last minutes, what it runs, when it last beat.

Read from the presence objects workers write under ``workers/`` (``s3task/worker/presence.py``):
one when a worker starts or stops and when it takes a task, and in between once a minute while it runs
a task, every five minutes while idle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from s3task.errors import S3TaskError
from s3task.record import TaskRecord, parse_iso
from ui import context, services
from ui import format as fmt

#: How often the page re-reads the presence objects (the reading is cached that long anyway).
REFRESH_SECONDS = 10.0

ctx = context.get()
st.title("Workers")
if not ctx.actor.operator:
    st.error(
        "This page is for operators only: it shows the machines that process tasks. "
        "Your own tasks and their progress are on the Tasks page.",
        icon=":material/block:",
    )
    st.page_link("pages/tasks.py", label="Go to Tasks", icon=":material/list_alt:")
    st.stop()

window = fmt.duration(services.WORKER_WINDOW_SECONDS)
st.caption(
    f"Every worker that reported in the last {window}. A worker reports when it starts, takes a task "
    "and stops, and in between once a minute while it runs a task and every 5 minutes "
    "while idle, so an idle worker's last beat may be 5 minutes old; one killed without saying so shows "
    f"here until its beat is {window} old. This page re-reads them every {REFRESH_SECONDS:g} s."
)


def task_of(task_id: str) -> TaskRecord | None:
    try:
        return ctx.service.get(ctx.actor, task_id)
    except S3TaskError:
        return None


def holds(worker: dict[str, Any]) -> list[str]:
    """The ids of the tasks the worker said it runs at its last beat."""
    listed = worker.get("task_ids")
    return [str(i) for i in listed if i] if isinstance(listed, list) and not worker.get("stopped") else []


@dataclass(frozen=True)
class Seen:
    """A worker's last report, with the records of the tasks it named (None: unreadable)."""

    report: dict[str, Any]
    tasks: list[tuple[str, TaskRecord | None]]

    def runs_now(self, record: TaskRecord | None) -> bool:
        """Does the task's record (as read now) say this worker runs it? Unreadable: as the worker said."""
        return record is None or (record.status == "running" and record.worker_id == self.report.get("worker_id"))

    @property
    def state(self) -> str:
        if self.report.get("stopped"):
            return "Stopped"
        return "Busy" if any(self.runs_now(r) for _, r in self.tasks) else "Idle"


COLORS: dict[str, fmt.BadgeColor] = {"Busy": "blue", "Idle": "green", "Stopped": "gray"}


def runs(seen: Seen) -> None:
    """The tasks the worker said it holds, each a link to its page, with what the task's record says now."""
    if not seen.tasks:
        st.caption("Stopped." if seen.report.get("stopped") else "Not running a task.")
        return
    for task_id, record in seen.tasks:
        if record is None:
            st.page_link("pages/task.py", label=task_id, query_params={"id": task_id}, icon=":material/help:")
            continue
        label = fmt.plain(record.task_name)
        if seen.runs_now(record):
            label += f" · {record.progress:.0%}"
            icon = ":material/play_circle:"
        else:  # ended since the worker's last beat; its next beat drops it
            label += f" · now {fmt.status_label(record)}"
            icon = ":material/check_circle:"
        st.page_link("pages/task.py", label=label, query_params={"id": task_id}, icon=icon)


def card(seen: Seen, now: Any) -> None:
    tz = st.context.timezone
    worker = seen.report
    last = parse_iso(worker.get("last_seen"))
    with st.container(border=True):
        title, badge = st.columns([4, 1], vertical_alignment="center")
        title.markdown("**" + fmt.plain(worker.get("worker_id") or "unnamed worker") + "**")
        with badge:
            st.badge(seen.state, color=COLORS[seen.state])
        if last is not None:
            age = max(0.0, (now - last).total_seconds())
            every = float(worker.get("beat_every") or 60)
            st.caption(f"Last beat {fmt.duration(age)} ago · {fmt.local_time(worker.get('last_seen'), tz)}")
            if not worker.get("stopped") and age > 2 * every:
                st.warning(
                    f"No beat for {fmt.duration(age)} (it beats every {fmt.duration(every)}): the worker may have "
                    "stopped without saying so. Its tasks go back to the queue when their lease runs out.",
                    icon=":material/heart_broken:",
                )
        facts = [
            f"host {worker['host']}" if worker.get("host") else "",
            f"pid {worker['pid']}" if worker.get("pid") else "",
            f"version {worker['version']}" if worker.get("version") else "",
            f"started {fmt.local_time(worker.get('started_at'), tz)}" if worker.get("started_at") else "",
        ]
        if any(facts):
            st.caption(fmt.plain(" · ".join(f for f in facts if f)))
        runs(seen)


@st.fragment(run_every=REFRESH_SECONDS)
def board() -> None:
    reports = services.live_workers(ctx.settings.store, include_stopped=True)
    if reports is None:
        st.error("Could not read the workers' reports from the task store.", icon=":material/error:")
        return
    if not reports:
        st.info(
            f"No worker has reported in the last {window}. Queued tasks wait until one starts "
            "(`python worker.py`, or the app's built-in worker).",
            icon=":material/hourglass_empty:",
        )
        return
    now = ctx.service.now()
    workers = [Seen(w, [(i, task_of(i)) for i in holds(w)]) for w in reports]
    states = [w.state for w in workers]
    parts = [f"{states.count('Busy')} busy", f"{states.count('Idle')} idle"]
    parts += [f"{states.count('Stopped')} stopped"] if "Stopped" in states else []
    st.write(f"**{len(workers)} worker{'s' if len(workers) != 1 else ''}** · " + ", ".join(parts))
    rank = {"Busy": 0, "Idle": 1, "Stopped": 2}
    for seen in sorted(workers, key=lambda w: (rank[w.state], str(w.report.get("worker_id")))):
        card(seen, now)


board()
