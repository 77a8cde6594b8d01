"""What GCS checks of a V4 signed URL and fake-gcs-server does not: its signature, here, with the signer's
public key; and a stand-in for IAM's signBlob, the call that signs for credentials holding no key.

:func:`verify` rebuilds the request GCS would (Google's "V4 signing process": the canonical request of
the method, the path, the query without the signature, the signed headers with the values a client will
send; its SHA-256 in the string to sign) and checks the RSA signature of it. A URL changed in any signed
part, or sent with another value of a signed header, fails, as it would on GCS.

:class:`SignBlob` serves ``POST /v1/projects/-/serviceAccounts/<email>:signBlob`` on 127.0.0.1 as IAM's
credentials API does for a caller with the right bearer token, signing with a key of its own; for
:data:`DENIED` it answers 403 PERMISSION_DENIED as IAM does without ``iam.serviceAccounts.signBlob``.
:func:`routed_to` points the client library's one call to IAM at it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

TOKEN = "test-token-for-signblob"
DENIED = "denied@s3task-emulator.iam.gserviceaccount.com"


def public_key_of(key_file: str) -> Any:
    """The public key of a service-account key file."""
    with open(key_file) as f:
        info = json.load(f)
    return serialization.load_pem_private_key(info["private_key"].encode(), password=None).public_key()


def verify(url: str, public_key: Any, method: str, headers: dict[str, str] | None = None) -> bool:
    """Whether ``url``'s V4 signature holds for ``method`` with ``headers`` sent (host added)."""
    parts = urlsplit(url)
    query, _, signature = parts.query.rpartition("&X-Goog-Signature=")
    params = dict(parse_qsl(query))
    sent = {k.lower(): v.strip() for k, v in (headers or {}).items()} | {"host": parts.netloc}
    signed = params.get("X-Goog-SignedHeaders", "").split(";")
    if any(name not in sent for name in signed):
        return False
    canonical_headers = "".join(f"{name}:{sent[name]}\n" for name in signed)
    canonical = "\n".join([method, parts.path, query, canonical_headers, ";".join(signed), "UNSIGNED-PAYLOAD"])
    scope = params.get("X-Goog-Credential", "").split("/", 1)[-1]
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    to_sign = "\n".join([params.get("X-Goog-Algorithm", ""), params.get("X-Goog-Date", ""), scope, digest])
    try:
        public_key.verify(binascii.unhexlify(signature), to_sign.encode(), padding.PKCS1v15(), hashes.SHA256())
    except (InvalidSignature, ValueError, binascii.Error):
        return False
    return True


class SignBlob:
    """IAM's signBlob on 127.0.0.1 (``url``), signing with ``public_key``'s private half; ``calls`` counts them."""

    def __init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.public_key = self._key.public_key()
        self.calls: list[str] = []
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                email = self.path.split("/serviceAccounts/", 1)[-1].split(":signBlob", 1)[0]
                stand_in.calls.append(email)
                if self.headers.get("Authorization") != f"Bearer {TOKEN}" or email == DENIED:
                    message = (
                        f"Permission 'iam.serviceAccounts.signBlob' denied on resource (or it may not exist). {email}"
                    )
                    error = {"error": {"code": 403, "message": message, "status": "PERMISSION_DENIED"}}
                    return self._answer(403, error)
                payload = base64.b64decode(body["payload"])
                signed = stand_in._key.sign(payload, padding.PKCS1v15(), hashes.SHA256())
                return self._answer(200, {"keyId": "stand-in", "signedBlob": base64.b64encode(signed).decode()})

            def _answer(self, status: int, doc: dict[str, Any]) -> None:
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextlib.contextmanager
def routed_to(stand_in: SignBlob) -> Iterator[None]:
    """The client library's signBlob request (to ``https://iamcredentials.<universe>``) sent to ``stand_in``
    instead: only its host changes; the request, its token and the answer's handling are the library's."""
    from google.auth.transport import requests as transport
    from google.cloud.storage import _signing

    class Rerouted(transport.Request):
        def __call__(self, url: str, *args: Any, **kwargs: Any) -> Any:
            path = urlsplit(url)
            assert path.netloc.startswith("iamcredentials."), url
            return super().__call__(f"{stand_in.url}{path.path}?{path.query}", *args, **kwargs)

    real = _signing.requests
    shim = type("shim", (), {"Request": Rerouted})
    _signing.requests = shim
    try:
        yield
    finally:
        _signing.requests = real
