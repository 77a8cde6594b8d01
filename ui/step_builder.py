"""The step builder of "Prepare the table" (the task type ``steps``) on the New task page.

The list is kept in the session under the form's key for the type's ``steps`` parameter
(:meth:`ui.task_form.FormKeys.param`), so reruns keep it, a new form starts empty, and a form filled in
from a task or a recipe starts from that list. Each step is shown in order in a box of its own: its
number and title, its fields as widgets (a field that names columns offers the columns the table has at
that point of the list: after the steps above it), and buttons that turn it off or on, move it and
remove it. A menu under the list adds a step of the kind chosen.

After every change the list is read and previewed through the door (``service.steps``) on the file's
first rows: the table as the task will write it, each step's effect in words, and each step's problem
in its own box. A step that cannot be read is set aside (off, in the preview) so the others still run
and every problem shows at once. What the list still needs goes into the form's "To submit, add …".
Fields shown as text ("old = new" lines and the like) are ``ui/step_text.py``; a lookup's reference (a task's
id, or a file uploaded in the step to become one) is ``ui/step_reference.py``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import streamlit as st

from s3task.errors import S3TaskError
from s3task.steps import Kind, StepError, all_kinds
from s3task.steps.engine import ERROR_COLUMN, check_columns
from s3task.steps.spec import Field

from . import format as fmt
from . import step_text as words
from . import task_form as tf
from .step_fields import column_box, conditions, field_widget
from .step_reference import reference_field

if TYPE_CHECKING:
    from s3task.steps.preview import Preview

    from .context import Context
    from .inspection import Inspection

#: What stands in for a step that cannot be read, so the steps after it keep their numbers.
_SET_ASIDE = {"step": "trim", "off": True}
_NUMBER = re.compile(r"^Step (\d+)\b")
#: The steps the line over Submit names a fix for; past these it counts the rest (each box says its own).
NAMED_FIXES = 3


@dataclass
class Built:
    """The list as the task's parameter takes it, and what it still needs before Submit (words after "add")."""

    steps: list[dict[str, Any]]
    wanting: list[str] = field(default_factory=list)


@dataclass
class _Checked:
    """The list read and previewed: problems by step number (0: the file, -1: the list), the preview."""

    problems: dict[int, str] = field(default_factory=dict)
    preview: Preview | None = None


def builder(ctx: Context, key: str, start: Any, inspection: Inspection | None, file_key: str) -> Built:
    """The builder, for the list kept under ``key`` (``start``: the list a task or recipe filled in)."""
    state = _state(key, start)
    table_names = list(inspection.columns) if inspection is not None and inspection.ok else []
    names: list[str] | None = table_names or None
    kinds = all_kinds()
    st.caption(
        "The steps run in order, from the top, on every row of the file. Add them one at a time; the table "
        "under the list shows the file's first rows after them."
    )
    if state.get("unknown"):
        st.warning(
            "Left out of the list it was filled in with, as this app has no such step: "
            + fmt.plain(", ".join(state["unknown"])),
            icon=":material/warning:",
        )
    flow: dict[int, tuple[list[str], list[str]]] = {}  # each step's columns before and after it
    slots, unfilled = {}, {}
    for n, item in enumerate(state["items"], 1):
        kind = kinds[item["json"]["step"]]
        slots[n], unfilled[n] = _step_box(ctx, key, state, item, n, kind, names)
        after = _after(ctx, item["json"], names)
        if names is not None and after is not None:
            flow[n] = (names, after)
        names = after
    _menu(key, state, kinds)
    steps = [words.payload(kinds[item["json"]["step"]], item["json"]) for item in state["items"]]
    waiting = {n for n, item in enumerate(state["items"], 1) if item.get("ref_pending")}  # its reference comes
    # What follows a step still waiting may use what it adds: checked once it is ready, not flagged meanwhile.
    held = set(range(min(waiting), len(state["items"]) + 1)) if waiting else set()
    set_aside = {n for n, missing in unfilled.items() if missing} | held
    checked = _checked(ctx, key, steps, set_aside, inspection, file_key)
    _say(state, kinds, slots, unfilled, checked, flow)
    if state["items"]:
        _preview(checked, inspection)
    return Built(steps, _wanting(state, kinds, unfilled, checked, waiting))


# --- the list in the session -----------------------------------------------------------------------------


