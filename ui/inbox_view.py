"""The Inboxes page's parts: each of a person's recipes' inboxes (theirs, then the shared ones), the
command that drops a file there for the store in use, the files waiting, the last files taken with
their tasks, pause / resume, and (for the recipe's owner and operators) who may drop files there: the policy for the
store in use (s3task.tasks.inbox_policy; docs/STORES.md, "Who may drop files into an inbox")."""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from s3task import handlers
from s3task.errors import S3TaskError
from s3task.safetext import visible
from s3task.tasks.inboxes import Inbox, manages

from . import format as fmt
from .context import Context


def taken_rows(inbox: Inbox, now: datetime) -> list[dict[str, str]]:
    """The last files taken, newest first, as the page's table shows them."""
    return [
        {
            "file": visible(c.name),
            "taken": fmt.ago(c.at, now),
            "task": f"task?id={c.task_id}" if c.state == "taken" else "",
            "what became of it": visible(c.words),
        }
        for c in inbox.taken
    ]


def heading(inbox: Inbox, me: str) -> str:
    """ "CRM weekly · yours · Copy rows unchanged · paused" """
    owner = inbox.recipe.owner
    whose = "shared" if inbox.recipe.shared else "yours" if owner == me else f"{owner}'s"
    parts = [visible(inbox.recipe.name), whose, handlers.title_of(inbox.recipe.task_type)]
    return " · ".join(parts + (["paused"] if inbox.paused else []))


def show(ctx: Context, inbox: Inbox) -> None:
    """One recipe's inbox, in a box of its own."""
    with st.container(border=True):
        st.subheader(fmt.plain(heading(inbox, ctx.actor.name)))
        st.caption("Drop a file into this recipe's inbox with:")
        st.code(inbox.command, language="bash")
        _who_may_drop(ctx, inbox)
        if inbox.paused:
            st.warning("Paused: files dropped here wait until the inbox is resumed.", icon=":material/pause:")
        if inbox.waiting:
            names = ", ".join(visible(n) for n in inbox.waiting[:20])
            st.caption(f"Waiting to be taken ({len(inbox.waiting)}): {fmt.plain(names)}")
        if inbox.taken:
            st.dataframe(
                taken_rows(inbox, ctx.service.now()),
                hide_index=True,
                column_config={"task": st.column_config.LinkColumn("task", display_text="open the task")},
            )
        else:
            st.caption("No files taken yet.")
        _pause_button(ctx, inbox)


def _who_may_drop(ctx: Context, inbox: Inbox) -> None:
    """Folded: the policy that lets one system drop files here and nowhere else (its owner and operators)."""
    if not manages(ctx.actor, inbox.recipe):
        return
    policy = ctx.service.inboxes.drop_policy(inbox.recipe_id)
    with st.expander("Who may drop files here", icon=":material/key:"):
        st.caption(
            "A file dropped here becomes a task made as the recipe's owner: give write access here to the system "
            "that drops the files, and to nothing else."
        )
        for words in policy.words:
            st.caption(fmt.plain(words))
        for part in policy.parts:
            st.caption(fmt.plain(part.caption))
            st.code(part.text, language=part.language if part.language != "text" else None)


def _pause_button(ctx: Context, inbox: Inbox) -> None:
    if not manages(ctx.actor, inbox.recipe):
        return
    label = "Resume" if inbox.paused else "Pause"
    if st.button(label, key=f"inbox_{inbox.recipe_id}", icon=":material/play_arrow:" if inbox.paused else None):
        try:
            act = ctx.service.inboxes.resume if inbox.paused else ctx.service.inboxes.pause
            act(ctx.actor, inbox.recipe_id)
        except S3TaskError as e:
            st.error(fmt.plain(e), icon=":material/error:")
        else:
            st.rerun()
