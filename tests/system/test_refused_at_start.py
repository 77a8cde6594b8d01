"""Misuses of issue 26, item 5, as an operator meets them: the processes stop at start with one line."""

from __future__ import annotations

from pathlib import Path

from procs import PYTHON, child_env, run

PASSWORD = "hunter2-secret"


def test_the_cli_stops_at_start_on_a_password_over_plain_smtp(tmp_path: Path) -> None:
    env = child_env(S3TASK_SMTP_URL=f"smtp://tasks:{PASSWORD}@mail.example.com", S3TASK_USER="ada")
    done = run([PYTHON, "-m", "s3task", "--store", str(tmp_path / "store"), "list"], env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "S3TASK_SMTP_URL" in done.stderr and "unencrypted" in done.stderr
    assert PASSWORD not in done.stderr and not (tmp_path / "store").exists()


def test_the_api_server_on_a_port_out_of_range_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = run(
        [PYTHON, "-m", "s3task.web", "serve", "--port", "99999"], env=child_env(S3TASK_STORE=str(tmp_path / "s"))
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
