"""``s3task url TASK [--parquet | …]`` (s3task/cli_url.py), as a process, against moto's S3 over HTTP: the link
printed reads without credentials where links are read — pandas, Polars and DuckDB read the Parquet copy's
typed columns from it (docs/NOTEBOOKS.md's example, as written), an HTTP GET the CSV — and a local store, a
task without output or one not there is said in one line with exit 1."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow.parquet as pq
import requests
from procs import MOTO_AWS, ROOT, child_env, cli
from support import csv_bytes, doc_example
from worked import worked

from s3task.layout import Layout
from s3task.store import open_store
from s3task.store.local import LocalStore
from s3task.tasks import Actor, TaskService

ANN = Actor("ann")
ROWS = [["customer", "amount", "joined", "code"], ["C1", "12", "2024-01-31", "007"], ["C2", "-3", "2023-12-01", "+44"]]


def run(store: str, *args: str, env: dict[str, str], cwd: Path):
    return cli("--store", store, *args, cwd=cwd, env=child_env(path=(ROOT,), S3TASK_USER="ann", **env), timeout=60)


def test_the_link_reads_without_credentials_in_pandas_and_over_http(
    moto_http_bucket, tmp_path: Path, monkeypatch
) -> None:
    endpoint, bucket = moto_http_bucket
    env = {**MOTO_AWS, "AWS_ENDPOINT_URL_S3": endpoint}
    where = f"s3://{bucket}/batch-tasks"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    store, layout = open_store(where)
    task_id = worked(TaskService(store, layout), ANN, csv_bytes(ROWS), name="Customers", task_type="copy").task_id

    parquet = run(where, "url", task_id, "--parquet", env=env, cwd=tmp_path)
    assert parquet.returncode == 0, parquet.stderr
    url = parquet.stdout.strip()
    assert url.startswith(f"{endpoint}/{bucket}/batch-tasks/{task_id}/") and "X-Amz-Signature=" in url
    names: dict[str, object] = {"url": url}  # no credentials: the link carries its own
    exec(compile(doc_example("NOTEBOOKS.md", 2), "docs/NOTEBOOKS.md", "exec"), names)  # pandas, Polars, DuckDB
    frame, lazy, top = names["frame"], names["lazy"], names["top"]
    assert frame["amount"].tolist() == [12, -3] and frame["code"].tolist() == ["007", "+44"]
    assert lazy["amount"].to_list() == [12, -3] and lazy["code"].to_list() == ["007", "+44"]
    assert top["customer"].tolist() == ["C1", "C2"] and top["amount"].tolist() == [12, -3]  # typed: 12 > -3
    table = pq.read_table(io.BytesIO(requests.get(url, timeout=30).content))
    assert str(table.schema.field("joined").type) == "date32[day]"

    csv = run(where, "url", task_id, env=env, cwd=tmp_path)
    assert csv.returncode == 0, csv.stderr
    got = requests.get(csv.stdout.strip(), timeout=30)
    assert got.ok and got.content.decode("utf-8-sig").splitlines()[1] == '"C1","12","2024-01-31","007"'

    missing = run(where, "url", "0" * 26, env=env, cwd=tmp_path)
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip() == f"error: task {'0' * 26} does not exist"


def test_a_local_store_and_a_task_without_output_are_said_in_one_line(tmp_path: Path) -> None:
    root = tmp_path / "store"
    service = TaskService(LocalStore(root), Layout())
    done = worked(service, ANN, csv_bytes(ROWS), name="Customers", task_type="copy").task_id
    waiting = service.create(ANN, "Not sent", "copy").record.task_id
    local = run(str(root), "url", done, "--parquet", env={}, cwd=tmp_path)
    assert local.returncode == 1 and local.stdout == ""
    assert "gives no links of its own: a local store's files are the app's to serve" in local.stderr
    assert f"s3task download {done}" in local.stderr and len(local.stderr.strip().splitlines()) == 1
    assert not list(root.rglob("*.parquet"))  # refused before any copy was made for nothing
    early = run(str(root), "url", waiting, env={}, cwd=tmp_path)
    assert early.returncode == 1 and "there is no output yet" in early.stderr
