"""``streamlit run app.py`` believing a sign-in header while listening on every interface says so in
its log at start, before anyone opens a page (issue 26, item 6; the operators' banner and the
repeated header: tests/unit/test_trusted_header_guard.py)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import free_port
from procs import PYTHON, Procs, child_env


def test_trusted_headers_on_every_interface_are_warned_about_at_start(tmp_path: Path, procs: Procs) -> None:
    port = free_port()
    args = [PYTHON, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address", "0.0.0.0"]
    args += ["--server.headless", "true", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    args += ["--server.trustedUserHeaders", json.dumps({"X-Remote-User": "user"})]
    env = child_env(S3TASK_STORE=str(tmp_path / "store"), S3TASK_EMBEDDED_WORKER="0")
    app = procs.serve(args, url=f"http://127.0.0.1:{port}", health="/_stcore/health", name="app", env=env)
    app.wait_for_output("listens on 0.0.0.0", timeout=30)
    line = next(line for line in app.output().splitlines() if "listens on 0.0.0.0" in line)
    assert "X-Remote-User" in line and "127.0.0.1 or a private address" in line
