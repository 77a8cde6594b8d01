"""Presigned URLs on AWS itself and on a custom endpoint, the bucket's region, the connection pool.

On AWS (no endpoint configured) a browser must get
``https://<bucket>.s3.<region>.amazonaws.com/…`` signed for the bucket's own
region: the global ``<bucket>.s3.amazonaws.com`` is answered with a 307 (which
a CORS preflight does not follow) for a while after a bucket is created outside
us-east-1, and does not work at all in opt-in regions. Signing needs no
network; the bucket's region is found with HeadBucket, here faked, answered by
moto in-process, or by moto's server. With an endpoint configured (MinIO,
moto), URLs point at it, path-style, as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.stub import Stubber
from conftest import boto_client

import s3task.store.s3
import s3task.tasks
import s3task.worker.loop
from s3task.store.s3 import MAX_POOL_CONNECTIONS, S3Store, find_bucket_region

BUCKET = "my-bucket"
KEY = "batch-tasks/01ABC/input.csv"
REGIONS = ("us-east-1", "eu-west-1", "ap-east-1")  # ap-east-1 (Hong Kong) is an opt-in region


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """boto3 configured as on a machine talking to AWS: fake credentials, no region, no endpoint, no files."""
    for name in (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
        "AWS_USE_FIPS_ENDPOINT",
        "AWS_USE_DUALSTACK_ENDPOINT",
        "AWS_S3_US_EAST_1_REGIONAL_ENDPOINT",
        "AWS_SESSION_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    return monkeypatch


def fake_regions(monkeypatch: pytest.MonkeyPatch, region: str | None) -> list[str]:
    """Make the store's region lookup answer ``region`` (None: no answer); returns the buckets asked about."""
    asked: list[str] = []

    def find(client: object, bucket: str) -> str | None:
        asked.append(bucket)
        return region

    monkeypatch.setattr(s3task.store.s3, "find_bucket_region", find)
    return asked


def no_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    def find(client: object, bucket: str) -> str | None:
        raise AssertionError("the bucket's region must not be looked up here")

    monkeypatch.setattr(s3task.store.s3, "find_bucket_region", find)


def all_urls(store: S3Store) -> dict[str, str]:
    return {
        "put": store.presign_put(KEY, expires=900, content_type="text/csv"),
        "get": store.presign_get(KEY, expires=900, filename="June import.csv"),
        "part": store.presign_part(KEY, "upload-1", 3, expires=900),
    }


def signing_region(url: str) -> str:
    # X-Amz-Credential = <key id>/<date>/<region>/s3/aws4_request
    return parse_qs(urlsplit(url).query)["X-Amz-Credential"][0].split("/")[2]


def assert_regional(urls: dict[str, str], region: str) -> None:
    for what, url in urls.items():
        parts = urlsplit(url)
        assert (parts.scheme, parts.netloc, parts.path) == (
            "https",
            f"{BUCKET}.s3.{region}.amazonaws.com",
            f"/{KEY}",
        ), what
        assert signing_region(url) == region, what
    query = {what: parse_qs(urlsplit(url).query) for what, url in urls.items()}
    if "put" in query:
        assert "content-type" in query["put"]["X-Amz-SignedHeaders"][0].split(";")
    if "get" in query:
        assert query["get"]["response-content-disposition"] == ['attachment; filename="June import.csv"']
    if "part" in query:
        assert (query["part"]["partNumber"], query["part"]["uploadId"]) == (["3"], ["upload-1"])


# --- AWS itself: no endpoint configured -------------------------------------------------------


@pytest.mark.parametrize("region", REGIONS)
def test_urls_on_aws_are_virtual_hosted_and_signed_in_the_buckets_region(aws, region: str) -> None:
    asked = fake_regions(aws, region)
    store = S3Store(BUCKET)
    assert asked == []  # nothing is asked before a URL is needed: workers never sign one
    assert_regional(all_urls(store), region)
    assert_regional(all_urls(store), region)
    assert asked == [BUCKET]  # once per store


