"""The sidebar: who you are, where tasks are kept, and whether a worker will pick them up."""

from __future__ import annotations

import streamlit as st

from s3task.record import parse_iso

from . import format as fmt
from . import services
from .context import Context


def render(ctx: Context) -> None:
    with st.sidebar:
        _who(ctx)
        _workers(ctx)
        st.caption("Tasks are kept in " + fmt.plain(ctx.service.store_description))


def _who(ctx: Context) -> None:
    identity = ctx.identity
    st.caption("Signed in as")
    st.text(identity.label)
    if identity.mode == "dev":
        st.info(
            "Development mode: one local user with full rights, reachable only from this computer.",
            icon=":material/construction:",
        )
    if identity.mode == "oidc":
        st.button("Sign out", on_click=st.logout, type="tertiary", icon=":material/logout:")


def _workers(ctx: Context) -> None:
    if ctx.worker.problem:  # the reason is in the banner above every page
        st.warning("The built-in worker is not running.", icon=":material/error:")
    workers = services.live_workers(ctx.settings.store)
    if ctx.worker.embedded:
        others = f"; {len(workers) - 1} more elsewhere" if workers and len(workers) > 1 else ""
        st.success(f"A worker runs inside this app{others}.", icon=":material/check_circle:")
        return
    if workers is None:
        st.caption("Worker status unknown (could not read it from the store).")
        return
    if not workers:
        st.warning(
            f"No worker has been seen in the last {fmt.duration(services.WORKER_WINDOW_SECONDS)}. New tasks "
            "will wait in the queue until one starts; ask whoever runs s3task to start a worker.",
            icon=":material/hourglass_empty:",
        )
        return
    now = ctx.service.now()
    beats = [t for w in workers if (t := parse_iso(w.get("last_seen"))) is not None]
    newest = max(beats, default=None)
    busy = sum(1 for w in workers if w.get("task_id"))
    count = f"{len(workers)} worker{'s' if len(workers) != 1 else ''} ready"
    detail = f"{busy} busy" if busy else "idle"
    # An idle worker reports every 5 minutes: "last seen" may be that old, and one that stopped without
    # saying so (killed) counts as ready until the window ends.
    seen = f", last seen {fmt.ago(newest, now)}" if newest else ""
    st.success(f"{count} ({detail}{seen})", icon=":material/check_circle:")
