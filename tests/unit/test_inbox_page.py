"""The Inboxes page through ``streamlit.testing.v1.AppTest`` (the fixtures of ``tests/app_pages.py``: a fresh
local store, users told apart by a trusted header, ``boss`` an operator): each recipe's inbox with the exact
command that drops a file there, the files waiting and taken with their tasks, and pause / resume."""

from __future__ import annotations

import json
from pathlib import Path

import app_pages
from app_pages import goto, submitted, texts
from inboxkit import drop

from s3task.tasks import Actor, TaskService

app, options, service, store_dir = app_pages.app, app_pages.options, app_pages.service, app_pages.store_dir


def test_no_recipes_no_inboxes(app) -> None:
    at = goto(app("ann"), "pages/inboxes.py")
    assert "No recipes yet, so no inboxes." in texts(at)


def test_a_recipes_inbox_with_its_command_its_waiting_and_taken_files(
    app, service: TaskService, store_dir: Path
) -> None:
    ann = Actor("ann")
    made = service.recipes.save(ann, "CRM weekly", submitted(service, "ann", "march"))
    rid = service.inboxes.id_of(made)
    drop(service.store, rid, "april.csv", b"name,age\ncy,3\n")
    sweeper = service.inboxes.sweeper("w1", interval=300)
    sweeper.sweep()
    sweeper.sweep()  # the local store takes a file once it stayed the same for a sweep
    drop(service.store, rid, "may.csv", b"name,age\ndi,4\n")
    at = goto(app("ann"), "pages/inboxes.py")
    said = texts(at)
    assert "CRM weekly · yours · Copy rows unchanged" in said
    where = f"{store_dir.resolve()}/batch-tasks/inbox/own/ann/crm-weekly/"
    assert at.code[0].value == f"mkdir -p {where} && cp FILE {where}"
    assert "Waiting to be taken (1): may.csv" in said
    table = at.dataframe[0].value
    assert table["file"].tolist() == ["april.csv"]
    [task] = [t for t in service.list(ann).tasks if t.task_name == "april.csv"]
    assert table["task"].tolist() == [f"task?id={task.task_id}"]
    assert "queued" in table["what became of it"][0]

    at.button(key=f"inbox_{rid}").click().run()
    assert "Paused: files dropped here wait" in texts(at) and service.inboxes.get(ann, rid).paused
    at.button(key=f"inbox_{rid}").click().run()
    assert not service.inboxes.get(ann, rid).paused
    other = goto(app("bob"), "pages/inboxes.py")
    assert "No recipes yet" in texts(other), "another person's recipe is not theirs to see here"


def test_who_may_drop_files_here_is_folded_under_the_command_for_the_owner_and_operators(
    app, service: TaskService, store_dir: Path
) -> None:
    ann = Actor("ann")
    mine = service.inboxes.id_of(service.recipes.save(ann, "CRM weekly", submitted(service, "ann", "march")))
    boss = Actor("boss", operator=True)
    shared = service.recipes.save(boss, "Suppliers", submitted(service, "boss", "prices"), shared=True)
    at = goto(app("ann"), "pages/inboxes.py")
    [section] = at.expander  # ann's own recipe only: the shared one's is for operators
    assert section.label == "Who may drop files here"
    said = texts(section)
    assert "becomes a task made as the recipe's owner" in said
    assert f"{store_dir.resolve()}/batch-tasks/inbox/own/ann/crm-weekly/" in said, "the local store's words"
    assert not section.code, "on the local store there is no document to paste"
    assert [e.label for e in goto(app("boss"), "pages/inboxes.py").expander] == ["Who may drop files here"]
    assert not goto(app("bob"), "pages/inboxes.py").expander, "bob owns no recipe here and is no operator"
    assert service.inboxes.id_of(shared) == "shared/suppliers" and mine == "own/ann/crm-weekly"


def test_on_s3_the_section_shows_the_iam_policy_to_paste(app, service: TaskService, monkeypatch) -> None:
    from s3task.tasks import inbox_policy, inboxes

    # The page's store is a local directory; the policy is made as for an S3 store, so the page shows its document.
    def s3(_description, layout, rid):
        return inbox_policy.drop_policy("s3://drops (https://s3.amazonaws.com)", layout, rid)

    monkeypatch.setattr(inboxes, "drop_policy", s3)
    service.recipes.save(Actor("ann"), "CRM weekly", submitted(service, "ann", "march"))
    [section] = goto(app("ann"), "pages/inboxes.py").expander
    [policy] = section.code
    assert policy.language == "json"
    statement = json.loads(policy.value)["Statement"][0]
    assert statement["Resource"] == "arn:aws:s3:::drops/batch-tasks/inbox/own/ann/crm-weekly/*"
