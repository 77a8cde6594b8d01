"""A part that changed in the store between its send and the join, said in words and sent again.

S3 keeps the last bytes sent to a part number, and its join (CompleteMultipartUpload) names each part's
ETag as the sender had it: a part sent again with other bytes in between (a second window, a replayed part
URL, a second ``--resume``) makes S3 refuse the whole join, ``InvalidPart``
(:class:`~s3task.errors.PartsChanged`). Nothing was joined, and every part is still held.

Which parts changed is read from the store (ListParts against the ETags named); an upload noted on its
task (one that can be continued, s3task.tasks.resumable) keeps waiting, with those numbers noted on it as
``resend``, so continuing it sends them again: the CLI's ``--resume`` would (it compares each held part's
MD5 with the file), and a browser, which keeps a held part on its number and size, sends these too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from .. import lifecycle
from ..errors import S3TaskError, StoreError
from ..record import TaskRecord
from ..states import Status
from ..store.base import MultipartStore
from .transitions import Transitions

log = logging.getLogger(__name__)

#: How a person continues an upload, by the door they came through.
ON_THE_PAGE = "send the same file again to continue the upload (Continue upload on the task's page)"
WITH_THE_CLI = "run the same command with --resume to continue the upload"


def changed(store: MultipartStore, key: str, upload_id: str, named: Sequence[tuple[int, str]]) -> list[int] | None:
    """The numbers of the parts named for the join (number, ETag) that the store does not hold with that
    ETag: sent again with other bytes, or never arrived (a store whose parts go by number, GCS's: that it
    does not hold, deleted since it was sent). None when the store does not list them."""
    try:
        held = {p.number: p.etag.strip('"') for p in store.list_parts(key, upload_id)}
    except StoreError:
        return None
    if not store.part_etags:
        return sorted(n for n, _ in named if n not in held)
    return sorted(n for n, etag in named if held.get(n) != str(etag).strip('"'))


def note_resend(
    transitions: Transitions, task_id: str, upload_id: str, numbers: Sequence[int], *, gone: bool = False
) -> None:
    """Note on the task, still waiting with this upload, that these parts go again when it continues (all
    the parts named for the join, when which changed is not known). ``gone``: they were deleted, not changed."""
    if not numbers:
        return
    what = "was deleted from" if gone else "changed in"
    why = f"{_which(numbers)} {what} the store after it was sent; sent again when the upload continues"

    def change(record: TaskRecord, now: datetime) -> TaskRecord | None:
        upload: dict[str, Any] = dict(record.input_upload or {})
        if record.status != Status.CREATED or upload.get("upload_id") != upload_id:
            return None  # continued, cancelled or restarted meanwhile: nothing to note
        upload["resend"] = sorted({*upload.get("resend", []), *numbers})
        return lifecycle.note_upload(record, now, upload=upload, note=why)

    try:
        transitions.records.write(task_id, change)
    except S3TaskError as e:  # the CLI's --resume still finds the part by its MD5
        log.warning("could not note on task %s that %s must go again: %s", task_id, _which(numbers), e)


def words(file_name: str, task_id: str, numbers: Sequence[int] | None, *, how: str | None, gone: bool = False) -> str:
    """What happened, in words (``numbers``: the parts that changed; None: not known): the upload kept
    (continue it ``how``), or, ``how`` None, given up. ``gone``: the parts were deleted (a store whose parts
    go by number: GCS's), not sent again with other bytes."""
    which = _which(numbers) if numbers else "a part"
    if numbers:
        again = f"{which} {'goes' if len(numbers) == 1 else 'go'} again"
    else:  # not known (every part named goes again), or none differs now (what the store lacks goes)
        again = "every part goes again" if numbers is None else "what it lacks goes again"
    if gone:
        said = (
            f"{which} of {file_name!r} {'were' if numbers and len(numbers) > 1 else 'was'} not in the task store "
            "at the join (never sent, or deleted after it was sent), so the file was not put together"
        )
    else:
        said = (
            f"{which} of {file_name!r} changed in the task store after it was sent (it was sent again with other "
            "bytes), so the file was not put together"
        )
    if how is None:
        return f"{said}; task {task_id} was cancelled with what was sent: submit the file again"
    return f"{said}; task {task_id} still waits for it, with the other parts kept: {how}, and {again}"


def _which(numbers: Sequence[int]) -> str:
    """'part 2', 'parts 2 and 3', 'parts 1, 2, 3, … (12 in all)'."""
    shown = [str(n) for n in numbers[:10]]
    if len(numbers) == 1:
        return f"part {shown[0]}"
    if len(numbers) > 10:
        return f"parts {', '.join(shown)}, … ({len(numbers)} in all)"
    return f"parts {', '.join(shown[:-1])} and {shown[-1]}"
