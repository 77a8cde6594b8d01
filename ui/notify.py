"""Tell the person in the browser when one of their tasks ends: the tab's title and a desktop notification.

A small custom component (``st.components.v2``, like ui/direct.py; its JavaScript is
``ui/notify.js``): pages that show tasks pass them to :func:`watch` on every render. The browser
remembers each task's state while the app is open in that tab; when a task of the signed-in
person goes from live to ended (completed, failed for good, cancelled), the tab's title becomes
"✓ March customer list — completed" and, if the person pressed **Notify me when my tasks finish**
and the browser allowed it (``Notification.requestPermission``), a desktop notification says
"March customer list — completed, 1,000 rows read, 1,000 rows written, 205 rows with errors";
clicking it opens the task.

Nothing is loaded from the network. Email and webhooks are s3task.notify (docs/NOTIFICATIONS.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import streamlit as st

from s3task.notify import events
from s3task.record import TaskRecord

from .context import Context

_HTML = """
<div class="s3n" hidden>
  <button type="button">Notify me when my tasks finish</button>
</div>
"""

_CSS = """
.s3n button {
  font: inherit; font-size: .875rem; cursor: pointer; padding: .25rem .75rem;
  color: var(--st-text-color); background: transparent;
  border: 1px solid var(--st-border-color, #ccc); border-radius: var(--st-base-radius, .5rem);
}
.s3n button:hover { border-color: var(--st-primary-color); color: var(--st-primary-color); }
"""

_JS = (Path(__file__).parent / "notify.js").read_text(encoding="utf-8")

_component = st.components.v2.component("s3task_notify", html=_HTML, css=_CSS, js=_JS)


def for_browser(record: TaskRecord) -> dict[str, Any]:
    """What the page tells the browser about one task: the emails' words, whose counts are the task
    page's (s3task.counts, through the event's ``row_counts``)."""
    event = events.build(record, record)
    name = " ".join(record.task_name.split())
    return {
        "id": record.task_id,
        "state": record.state.value,
        "ended": record.is_terminal,
        "title": f"{name} — {events.outcome(event).split(',')[0]}",
        "text": events.summary(event),
        "url": f"task?id={record.task_id}",
    }


def watch(
    ctx: Context, records: Iterable[TaskRecord], *, key: str = "s3task_notify", page_task: TaskRecord | None = None
) -> None:
    """Call on every render of a page showing tasks (also inside its live fragment).

    ``page_task``: the task a task's page is about. When the browser saw it live and now sees it
    ended, it scrolls the page back to its top, where the title and the result's downloads are
    (the page grows as it ends, and the person may have been reading the timeline at its bottom).
    """
    mine = [for_browser(r) for r in records if r.created_by == ctx.actor.name]
    page = None if page_task is None else {"id": page_task.task_id, "ended": page_task.is_terminal}
    _component(key=key, data={"tasks": mine, "page": page})