@pytest.mark.parametrize("region", REGIONS)
def test_a_known_bucket_region_is_used_without_asking(aws, region: str) -> None:
    no_lookup(aws)
    assert_regional(all_urls(S3Store(BUCKET, bucket_region=region)), region)


@pytest.mark.parametrize("configured", ["us-east-1", "ap-east-1"])
def test_the_buckets_region_wins_over_the_configured_one(aws, configured: str) -> None:
    aws.setenv("AWS_REGION", configured)  # read as the AWS CLI reads it, though boto3 alone does not
    fake_regions(aws, "eu-west-1")
    store = S3Store(BUCKET)
    assert store.client.meta.region_name == configured  # API calls: as configured (botocore follows redirects)
    assert_regional(all_urls(store), "eu-west-1")


@pytest.mark.parametrize(
    ("variable", "configured", "expected"),
    [
        (None, None, "us-east-1"),
        ("AWS_DEFAULT_REGION", "eu-west-1", "eu-west-1"),
        ("AWS_REGION", "ap-east-1", "ap-east-1"),
    ],
)
def test_without_an_answer_urls_use_the_configured_region_and_ask_again(
    aws, variable: str | None, configured: str | None, expected: str
) -> None:
    if variable and configured:
        aws.setenv(variable, configured)
    asked = fake_regions(aws, None)
    store = S3Store(BUCKET)
    assert_regional({"put": store.presign_put(KEY, expires=900, content_type="text/csv")}, expected)
    store.presign_get(KEY, expires=900)
    assert asked == [BUCKET, BUCKET]


@pytest.mark.parametrize(("bucket", "region"), [("b-east", None), ("b-west", "eu-west-1"), ("b-hk", "ap-east-1")])
def test_the_store_finds_its_buckets_region_through_s3(aws, bucket: str, region: str | None) -> None:
    """End to end with moto in-process: HeadBucket on AWS's own endpoint, no network."""
    from moto import mock_aws

    with mock_aws():
        create = {"CreateBucketConfiguration": {"LocationConstraint": region}} if region else {}
        boto3.client("s3", region_name=region or "us-east-1").create_bucket(Bucket=bucket, **create)
        url = S3Store(bucket).presign_get(KEY, expires=60)
    expected = region or "us-east-1"
    assert urlsplit(url).netloc == f"{bucket}.s3.{expected}.amazonaws.com"
    assert signing_region(url) == expected


# --- a custom endpoint: as before ---------------------------------------------------------------


