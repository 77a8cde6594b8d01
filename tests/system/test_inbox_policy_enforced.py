"""The S3 policy ``s3task inbox policy`` prints, enforced: moto's HTTP server on 127.0.0.1 with its IAM checks on
(signatures checked, each request's action and resource against the user's policies). A user holding only that
policy drops a large file into its recipe's inbox in parts (boto3's ``upload_file``, the s3transfer the AWS CLI's
``aws s3 cp`` uses; and the command the Inboxes page shows, pasted, when the AWS CLI is installed), and the sweep
takes it; a sibling recipe's inbox, the inbox folder itself, a task's files, reading and listing are refused."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError
from conftest import boto_client
from inboxkit import ANN, CSV, LAYOUT, recipe, tasks_named
from moto.core.authorization import disable_iam_authentication, enable_iam_authentication

from s3task.store.s3 import _DATA_CONFIG, _RECORD_CONFIG, S3Store
from s3task.tasks import TaskService

TASK_ID = "01J9Z3X4Y5ABCDEFGHJKMNPQRS"
#: Past boto3's (and the AWS CLI's) 8 MB threshold: sent in parts.
BIG = CSV + b"".join(b"%d,name %d,n%d@example.com\n" % (i, i, i) for i in range(3, 330_000))


@contextmanager
def dropper(endpoint: str, policy: str) -> Iterator[dict[str, str]]:
    """An IAM user holding only ``policy`` (made while IAM is not checked); its keys, with IAM checked meanwhile."""
    with disable_iam_authentication():
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1")
        iam.create_user(UserName="exporter")
        iam.put_user_policy(UserName="exporter", PolicyName="one-inbox", PolicyDocument=policy)
        key = iam.create_access_key(UserName="exporter")["AccessKey"]
    with enable_iam_authentication():
        yield {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}


@pytest.fixture
def inbox(moto_http_bucket: tuple[str, str]) -> tuple[str, str, TaskService, str]:
    endpoint, bucket = moto_http_bucket
    with disable_iam_authentication():
        store = S3Store(
            bucket, client=boto_client(endpoint, _RECORD_CONFIG), data_client=boto_client(endpoint, _DATA_CONFIG)
        )
        service = TaskService(store, LAYOUT)
        _, rid = recipe(service)
    return endpoint, bucket, service, rid


def refused(call) -> str:
    with pytest.raises(ClientError) as e:
        call()
    return e.value.response["Error"]["Code"]


def test_a_user_with_only_the_inbox_policy_drops_there_and_nowhere_else(inbox, tmp_path: Path) -> None:
    endpoint, bucket, service, rid = inbox
    policy = service.inboxes.policy(ANN, rid)
    big = tmp_path / "2026-05 export.csv"
    big.write_bytes(BIG)
    prefix = LAYOUT.inbox_prefix(rid)
    with dropper(endpoint, policy.parts[0].text) as keys:
        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
        )
        s3.upload_file(str(big), bucket, prefix + big.name, Config=TransferConfig(multipart_threshold=8 * 1024 * 1024))
        for key in (
            LAYOUT.inbox_prefix(rid + "-2") + "a.csv",  # a sibling recipe whose id starts with this one's
            LAYOUT.inbox_prefix("own/bob/crm-weekly") + "a.csv",
            LAYOUT.inbox_root + "loose.csv",
            LAYOUT.task_prefix(TASK_ID) + "input.csv",
            LAYOUT.inbox_paused_key(rid),
        ):
            assert refused(lambda k=key: s3.put_object(Bucket=bucket, Key=k, Body=CSV)) == "AccessDenied", key
            assert refused(lambda k=key: s3.create_multipart_upload(Bucket=bucket, Key=k)) == "AccessDenied", key
        assert refused(lambda: s3.get_object(Bucket=bucket, Key=prefix + big.name)) == "AccessDenied"
        assert refused(lambda: s3.list_objects_v2(Bucket=bucket, Prefix=prefix)) == "AccessDenied"
        assert refused(lambda: s3.delete_object(Bucket=bucket, Key=prefix + big.name)) == "AccessDenied"
    with disable_iam_authentication():
        head = service.store.head(prefix + big.name)
        assert head.size == len(BIG) and "-" in head.etag.strip('"'), "uploaded in parts"
        taken = service.inboxes.sweeper("w1", interval=60).sweep().taken
        assert [(c.name, c.state) for c in taken] == [(big.name, "taken")]
        [task] = tasks_named(service, big.name)
        assert task.created_by == "ann"


@pytest.mark.skipif(shutil.which("aws") is None, reason="the AWS CLI is not installed (pip install awscli)")
def test_the_drop_command_shown_pasted_with_the_policys_keys(inbox, tmp_path: Path) -> None:
    endpoint, _, service, rid = inbox
    with disable_iam_authentication():
        [shown] = service.inboxes.list(ANN)
    big = tmp_path / "june export.csv"
    big.write_bytes(BIG)
    config = tmp_path / "aws-config"
    config.write_text("[default]\nregion = us-east-1\n")
    with dropper(endpoint, service.inboxes.policy(ANN, rid).parts[0].text) as keys:
        env = {**os.environ, **keys, "AWS_CONFIG_FILE": str(config), "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
        env.pop("AWS_PROFILE", None)
        pasted = shown.command.replace("FILE", shlex.quote(str(big)))
        done = subprocess.run(["bash", "-c", pasted], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        elsewhere = pasted.replace(LAYOUT.inbox_prefix(rid), LAYOUT.inbox_prefix(rid + "-2"))
        done = subprocess.run(["bash", "-c", elsewhere], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode != 0 and "AccessDenied" in done.stderr
    with disable_iam_authentication():
        assert service.store.head(LAYOUT.inbox_prefix(rid) + big.name).size == len(BIG)
        assert service.store.list_keys(LAYOUT.inbox_prefix(rid + "-2")) == []
