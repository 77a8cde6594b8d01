"""The process harness itself (tests/procs.py): the environment a child gets, a wait that stops at
once when the child exits, and a stop that ends a child that ignores SIGTERM."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from procs import ROOT, TESTS, Exited, Proc, Procs, child_env

#: A child that ignores SIGTERM, says so, then waits to be killed.
STUBBORN = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready'); time.sleep(120)"


def test_a_child_runs_this_checkout_without_the_callers_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3TASK_STORE", "/somewhere/else")
    monkeypatch.setenv("STREAMLIT_SERVER_PORT", "8501")
    env = child_env(endpoint="http://127.0.0.1:1", S3TASK_USER="ann")
    assert "S3TASK_STORE" not in env and "STREAMLIT_SERVER_PORT" not in env
    assert env["S3TASK_USER"] == "ann"
    assert env["PYTHONPATH"].split(os.pathsep)[:2] == [str(TESTS), str(ROOT)]
    assert (env["AWS_ENDPOINT_URL_S3"], env["AWS_ACCESS_KEY_ID"]) == ("http://127.0.0.1:1", "testing")
    assert child_env(path=(ROOT,))["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)


def test_a_wait_on_a_child_that_exits_fails_at_once_with_its_output(tmp_path: Path) -> None:
    proc = Proc([sys.executable, "-c", "print('no store here')"], env=child_env(), log=tmp_path / "c.log", name="c")
    started = time.monotonic()
    with pytest.raises(Exited, match="no store here"):
        proc.wait_until(lambda: False, timeout=60, what="something it never does")
    assert time.monotonic() - started < 30  # the exit, not the deadline, ended the wait


def test_a_child_that_ignores_sigterm_is_killed_after_the_deadline(tmp_path: Path) -> None:
    with Procs(tmp_path) as procs:
        proc = procs.start([sys.executable, "-c", STUBBORN], name="stubborn")
        proc.wait_for_output("ready", timeout=60)
        assert proc.stop(timeout=0.5) == -signal.SIGKILL
        assert (tmp_path / "stubborn.log").read_text().strip() == "ready"