def endpoint_in_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, endpoint: str) -> None:
    config = tmp_path / "aws-config"
    config.write_text(f"[default]\nregion = eu-west-1\nendpoint_url = {endpoint}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))


def endpoint_in_services_section(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, endpoint: str) -> None:
    config = tmp_path / "aws-config"
    config.write_text(f"[default]\nservices = local-s3\n\n[services local-s3]\ns3 =\n  endpoint_url = {endpoint}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))


ENDPOINT_SETTINGS: dict[str, Callable[[pytest.MonkeyPatch, Path, str], None]] = {
    "AWS_ENDPOINT_URL_S3": lambda mp, _tmp, url: mp.setenv("AWS_ENDPOINT_URL_S3", url),
    "AWS_ENDPOINT_URL": lambda mp, _tmp, url: mp.setenv("AWS_ENDPOINT_URL", url),
    "config-file": endpoint_in_config,
    "services-section": endpoint_in_services_section,
}


@pytest.mark.parametrize("setting", ENDPOINT_SETTINGS)
@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:9000", "https://minio.example.net"])
def test_with_an_endpoint_urls_point_at_it_path_style(aws, tmp_path: Path, setting: str, endpoint: str) -> None:
    ENDPOINT_SETTINGS[setting](aws, tmp_path, endpoint)
    no_lookup(aws)
    store = S3Store(BUCKET)
    for what, url in all_urls(store).items():
        assert url.startswith(f"{endpoint}/{BUCKET}/{KEY}?"), what
        assert signing_region(url) == store.client.meta.region_name, what


def test_ignoring_configured_endpoints_means_aws(aws) -> None:
    aws.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000")
    aws.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    fake_regions(aws, "eu-west-1")
    assert_regional(all_urls(S3Store(BUCKET)), "eu-west-1")


def test_given_clients_sign_urls_as_they_are(aws, moto_server: str) -> None:
    """A store made with its clients (the tests, moto over HTTP) signs with them, however boto3 is configured."""
    no_lookup(aws)
    store = S3Store(BUCKET, client=boto_client(moto_server))
    assert store.presign_get(KEY, expires=60).startswith(f"{moto_server}/{BUCKET}/{KEY}?")


# --- finding a bucket's region --------------------------------------------------------------------


def test_find_bucket_region_on_a_real_http_endpoint(moto_server: str) -> None:
    """Buckets made with a LocationConstraint, over HTTP (moto's server), asked from a client in us-east-1."""
    found = {}
    for region in (None, "eu-west-1", "ap-east-1", "me-south-1"):
        bucket = f"r-{uuid.uuid4().hex[:12]}"
        create = {"CreateBucketConfiguration": {"LocationConstraint": region}} if region else {}
        boto3.client("s3", endpoint_url=moto_server, region_name=region or "us-east-1").create_bucket(
            Bucket=bucket, **create
        )
        found[region] = find_bucket_region(boto_client(moto_server), bucket)
    assert found == {None: "us-east-1", "eu-west-1": "eu-west-1", "ap-east-1": "ap-east-1", "me-south-1": "me-south-1"}
    assert find_bucket_region(boto_client(moto_server), f"missing-{uuid.uuid4().hex[:12]}") is None


def test_find_bucket_region_reads_the_header_of_a_403_and_falls_back_to_the_location(aws) -> None:
    client = boto3.session.Session().client("s3", region_name="us-east-1")
    stub = Stubber(client)
    # HeadBucket refused (the app's ListBucket is limited to its prefix): S3 still names the region.
    stub.add_client_error(
        "head_bucket",
        service_error_code="403",
        http_status_code=403,
        response_meta={"HTTPHeaders": {"x-amz-bucket-region": "me-south-1"}},
    )
    # No header: GetBucketLocation, whose "EU" and empty answers are old names.
    for location in ("EU", None, "ap-east-1"):
        stub.add_client_error("head_bucket", service_error_code="400", http_status_code=400)
        stub.add_response("get_bucket_location", {"LocationConstraint": location} if location else {})
    # Neither answers.
    stub.add_client_error("head_bucket", service_error_code="403", http_status_code=403)
    stub.add_client_error("get_bucket_location", service_error_code="AccessDenied", http_status_code=403)
    with stub:
        assert find_bucket_region(client, BUCKET) == "me-south-1"
        assert [find_bucket_region(client, BUCKET) for _ in range(3)] == ["eu-west-1", "us-east-1", "ap-east-1"]
        assert find_bucket_region(client, BUCKET) is None
    stub.assert_no_pending_responses()


# --- the connection pool ------------------------------------------------------------------------


def test_clients_keep_a_pool_for_the_apps_threads(aws) -> None:
    """One store serves every session and the API: at least two 16-reader page reads fit in the pool."""
    assert MAX_POOL_CONNECTIONS == 32
    assert 2 * max(s3task.tasks._READERS, s3task.worker.loop._READERS) <= MAX_POOL_CONNECTIONS
    on_aws = S3Store(BUCKET)
    aws.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000")
    on_endpoint = S3Store(BUCKET)
    for store in (on_aws, on_endpoint):
        assert store.client.meta.config.max_pool_connections == MAX_POOL_CONNECTIONS
        assert store.data_client.meta.config.max_pool_connections == MAX_POOL_CONNECTIONS
