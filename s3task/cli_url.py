"""``s3task url TASK [--parquet | --excel | …]``: a link to a completed task's result, straight from the store.

The link is the store's own presigned URL (S3, Azure, GCS), made for the file asked for (a copy is made in
the store first if it is not yet, as ``download`` makes it); it lasts ``S3TASK_URL_SECONDS`` (15 minutes by
default, at most seven days) and needs no credentials, so it reads where a URL is read: pandas
(``pd.read_parquet(url)``), a browser, ``curl``. A local store has no such links (its files are the
app's to serve, to whoever may read them): there the command says so and points at ``download``.
"""

from __future__ import annotations

import argparse

from .errors import InvalidInput
from .tasks import Actor, TaskService


def add_url_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], flags: tuple[tuple[str, str, str], ...]
) -> None:
    s = sub.add_parser(
        "url",
        help="print a link to a completed task's output that needs no credentials (S3TASK_URL_SECONDS long)",
    )
    s.add_argument("task_id")
    which = s.add_mutually_exclusive_group()
    for flag, variant, what in flags:
        which.add_argument(flag, dest="variant", action="store_const", const=variant, help=what)
    s.set_defaults(variant="csv")
    s.add_argument("--as", dest="sub_user", help=argparse.SUPPRESS)


def cmd_url(args: argparse.Namespace, service: TaskService, actor: Actor) -> int:
    # Whether the store gives links at all, asked of the output itself: no copy is made for nothing.
    if service.output_url(actor, args.task_id, "csv") is None:
        raise InvalidInput(
            f"the store {service.store_description} gives no links of its own: a local store's files are the "
            f"app's to serve; save the file with `s3task download {args.task_id}`, or open the task's page"
        )
    service.ensure_output(actor, args.task_id, args.variant)
    print(service.output_url(actor, args.task_id, args.variant))
    return 0
