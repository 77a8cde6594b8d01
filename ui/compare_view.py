"""On a task's page: "Compare with another result" (a comparison run on a worker as a task of its own:
s3task.tasks.comparisons), and on a comparison's page its answer: the counts and each column in words, then
the first rows of daff's highlighter table (the download is the page's usual one)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from s3task.errors import S3TaskError
from s3task.record import TaskRecord

from . import explore_view
from . import format as fmt
from .context import Context

TASK = "pages/task.py"
#: Rows of the highlighter shown on the page (the whole table is the download).
PREVIEW_ROWS = 50


def _label(record: TaskRecord, page: TaskRecord) -> str:
    """The other result in the box: its name, id's end and time; first, for a run of the recipe ``page``'s
    task was made from, whether it is an earlier or a later one (said first: a phone cuts the end off)."""
    same = page.recipe_id is not None and record.recipe_id == page.recipe_id
    earlier = record.created_at < page.created_at
    run = ("an earlier run of its recipe · " if earlier else "a later run of its recipe · ") if same else ""
    return f"{run}{record.task_name} · {record.task_id[-6:]} · {record.created_at[:16].replace('T', ' ')}"


def _kept(key: str, make: Any) -> Any:
    """What ``make()`` gives, kept in the session under ``key`` (asked once per task page and choice)."""
    if key not in st.session_state:
        st.session_state[key] = make()
    return st.session_state[key]


def offer(ctx: Context, record: TaskRecord) -> None:
    """The form under a completed result the person may download: the other task, the keys, Compare."""
    service, actor, task_id = ctx.service, ctx.actor, record.task_id
    if record.status != "completed" or record.task_type == "compare" or not service.may_act(actor, record):
        return
    # Drawn only when opened (the candidates' columns are read then, not on every view of a result).
    box = st.expander(
        "Compare with another result", icon=":material/compare_arrows:", key=f"cmp_open_{task_id}", on_change="rerun"
    )
    if not box.open:
        return
    with box:
        st.caption(
            "What changed from another task's result to this one, paired by key columns: rows added, removed and "
            "changed, and each changed cell old → new. It runs on a worker as a task of its own."
        )
        try:
            found = _kept(f"cmp_candidates_{task_id}", lambda: service.compares.candidates(actor, task_id))
            columns = _kept(f"cmp_columns_{task_id}", lambda: service.output_columns(actor, task_id))
        except S3TaskError as e:
            st.error("The tasks to compare with cannot be read now: " + fmt.plain(e), icon=":material/error:")
            return
        if not found:
            st.info("You have no other completed task whose result shares a column with this one.")
            return
        labels = {r.task_id: _label(r, record) for r in found}
        other = st.selectbox(
            "The other result (the older one)", list(labels), format_func=labels.__getitem__, key=f"cmp_other_{task_id}"
        )
        suggested = _suggested(ctx, other, task_id)
        keys = st.multiselect(
            "Key columns (their values pair the rows)",
            columns,
            default=[k for k in suggested[:1] if k in columns],
            key=f"cmp_keys_{task_id}_{other}",
        )
        if suggested:
            st.caption("Filled and unique in both results: " + ", ".join(suggested))
        if st.button("Compare", icon=":material/compare_arrows:", key=f"cmp_go_{task_id}", disabled=not keys):
            try:
                made = service.compares.create(actor, other, task_id, keys)
            except S3TaskError as e:
                st.error("The comparison was not started: " + fmt.plain(e), icon=":material/error:")
            else:  # its page: its progress, then its answer
                st.switch_page(TASK, query_params={"id": made.task_id})


def _suggested(ctx: Context, other: str, task_id: str) -> list[str]:
    try:
        return list(
            _kept(
                f"cmp_suggest_{other}_{task_id}", lambda: ctx.service.compares.suggest_keys(ctx.actor, other, task_id)
            )
        )
    except S3TaskError:
        return []


def answer(ctx: Context, record: TaskRecord) -> None:
    """A completed comparison: what was compared, the counts, each column, and the first rows of the table."""
    service, actor = ctx.service, ctx.actor
    try:
        summary = service.compares.summary(actor, record.task_id)
        rows = service.compares.preview(actor, record.task_id, PREVIEW_ROWS)
    except S3TaskError as e:
        st.error("The comparison's answer cannot be read now: " + fmt.plain(e), icon=":material/error:")
        return
    with st.container(horizontal=True, key=f"compared_{record.task_id}"):
        for side, label in (("old_task", "The other result"), ("new_task", "Compared with")):
            other = str(record.payload.get(side, ""))
            try:
                name = f"“{fmt.plain(service.get(actor, other).task_name)}”"
            except S3TaskError:
                name = other
            st.page_link(TASK, label=f"{label}: {name}", query_params={"id": other}, icon=":material/description:")
    if summary is None:
        st.info("This comparison's summary is not in the store; the table below and the download have it all.")
    else:
        counts = summary.get("rows", {})
        st.subheader("What changed")
        cells = st.columns(4)
        for cell, name in zip(cells, ("added", "removed", "changed", "unchanged"), strict=True):
            cell.metric(f"Rows {name}", f"{int(counts.get(name, 0)):,}")
        st.markdown("\n".join(f"- {fmt.plain(line)}" for line in summary.get("lines", [])))
        changed = summary.get("columns_changed", {})
        if changed:
            table = {"column": list(changed), "rows changed": [int(n) for n in changed.values()]}
            st.dataframe(table, hide_index=True, key=f"cmp_columns_{record.task_id}")
    shown = [r for r in rows if r and r[0] not in ("!", "@@")]
    st.subheader("The changes")
    # Search, filter and sort over every row of the table, paged, as on any result (ui/explore_view.py).
    try:
        names = service.output_columns(actor, record.task_id)
    except S3TaskError:
        names = []
    if names and explore_view.explore(ctx, record, names):
        return  # its answer over every row is shown instead of the first rows
    st.caption(
        "daff's highlighter table: `+++` a row added, `---` a row removed, `->` a row changed (a changed cell reads "
        f"`old->new`). The first {fmt.counted(len(shown), 'row')} here; the download has every one."
    )
    if rows:
        header = next((r for r in rows if r and r[0] == "@@"), rows[0])
        names = _unique(header)
        body = [dict(zip(names, r + [""] * (len(names) - len(r)), strict=False)) for r in shown]
        st.dataframe(body, hide_index=True, column_order=names, key=f"cmp_rows_{record.task_id}")


def _unique(names: list[str]) -> list[str]:
    """Column names made unique for the table (the first column, ``@@``, is named "change")."""
    out: list[str] = []
    for i, name in enumerate(names):
        name = "change" if i == 0 else (name or f"column {i}")
        while name in out:
            name += " "
        out.append(name)
    return out
