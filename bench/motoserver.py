"""Moto's S3 server on 127.0.0.1 in its own process, counting every request by kind.

``python bench/motoserver.py PORT [--latency-ms N]`` serves moto's app (as
``ThreadedMotoServer`` does) behind a small WSGI layer that

- counts each S3 request by kind (LIST, GET, HEAD, PUT, PART = UploadPart,
  MPU_CREATE / MPU_COMPLETE / MPU_ABORT, DELETE) and by what it touched (a
  task id found in the key, or ``active/``, ``workers/``, ``_probe/``,
  ``by-user/``, the prefix root);
- runs one request at a time through moto, like ``tests/conftest.py`` does
  (moto's conditional checks are not atomic); an optional ``--latency-ms``
  sleep *outside* that lock stands in for S3's per-request latency, so
  parallel requests overlap their waiting the way they do against S3, and
  ``upload_mb_s`` adds the time an upload's body takes at that bandwidth
  (S3 takes roughly 50-150 MB/s on one connection);
- answers ``GET /_bench/counts``, ``POST /_bench/reset``, ``POST /_bench/latency?ms=N[&upload_mb_s=M]`` and
  ``POST /_bench/populate?bucket=B`` (a JSON list of ``[key, text]`` put
  straight into moto's backend: setting up 10,000 tasks in seconds instead
  of 40,000 HTTP round trips; never used for anything that is measured).

A separate process, so the server's Python does not share a GIL with the
worker or the benchmark that it serves.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import re
import sys
import threading
import time
from collections import Counter
from urllib.parse import parse_qs, unquote

TASK_ID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")


def classify(method: str, query: dict[str, list[str]], path: str) -> tuple[str, str] | None:
    """(kind, subject) of one request, or None for bucket set-up and moto's own API."""
    parts = unquote(path).lstrip("/").split("/", 1)
    key = parts[1] if len(parts) > 1 else ""
    if not parts[0] or path.startswith("/moto-api"):
        return None
    if not key:  # bucket-level
        if method == "GET" and ("list-type" in query or "prefix" in query or not query):
            subject = _subject(query.get("prefix", [""])[0], listing=True)
            return "LIST", subject
        if method == "POST" and "delete" in query:
            return "DELETE", "batch"
        return None  # create bucket, location, ...
    subject = _subject(key)
    if method == "GET":
        return "GET", subject
    if method == "HEAD":
        return "HEAD", subject
    if method == "PUT":
        return ("PART" if "partNumber" in query else "PUT"), subject
    if method == "POST" and "uploads" in query:
        return "MPU_CREATE", subject
    if method == "POST" and "uploadId" in query:
        return "MPU_COMPLETE", subject
    if method == "DELETE":
        return ("MPU_ABORT" if "uploadId" in query else "DELETE"), subject
    return method, subject


def _subject(key: str, listing: bool = False) -> str:
    segments = [s for s in key.split("/") if s]
    for s in segments:
        if TASK_ID.match(s):
            return "task:" + s
    for name in ("active", "workers", "_probe", "by-user"):
        if name in segments:
            return name
    return "root" if listing else "other"


TRAIL_LIMIT = 100_000


class Counting:
    def __init__(self, app, latency: float) -> None:
        self.app = app
        self.latency = latency
        self.upload_rate = 0.0  # bytes/s; 0 = as fast as moto goes
        self.counts: Counter[tuple[str, str]] = Counter()
        #: Every request on a key, in order: (kind, key). Read with /_bench/trail; capped, as a safety.
        self.trail: list[tuple[str, str]] = []
        self.lock = threading.Lock()  # the counts
        self.moto = threading.RLock()  # one request through moto at a time

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_bench/"):
            return self._bench(path, environ, start_response)
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        kind = classify(environ["REQUEST_METHOD"], query, path)
        if kind is not None:
            with self.lock:
                self.counts[kind] += 1
                if kind[1] != "root" and len(self.trail) < TRAIL_LIMIT:
                    self.trail.append((kind[0], unquote(path).lstrip("/").split("/", 1)[-1]))
            wait = self.latency
            if self.upload_rate and kind[0] in ("PUT", "PART"):
                wait += int(environ.get("CONTENT_LENGTH") or 0) / self.upload_rate
            if wait:
                time.sleep(wait)
        with self.moto:
            return list(self.app(environ, start_response))

    def _bench(self, path, environ, start_response):
        body = b"{}"
        if path == "/_bench/counts":
            with self.lock:
                body = json.dumps([[k, s, n] for (k, s), n in sorted(self.counts.items())]).encode()
        elif path == "/_bench/trail":
            with self.lock:
                body = json.dumps(self.trail).encode()
        elif path == "/_bench/reset":
            with self.lock:
                self.counts.clear()
                self.trail.clear()
        elif path == "/_bench/latency":
            query = parse_qs(environ.get("QUERY_STRING", ""))
            self.latency = float(query["ms"][0]) / 1000
            self.upload_rate = float(query.get("upload_mb_s", ["0"])[0]) * 1e6
        elif path == "/_bench/populate":
            bucket = parse_qs(environ.get("QUERY_STRING", ""))["bucket"][0]
            length = int(environ.get("CONTENT_LENGTH") or 0)
            items = json.loads(environ["wsgi.input"].read(length))
            body = json.dumps({"put": self._populate(bucket, items)}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    def _populate(self, bucket: str, items: list[list[str]]) -> int:
        from moto.core import DEFAULT_ACCOUNT_ID
        from moto.s3.models import s3_backends

        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        with self.moto:
            for key, text in items:
                backend.put_object(bucket, key, text.encode(), disable_notification=True)
        return len(items)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--latency-ms", type=float, default=0.0)
    args = p.parse_args(argv)
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = Counting(DomainDispatcherApplication(create_backend_app), args.latency_ms / 1000)
    server = make_server("127.0.0.1", args.port, app, True, request_handler=MotoRequestHandler)
    print("ready", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
