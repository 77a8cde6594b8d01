"""``s3task doctor`` refuses the S3-compatible stores known to be unsafe for task state.

- s3rver 3.7.1 (npm), started here: it ignores every conditional header, so a second create of
  one key succeeds;
- OpenStack Swift's S3 layer answers a PUT with ``If-Match`` with 501. Swift cannot be installed
  here: tests/swift_stand_in.py, a stand-in that answers as Swift does, is what this runs against.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
import realstores
from procs import child_env, cli
from swift_stand_in import swift_stand_in


def _doctor(endpoint: str, bucket: str, key: str, secret: str) -> tuple[int, str]:
    env = child_env(AWS_ENDPOINT_URL_S3=endpoint, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
    env["AWS_DEFAULT_REGION"] = "us-east-1"
    done = cli("--store", f"s3://{bucket}/batch-tasks", "doctor", env=env)
    return done.returncode, done.stdout + done.stderr


def test_doctor_refuses_s3rver_which_ignores_conditions(tmp_path: Path) -> None:
    if reason := realstores.missing("s3rver"):
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI must run this test)", pytrace=False)
        pytest.skip(reason)
    server = realstores.start_s3rver(tmp_path / "s3rver")
    try:
        bucket = server.new_bucket()
        code, out = _doctor(server.endpoint, bucket, server.access_key, server.secret_key)
    finally:
        server.stop()
    assert code == 1, out
    assert "does not enforce conditional writes: a second create of the same key succeeded" in out
    assert "ok: conditional writes are enforced" not in out


def test_doctor_refuses_swifts_s3_layer_stand_in() -> None:
    with swift_stand_in() as endpoint:
        code, out = _doctor(endpoint, f"t-{uuid.uuid4().hex[:8]}", "swift", "swift")
    assert code == 1, out
    assert "does not support conditional writes (NotImplemented" in out
    assert "ok: conditional writes are enforced" not in out
