"""Misuses of a SAS URL (an Azure blob's, s3task/store/azure_uploads.py), as tests make them."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


def tampered(url: str) -> str:
    """``url`` with the last character of its signature (``sig``) changed."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    sig = query["sig"]
    query["sig"] = sig[:-2] + ("A" if sig[-2] != "A" else "B") + sig[-1]
    return urlunsplit(parts._replace(query=urlencode(query)))


def aimed_at(url: str, key: str) -> str:
    """``url`` (a SAS URL of one blob) with its path aimed at ``key`` instead, its query kept."""
    parts = urlsplit(url)
    container_path = parts.path.split("/", 3)[:3]  # '', account, container
    return urlunsplit(parts._replace(path="/".join([*container_path, key])))