def _state(key: str, start: Any) -> dict[str, Any]:
    """The list kept under ``key``: ``{"next": n, "items": [{"uid", "json", "conds"}]}`` (made from ``start``)."""
    kept = st.session_state.get(key)
    if isinstance(kept, dict) and "items" in kept:
        return kept
    state: dict[str, Any] = {"next": 0, "items": [], "unknown": []}
    kinds = all_kinds()
    for step in _start_list(start):
        if isinstance(step, dict) and step.get("step") in kinds:
            _append(state, words.filled(kinds[step["step"]], step))
        else:  # a kind of step this app does not know (any more): said once, above the list
            state["unknown"].append(str(step.get("step") if isinstance(step, dict) else step)[:80])
    st.session_state[key] = state
    return state


def _start_list(start: Any) -> list[Any]:
    if isinstance(start, str):
        try:
            start = json.loads(start)
        except ValueError:
            return []
    if isinstance(start, dict):
        start = start.get("steps")
    return list(start) if isinstance(start, list) else []


def _new_id(state: dict[str, Any]) -> int:
    state["next"] += 1
    return int(state["next"])


def _append(state: dict[str, Any], step: dict[str, Any]) -> None:
    conds = [_new_id(state) for _ in step.get("conditions") or []]
    state["items"].append({"uid": _new_id(state), "json": step, "conds": conds})


def _add(state: dict[str, Any], menu_key: str) -> None:
    kind = all_kinds()[st.session_state[menu_key]]
    _append(state, words.blank(kind))


def _toggle(item: dict[str, Any]) -> None:
    if item["json"].pop("off", False) is not True:
        item["json"]["off"] = True


def _move(state: dict[str, Any], uid: int, by: int) -> None:
    items = state["items"]
    at = next(i for i, item in enumerate(items) if item["uid"] == uid)
    to = at + by
    if 0 <= to < len(items):
        items[at], items[to] = items[to], items[at]


def _remove(state: dict[str, Any], uid: int) -> None:
    state["items"] = [item for item in state["items"] if item["uid"] != uid]


# --- one step's box --------------------------------------------------------------------------------------


def _step_box(
    ctx: Context, key: str, state: dict[str, Any], item: dict[str, Any], n: int, kind: Kind, names: list[str] | None
) -> tuple[Any, list[str]]:
    """Step ``n``'s box: its fields (their values kept into ``item``), a place for its effect, its buttons.
    Returns that place and what the step still needs filled in."""
    step, uid, off = item["json"], item["uid"], bool(item["json"].get("off"))
    box = f"{key}-step-{uid}"
    with st.container(border=True, key=box):
        st.markdown(f"**{n}. {fmt.plain(kind.title)}**" + (" · *off: not run*" if off else ""))
        st.caption(fmt.plain(kind.help))
        problems: list[str] = []
        main, more = _split_fields(kind)
        for f in main:
            problems += _field(ctx, state, item, kind, f, box, names)
        if more:
            with st.expander("More settings", expanded=any(step.get(f.name, f.empty) != f.empty for f in more)):
                for f in more:
                    problems += _field(ctx, state, item, kind, f, box, names)
        slot = st.container()
        _buttons(state, item, n, box, off)
    # A reference file being prepared is what the step waits for: its box says so, not "Fill in".
    waiting = ("reference",) if item.get("ref_pending") else ()
    return slot, problems + words.unfilled(kind, step, waiting=waiting)


def _split_fields(kind: Kind) -> tuple[tuple[Field, ...], tuple[Field, ...]]:
    """A kind with many fields (Check values) shows its first five; the rest under "More settings"."""
    if len(kind.fields) <= 6:
        return kind.fields, ()
    return kind.fields[:5], kind.fields[5:]


def _field(ctx: Context, state: dict[str, Any], item: dict[str, Any], kind: Kind, f: Field, box: str,
           names: list[str] | None) -> list[str]:  # fmt: skip
    """One field's widget; its value is kept into the step. Returns what is wrong with what was typed."""
    step, wkey = item["json"], f"{box}-{f.name}"
    if f.kind == "conditions":
        step[f.name] = conditions(item, f, wkey, names, lambda: _new_id(state))
        return []
    if f.kind == "column" and (kind.name, f.name) not in words.TYPED_COLUMNS:
        step[f.name] = column_box(f, step.get(f.name) or "", wkey, names)
        return []
    if (kind.name, f.name) == ("lookup", "reference"):  # a task's id, or a file uploaded to become one
        step[f.name] = reference_field(ctx, item, f, wkey)
        return []
    value, bad = field_widget(kind, f, step.get(f.name), wkey, names)
    step[f.name] = value
    return bad


