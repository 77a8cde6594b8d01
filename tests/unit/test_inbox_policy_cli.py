"""``s3task inbox policy RECIPE`` as its owner types it: on S3 the IAM policy printed as JSON that parses (and
``--json`` the whole of it), on the local store the words; someone else's recipe refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import boto_client
from inboxkit import LAYOUT, recipe

from s3task import cli
from s3task.store.local import LocalStore
from s3task.store.s3 import S3Store
from s3task.tasks import TaskService


def test_inbox_policy_on_s3_prints_the_iam_policy_as_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("S3TASK_CLI_OPERATOR", "0")
    with mock_aws():
        boto_client().create_bucket(Bucket="drops")
        _, rid = recipe(TaskService(S3Store("drops", client=boto_client()), LAYOUT))
        assert cli.main(["--store", "s3://drops/batch-tasks", "--as", "ann", "inbox", "policy", "CRM weekly"]) == 0
        out = capsys.readouterr().out
        first, _, document = out.partition("# IAM policy for the dropping user or role:\n")
        assert first.startswith(
            f"# who may drop files into the inbox {rid} (batch-tasks/inbox/own/ann/crm-weekly/): s3"
        )
        policy = json.loads(document)
        assert policy["Statement"][0]["Resource"] == "arn:aws:s3:::drops/batch-tasks/inbox/own/ann/crm-weekly/*"

        assert cli.main(["--store", "s3://drops/batch-tasks", "--as", "ann", "inbox", "policy", rid, "--json"]) == 0
        whole = json.loads(capsys.readouterr().out)
        assert whole["store"] == "s3" and whole["prefix"] == LAYOUT.inbox_prefix(rid)
        assert json.loads(whole["parts"][0]["text"]) == policy

        assert cli.main(["--store", "s3://drops/batch-tasks", "--as", "bob", "inbox", "policy", rid]) == 1
        assert "only an operator or its owner" in capsys.readouterr().err


def test_inbox_policy_on_the_local_store_says_it_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    _, rid = recipe(TaskService(LocalStore(root), LAYOUT))
    assert cli.main(["--store", str(root), "--as", "ann", "inbox", "policy", "CRM weekly"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"# who may drop files into the inbox {rid} (batch-tasks/inbox/own/ann/crm-weekly/): local"
    assert f"{root.resolve()}/batch-tasks/inbox/own/ann/crm-weekly/" in lines[1]
    assert all(line.startswith("# ") for line in lines), "no document to paste: words only"
