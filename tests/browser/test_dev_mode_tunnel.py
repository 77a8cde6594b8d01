"""Development mode behind a forwarder, for real: ``streamlit run app.py`` on 127.0.0.1 with no sign-in
configured, opened by Chromium through a same-host reverse proxy (Debian's nginx, started here with a
configuration of its own on 127.0.0.1) that adds one forwarding header, or under a host name that is
not this computer, as a tunnel delivers it (issue 26, item 1; issue 37).

The refusal happens on Streamlit's websocket, whose handshake carries the headers, so the proxy must
forward the websocket as a real one does (``Upgrade`` and ``Connection``). Nothing here relies on the
browser adding headers of its own: Chromium no longer sends Playwright's ``extra_http_headers`` on a
websocket handshake. ``--host-resolver-rules`` lets Chromium open the app as ``tunnel.example``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from browsers import base_env, open_app, shot
from conftest import CHROMIUM, CHROMIUM_ARGS, free_port
from procs import Proc, Procs

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found"),
]

REFUSED = "s3task is not configured correctly"

#: The header each proxy adds, as nginx sets it in front of an app (every one the app looks at:
#: ui/forwarding.py FORWARDING_HEADERS); the value is what the proxy knows of the visitor.
FORWARDERS = {
    "X-Forwarded-For": "$proxy_add_x_forwarded_for",
    "X-Forwarded-Host": "$host",
    "X-Forwarded-Proto": "$scheme",
    "Forwarded": '"for=$remote_addr"',
    "X-Real-IP": "$remote_addr",
}


def nginx_binary() -> str:
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("nginx not found (test.sh installs Debian's nginx; CI must run this test)", pytrace=False)
    pytest.skip("nginx not found: apt-get install nginx")


def nginx_conf(tmp: Path, upstream: int, ports: dict[str, int]) -> str:
    """One server per forwarding header, each proxying HTTP and the websocket to ``upstream`` and
    passing the browser's own ``Host`` (a loopback name), so the one header is the only sign."""
    servers = []
    for header, port in ports.items():
        servers.append(f"""
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $http_host;
            proxy_set_header {header} {FORWARDERS[header]};
            proxy_read_timeout 300s;
        }}
    }}""")
    temp = " ".join(f"{kind}_temp_path {tmp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    # One process (master_process off), so a SIGKILL leaves no worker holding the ports; as root it stays root.
    user = "user root;" if os.geteuid() == 0 else ""
    return f"""{user}
daemon off;
master_process off;
worker_processes 1;
pid {tmp / "nginx.pid"};
error_log {tmp / "error.log"} warn;
events {{ worker_connections 256; }}
http {{
    access_log {tmp / "access.log"};
    {temp}
    map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
    {"".join(servers)}
}}
"""


@pytest.fixture(scope="module")
def dev_app(tmp_path_factory) -> Iterator[tuple[Proc, dict[str, str]]]:
    """The app, and the address of a proxy in front of it for each forwarding header."""
    tmp = tmp_path_factory.mktemp("devapp")
    nginx = nginx_binary()
    with Procs(tmp, base_env(S3TASK_STORE=str(tmp / "store"), S3TASK_EMBEDDED_WORKER="0")) as procs:
        app = procs.streamlit("app.py", name="app")
        ports = {header: free_port() for header in FORWARDERS}
        conf = tmp / "nginx.conf"
        conf.write_text(nginx_conf(tmp, int(app.url.rsplit(":", 1)[1]), ports))
        proxy = procs.start([nginx, "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(conf)], name="nginx")
        urls = {header: f"http://127.0.0.1:{port}" for header, port in ports.items()}
        for url in urls.values():
            proxy.serving(url + "/_stcore/health")
        yield app, urls


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP tunnel.example 127.0.0.1"]
        )
        yield browser
        browser.close()


def visit(chromium, url: str) -> tuple[str, str]:
    context = chromium.new_context()
    try:
        page = context.new_page()
        open_app(page, url)
        page.wait_for_selector("h1", timeout=20_000)
        title = page.locator("h1").first.inner_text()
        body = page.locator("[data-testid='stApp']").inner_text()
        if title == REFUSED:
            shot(page, "dev-mode-forwarded")
        return title, body
    finally:
        context.close()


@pytest.mark.parametrize("header", list(FORWARDERS))
def test_a_request_through_a_proxy_is_refused_in_plain_words(dev_app, chromium, header) -> None:
    _, proxies = dev_app
    title, body = visit(chromium, proxies[header])
    assert title == REFUSED
    assert f"it carries a {header} header" in body and "[auth]" in body and "trustedUserHeaders" in body
    assert "local (operator)" not in body and "Workers" not in body


def test_a_tunnel_s_host_name_is_refused_and_logged_once(dev_app, chromium) -> None:
    app, _ = dev_app
    port = app.url.rsplit(":", 1)[1]
    for _ in range(2):
        title, body = visit(chromium, f"http://tunnel.example:{port}")
        assert title == REFUSED and "tunnel.example" in body
    assert app.output().count("refusing to serve (logged once") == 1


def test_the_developer_at_this_computer_is_let_in(dev_app, chromium) -> None:
    app, _ = dev_app
    title, body = visit(chromium, app.url)
    assert title != REFUSED and "local (operator)" in body