def _buttons(state: dict[str, Any], item: dict[str, Any], n: int, box: str, off: bool) -> None:
    """Turn off or on, move up, move down, remove: each a button the keyboard reaches (Tab, then Enter)."""
    uid, last = item["uid"], len(state["items"])
    with st.container(horizontal=True, gap="small"):
        st.button("Turn on" if off else "Turn off", key=f"{box}-off", on_click=_toggle, args=(item,),
                  icon=":material/toggle_on:" if off else ":material/toggle_off:",
                  help=f"Step {n} stays in the list; {'it runs again' if off else 'it is not run'}.")  # fmt: skip
        st.button("Move up", key=f"{box}-up", on_click=_move, args=(state, uid, -1), disabled=n == 1,
                  icon=":material/arrow_upward:")  # fmt: skip
        st.button("Move down", key=f"{box}-down", on_click=_move, args=(state, uid, 1), disabled=n == last,
                  icon=":material/arrow_downward:")  # fmt: skip
        st.button("Remove", key=f"{box}-remove", on_click=_remove, args=(state, uid), icon=":material/delete:",
                  help=f"Take step {n} out of the list.")  # fmt: skip


def _after(ctx: Context, step: dict[str, Any], names: list[str] | None) -> list[str] | None:
    """The columns after ``step`` on a table of ``names`` (a step off, or one that cannot apply, changes none)."""
    if names is None or step.get("off"):
        return names
    try:
        one = ctx.service.steps.read([words.payload(all_kinds()[step["step"]], step)])
    except S3TaskError:
        return names
    after, problems = check_columns(one, names)
    return names if 1 in problems or 0 in problems else after


def _menu(key: str, state: dict[str, Any], kinds: dict[str, Kind]) -> None:
    """The short menu: the kinds by their titles, and Add step."""
    menu_key = f"{key}-menu"
    st.selectbox(
        "Next step",
        list(kinds),
        format_func=lambda name: kinds[name].title,
        key=menu_key,
        on_change="ignore",  # choosing is no change to the list: Add step sends the choice with its click
        help="What the next step does: Add step puts it at the end of the list, with a line on what it does.",
    )
    st.button("Add step", key=f"{key}-add", on_click=_add, args=(state, menu_key), icon=":material/add:",
              type="primary" if not state["items"] else "secondary")  # fmt: skip


# --- the list read and previewed -------------------------------------------------------------------------


def _number_of(error: StepError) -> int:
    if error.step is not None:
        return error.step
    found = _NUMBER.match(error.message or "")
    return int(found.group(1)) if found else -1


def _read(ctx: Context, steps: list[dict[str, Any]], set_aside: set[int]) -> tuple[Any, dict[int, str]]:
    """The list read through the door, with each step that cannot be read set aside: (the list, problems)."""
    trial = [_SET_ASIDE if n in set_aside else s for n, s in enumerate(steps, 1)]
    problems: dict[int, str] = {}
    for _ in range(len(trial) + 1):
        try:
            return ctx.service.steps.read(trial), problems
        except StepError as e:
            n = _number_of(e)
            if not 1 <= n <= len(trial) or trial[n - 1] is _SET_ASIDE:
                problems[-1] = e.message or str(e)
                return None, problems
            problems[n], trial[n - 1] = e.message or str(e), _SET_ASIDE
    return None, problems  # pragma: no cover - each pass sets one more step aside


def _checked(ctx: Context, key: str, steps: list[dict[str, Any]], set_aside: set[int],
             inspection: Inspection | None, file_key: str) -> _Checked:  # fmt: skip
    """The list's problems and preview, made again only when the list or the file changes."""
    usable = inspection is not None and inspection.ok and bool(inspection.columns)
    read_as = inspection.input_format if inspection is not None else None
    signature = (json.dumps(steps, sort_keys=True, default=str), tuple(sorted(set_aside)), file_key,
                 repr(read_as), tuple(inspection.columns) if usable and inspection else ())  # fmt: skip

    def make() -> _Checked:
        read, problems = _read(ctx, steps, set_aside)
        checked = _Checked(problems)
        if read is None or not usable or inspection is None:
            return checked
        try:
            checked.preview = ctx.service.steps.preview(ctx.actor, read, _table(inspection))
        except S3TaskError as e:
            checked.problems[-1] = str(e)
            return checked
        checked.problems = {**checked.preview.problems, **problems}
        return checked

    return tf.remembered(st.session_state, f"{key}-checked", signature, make)


