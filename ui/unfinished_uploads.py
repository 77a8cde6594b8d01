"""The uploads this person started and did not finish, offered where they start a new one: a page
reloaded or closed mid-upload leaves its task waiting for the file, and the New task page lists it —
the file, its size, when — with *Continue* (the task's page, which sends only what the store lacks:
ui/resume_upload.py) and *Discard* (cancels the task, and what was sent of the file goes with it).
Looked up once per form (a listing of the person's tasks and a read of each of the last week's) and kept
for the form's other runs."""

from __future__ import annotations

import streamlit as st

from s3task.errors import S3TaskError
from s3task.fingerprint import Fingerprint

from . import format as fmt
from .context import Context

#: At most this many are offered (the newest).
SHOWN = 5


def offer(ctx: Context, key: str) -> None:
    """The unfinished uploads of ``ctx.actor``, kept under ``key`` in the session for this form."""
    state = st.session_state
    if f"{key}_error" in state:
        st.error("Could not discard it: " + fmt.plain(state.pop(f"{key}_error")), icon=":material/error:")
    if key not in state:
        try:
            state[key] = ctx.service.unfinished_uploads(ctx.actor)[:SHOWN]
        except S3TaskError:
            state[key] = []  # a help, not the page: a store that cannot list them now offers none
    for record in state[key]:  # as looked up for this form: no store call on the page's other runs
        file = Fingerprint.from_dict(record.input_fingerprint)
        if file is None:
            continue
        task_id = record.task_id
        with st.container(border=True):
            st.markdown(
                f":material/upload: The upload of **{fmt.plain(file.name)}** ({fmt.size(file.size)}) for "
                f"“{fmt.plain(record.task_name)}” did not finish."
            )
            row = st.container(horizontal=True)
            row.page_link("pages/task.py", label="Continue it", icon=":material/play_arrow:",
                          query_params={"id": task_id}, width="content")  # fmt: skip
            row.button("Discard", key=f"discard_{task_id}", icon=":material/delete:", width="content",
                       on_click=_discard, args=(ctx, task_id, key))  # fmt: skip


def _discard(ctx: Context, task_id: str, key: str) -> None:
    try:
        ctx.service.cancel(ctx.actor, task_id)
    except S3TaskError as e:
        st.session_state[f"{key}_error"] = str(e)
    st.session_state[key] = [r for r in st.session_state.get(key, []) if r.task_id != task_id]
