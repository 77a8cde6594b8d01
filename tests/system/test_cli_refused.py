"""A ``s3task submit`` whose file the header check refuses leaves no task behind, on either store kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from procs import child_env, cli

from s3task.store import open_store


@pytest.mark.parametrize("kind", ["local", "moto_http"])
def test_a_refused_submit_leaves_no_task(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if kind == "local":
        url, env = str(tmp_path / "store"), child_env(S3TASK_USER="ada")
    else:
        endpoint, bucket = request.getfixturevalue("moto_http_bucket")
        url, env = f"s3://{bucket}/batch-tasks", child_env(endpoint=endpoint, S3TASK_USER="ada")
    path = tmp_path / "bad.csv"
    path.write_bytes(b"a,a\n1,2\n")
    done = cli("--store", url, "submit", str(path), "--name", "refused", cwd=tmp_path, env=env)
    assert done.returncode != 0 and "repeats column names" in done.stderr, done.stderr
    good = tmp_path / "good.csv"
    good.write_bytes(b"a,b\n1,2\n")
    kept = cli("--store", url, "submit", str(good), "--name", "kept", cwd=tmp_path, env=env)
    assert kept.returncode == 0, kept.stderr
    task_id = kept.stdout.strip().splitlines()[-1]
    env_store = {"AWS_ENDPOINT_URL_S3": env["AWS_ENDPOINT_URL_S3"]} if kind != "local" else {}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env_store.items():
            mp.setenv(k, v)
        store, layout = open_store(url)
        keys = store.list_keys(layout.prefix + "/")
    assert keys and all(task_id in k or k.endswith("/active-bell") for k in keys), keys