def _table(inspection: Inspection) -> Any:
    """The preview's first rows as an Arrow table of text, as the worker reads them."""
    import pyarrow as pa

    sample = tf.preview_sample(inspection)
    return pa.table({name: pa.array(sample.get(name, []), pa.large_string()) for name in inspection.columns})


# --- what the page says ------------------------------------------------------------------------------------


def _say(state: dict[str, Any], kinds: dict[str, Kind], slots: dict[int, Any], unfilled: dict[int, list[str]],
         checked: _Checked, flow: dict[int, tuple[list[str], list[str]]]) -> None:  # fmt: skip
    """Each step's problem, or its effect on the preview's rows, in its own box."""
    preview = checked.preview
    errors = [str(e) for e in preview.table.column(ERROR_COLUMN).to_pylist()] if preview is not None else []
    for n, item in enumerate(state["items"], 1):
        step = item["json"]
        with slots[n]:
            if unfilled[n]:
                st.warning(fmt.plain(" ".join(unfilled[n])), icon=":material/edit:")
            elif n in checked.problems:
                st.error(fmt.plain(words.without_label(checked.problems[n])), icon=":material/error:")
            elif step.get("off"):
                st.caption("Off: this step is kept in the list but not run.")
            elif preview is not None and n in preview.counts and n in flow:
                before, after = flow[n]
                said = words.effect(preview.counts[n], before, after, preview.rows,
                                    whole_file=n in preview.whole_file, marked=words.marked(step, errors),
                                    renaming=step["step"] == "rename_columns")  # fmt: skip
                st.info(fmt.plain(said), icon=":material/visibility:")


def _preview(checked: _Checked, inspection: Inspection | None) -> None:
    """The problems of the list as a whole, then the table as the task will write it."""
    for n in (0, -1):
        if n in checked.problems:
            st.error(fmt.plain(checked.problems[n]), icon=":material/error:")
    listed = [checked.problems[n] for n in sorted(checked.problems) if n > 0]
    if listed:
        st.error(
            "These steps cannot run as they are:\n\n" + "\n".join(f"- {fmt.plain(p)}" for p in listed),
            icon=":material/error:",
        )
    preview = checked.preview
    if preview is not None and not preview.counts and not listed:
        return  # no step runs: the table is the file's preview, above
    st.markdown("**The table after these steps**")
    if preview is None:
        why = "Choose a file" if inspection is None or not inspection.columns else "Fix the steps"
        st.caption(f"{why} to see its first rows as the task will write them.")
        return
    first = f"first {preview.rows:,} rows" if preview.rows != 1 else "first row"
    st.caption(
        f"The file's {first} as the task will write them: the “{ERROR_COLUMN}” column says what is wrong with "
        "a row (such rows stay in the file)."
    )
    st.dataframe(preview.table, hide_index=True, width="stretch")


def _wanting(state: dict[str, Any], kinds: dict[str, Kind], unfilled: dict[int, list[str]],
             checked: _Checked, waiting: set[int]) -> list[str]:  # fmt: skip
    """What the list needs before Submit, as words after "To submit, add"."""
    if not state["items"]:
        return ["at least one step"]
    out = []
    if 0 in checked.problems:
        out.append("a file the steps can run on")
    broken = [n for n in range(1, len(state["items"]) + 1) if unfilled[n] or n in checked.problems]
    out += [f"step {n}'s reference table (being prepared)" for n in sorted(waiting) if n not in broken]
    for n in broken[:NAMED_FIXES]:
        out.append(f"a fix for step {n} ({kinds[state['items'][n - 1]['json']['step']].title})")
    if len(broken) > NAMED_FIXES:  # the boxes say each one; the line stays a line
        more = len(broken) - NAMED_FIXES
        out.append(f"a fix for {more} more step{'s' if more != 1 else ''}")
    if -1 in checked.problems:
        out.append("a fix for the end of the list")
    return out
