"""A stand-in for Azure AD's App Service managed-identity endpoint, so azure-identity's real
``DefaultAzureCredential`` (its ``ManagedIdentityCredential``) signs a store in to Azurite with a token.

:func:`identity_env` is what a process needs to find it: ``IDENTITY_ENDPOINT`` and ``IDENTITY_HEADER``
(App Service's variables: azure-identity, through MSAL, GETs ``{IDENTITY_ENDPOINT}?api-version=2019-08-01
&resource=https://storage.azure.com`` with the header ``X-IDENTITY-HEADER``), and
``AZURE_TOKEN_CREDENTIALS=ManagedIdentityCredential`` so no other credential of the chain (a developer's
Azure CLI login, say) is tried. The tokens are JWTs with no signature: Azurite's ``--oauth basic`` checks
their issuer, audience and lifetime only (BlobTokenAuthenticator.js), and reads ``oid`` and ``tid`` for
a user delegation key. ``audience`` other than storage's makes tokens Azurite refuses.
"""

from __future__ import annotations

import base64
import http.server
import json
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs, urlsplit

STORAGE = "https://storage.azure.com"
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
#: How long a token lasts (Azure AD's usual hour), from when it is issued.
TOKEN_SECONDS = 3600


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def unsigned_jwt(audience: str, object_id: str) -> str:
    now = int(time.time())
    claims = {"aud": audience, "iss": f"https://sts.windows.net/{TENANT}/", "iat": now, "nbf": now - 60}
    claims |= {"exp": now + TOKEN_SECONDS, "oid": object_id, "tid": TENANT}
    return f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(claims)}."


class TokenService:
    """The endpoint's state: the secret header it wants, the tokens' audience, and the requests it answered."""

    def __init__(self, audience: str = STORAGE) -> None:
        self.audience = audience
        self.secret = secrets.token_hex(8)
        self.object_id = str(uuid.uuid4())
        self.issued: list[str] = []  # the resource of each token issued
        self.url = ""

    def answer(self, path: str, header: str | None) -> tuple[int, dict[str, object]]:
        query = parse_qs(urlsplit(path).query)
        if header != self.secret or query.get("api-version") != ["2019-08-01"] or "resource" not in query:
            return 400, {"statusCode": 400, "message": f"unexpected request {path}"}
        resource = query["resource"][0]
        self.issued.append(resource)
        expires = int(time.time()) + TOKEN_SECONDS
        token = unsigned_jwt(self.audience, self.object_id)
        return 200, {"access_token": token, "expires_on": str(expires), "resource": resource, "token_type": "Bearer"}

    def env(self) -> dict[str, str]:
        """What a process needs to sign in through this endpoint, and through nothing else."""
        return {
            "IDENTITY_ENDPOINT": self.url,
            "IDENTITY_HEADER": self.secret,
            "AZURE_TOKEN_CREDENTIALS": "ManagedIdentityCredential",
        }


@contextmanager
def token_service(audience: str = STORAGE) -> Iterator[TokenService]:
    """A :class:`TokenService` served on 127.0.0.1 (a free port) from a thread, for the block's duration."""
    service = TokenService(audience)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = service.answer(self.path, self.headers.get("X-IDENTITY-HEADER"))
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass  # a test's output shows its own logs

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    service.url = f"http://127.0.0.1:{server.server_address[1]}/msi/token"
    thread = threading.Thread(target=server.serve_forever, name="fake-identity", daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
