"""``./run.sh``, the README's command for the app: its arguments go on to ``streamlit run``, so
``./run.sh --server.port 8502`` serves the app on port 8502, as the README says (issue 36 item 20)."""

from __future__ import annotations

from pathlib import Path

import requests
from conftest import free_port
from procs import Procs

ROOT = Path(__file__).resolve().parents[2]


def test_run_sh_serves_the_app_on_the_port_it_is_given(procs: Procs, tmp_path: Path) -> None:
    port = free_port()
    env = {
        "S3TASK_STORE": str(tmp_path / "store"),  # not the checkout's ./s3task-data
        # What a person at a terminal does not need: no browser opened, no first-run e-mail prompt.
        "STREAMLIT_SERVER_HEADLESS": "true",
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none",
    }
    url = f"http://127.0.0.1:{port}"
    app = procs.serve(
        ["bash", str(ROOT / "run.sh"), "--server.port", str(port)],
        url=url,
        health="/_stcore/health",
        name="run.sh",
        env=env,
    )
    assert requests.get(url + "/_stcore/health", timeout=10).text == "ok"
    assert requests.get(url, timeout=10).ok  # the app's page itself, on that port
    assert app.poll() is None
