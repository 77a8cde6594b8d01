"""The GCS backend's errors as s3task's (s3task/store/gcs_errors.py): the answers GCS gives that
fake-gcs-server cannot (a refusal naming a permission, 429, 503), each with its cause kept."""

from __future__ import annotations

import pytest
import requests
from google.api_core import exceptions as api
from google.auth import exceptions as auth

from s3task.errors import (
    AccessDeniedByStore,
    AlreadyExists,
    BucketMissing,
    NotFound,
    PreconditionFailed,
    StoreError,
    StoreUnavailable,
)
from s3task.store.base import PutMode
from s3task.store.gcs_errors import translated
from s3task.store.gcs_requests import generation, precondition

DENIED = (
    "worker@p.iam.gserviceaccount.com does not have storage.objects.create access to the Google Cloud Storage "
    "object. Permission 'storage.objects.create' denied on resource (or it may not exist)."
)


@pytest.mark.parametrize(
    ("error", "op", "expected"),
    [
        (api.PreconditionFailed("Precondition failed"), "create", AlreadyExists),
        (api.PreconditionFailed("Precondition failed"), "update", PreconditionFailed),
        (api.NotFound("No such object: b/k"), "update", PreconditionFailed),
        (api.NotFound("No such object: b/k"), "get", NotFound),
        (api.NotFound("The specified bucket does not exist."), "get", BucketMissing),
        (api.NotFound("Not Found"), "create", BucketMissing),
        (api.NotFound("Not Found"), "list", BucketMissing),
        (api.Forbidden(DENIED), "create", AccessDeniedByStore),
        (api.Unauthorized("Invalid Credentials"), "get", AccessDeniedByStore),
        (api.TooManyRequests("rate of change"), "update", StoreUnavailable),
        (api.ServiceUnavailable("backend"), "get", StoreUnavailable),
        (api.BadRequest("Invalid argument"), "get", StoreError),
        (requests.ConnectionError("refused"), "get", StoreUnavailable),
        (requests.Timeout("read timed out"), "get", StoreUnavailable),
        (auth.TransportError("metadata server"), "get", StoreUnavailable),
        (auth.RefreshError("invalid_grant"), "get", AccessDeniedByStore),
        (api.RetryError("deadline", cause=api.ServiceUnavailable("x")), "get", StoreUnavailable),
    ],
)
def test_errors_are_translated_with_their_cause(error: Exception, op: str, expected: type) -> None:
    with pytest.raises(expected) as info, translated("k", op):
        raise error
    assert type(info.value) is expected
    assert info.value.__cause__ is error


def test_a_refusal_names_the_permission_and_the_role_that_grants_it() -> None:
    with pytest.raises(AccessDeniedByStore) as info, translated("batch-tasks/x/status.json", "create"):
        raise api.Forbidden(DENIED)
    assert "missing permission storage.objects.create: grant the role roles/storage.objectUser" in str(info.value)
    with pytest.raises(AccessDeniedByStore) as info, translated("batch-tasks/", "list"):
        raise api.Forbidden("Access denied.")  # no permission named: the one a listing needs
    assert "storage.objects.list" in str(info.value) and "roles/storage.objectUser" in str(info.value)


def test_etags_are_generations_and_nothing_else_matches() -> None:
    assert generation("1712345678901234") == 1712345678901234
    for etag in ('"0123456789abcdef0123456789abcdef"', "0", "", "-1", " ", "12a", None):
        assert generation(etag) is None
    assert precondition("k", PutMode.CREATE) == 0
    assert precondition("k", PutMode.OVERWRITE) is None
    assert precondition("k", PutMode.update("42")) == 42
    with pytest.raises(PreconditionFailed):  # an ETag of another store's kind: no generation to ask for
        precondition("k", PutMode.update('"d41d8cd98f00b204e9800998ecf8427e"'))
