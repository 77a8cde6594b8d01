"""Compatibility: the signed ``/transfer`` routes and their URL signer now live in :mod:`s3task.web.transfer`."""

from __future__ import annotations

from .web.errors import HttpError, error_response, json_mount
from .web.transfer import (
    KEY_FILE,
    Grant,
    TransferDenied,
    UrlSigner,
    local_secret,
    signer_for,
    transfer_mount,
)

__all__ = [
    "KEY_FILE",
    "Grant",
    "HttpError",
    "TransferDenied",
    "UrlSigner",
    "error_response",
    "json_mount",
    "local_secret",
    "signer_for",
    "transfer_mount",
]
