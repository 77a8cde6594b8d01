"""Presigned URLs from the S3 backend: the signing client's configuration and the bucket's region.

Presigned URLs go to a browser, which cannot follow S3's region redirects (a
CORS preflight does not follow a 307). With a custom endpoint (MinIO, moto)
they are signed by the record client, path-style, as botocore does for any
custom endpoint. On AWS itself (no endpoint configured) they are signed by a
third client in the bucket's own region with virtual-hosted addressing:
``https://<bucket>.s3.<region>.amazonaws.com/<key>``, the only form that works
from the moment a bucket exists in every region, opt-in ones included —
botocore's default, ``<bucket>.s3.amazonaws.com``, is answered with a 307
outside us-east-1 for a while after the bucket is created and does not work
at all in opt-in regions (ap-east-1, me-south-1…). The bucket's region is
asked once, at the first URL (:func:`find_bucket_region`).
"""

from __future__ import annotations

from typing import Any, cast

from botocore.config import Config
from botocore.configprovider import ConfiguredEndpointProvider
from botocore.exceptions import BotoCoreError, ClientError

#: The client that signs URLs on AWS itself (see this module's docstring); it sends no requests.
#: "virtual" gives ``<bucket>.s3.<region>.amazonaws.com`` (botocore's default, "auto", gives the
#: global ``<bucket>.s3.amazonaws.com`` for presigned URLs whatever the region); "regional" makes
#: us-east-1 no exception (``<bucket>.s3.us-east-1.amazonaws.com``). A bucket name with dots gets
#: the regional path-style URL instead (``s3.<region>.amazonaws.com/<bucket>/…``), whose TLS
#: certificate matches.
_URL_CONFIG = Config(
    signature_version="s3v4",
    s3={"addressing_style": "virtual", "us_east_1_regional_endpoint": "regional"},
)


def configured_endpoint(session: Any) -> str | None:
    """The S3 endpoint URL configured outside the code, or None: then boto3 talks to AWS itself.

    ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, or ``endpoint_url`` in the profile or its
    ``services`` section, unless ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` is set — looked up by
    the same botocore provider that ``Session.create_client`` uses, so the answer is the one the
    clients were built with.
    """
    core = session._session  # the botocore session behind boto3's
    if core.get_config_variable("ignore_configured_endpoint_urls"):
        return None
    provider = ConfiguredEndpointProvider(
        full_config=core.full_config, scoped_config=core.get_scoped_config(), client_name="s3"
    )
    return cast("str | None", provider.provide())


def find_bucket_region(client: Any, bucket: str) -> str | None:
    """The region ``bucket`` is in, as S3 reports it; None if it does not say (no such bucket, no answer).

    HeadBucket's ``x-amz-bucket-region`` header comes on a 200, on the 301 of a request sent to the
    wrong region, and on a 403 — credentials without a plain ``s3:ListBucket`` on the bucket, like
    the app's and the worker's roles (theirs is limited to the prefix), still learn the region.
    GetBucketLocation (``s3:GetBucketLocation``) is the fallback.
    """
    try:
        headers = client.head_bucket(Bucket=bucket)["ResponseMetadata"].get("HTTPHeaders", {})
    except ClientError as e:
        headers = e.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    except BotoCoreError:
        return None
    if region := headers.get("x-amz-bucket-region"):
        return str(region)
    try:
        location = client.get_bucket_location(Bucket=bucket).get("LocationConstraint")
    except (ClientError, BotoCoreError):
        return None
    # us-east-1 has no location constraint; "EU" is what eu-west-1 buckets of long ago report.
    found = {None: "us-east-1", "": "us-east-1", "EU": "eu-west-1"}.get(location, location)
    return None if found is None else str(found)
