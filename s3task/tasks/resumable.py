"""Uploads of a file the caller holds (the CLI's ``submit``) that survive an interruption.

A task made for an upload records the file's fingerprint (s3task.fingerprint) in its first write. On
a store that takes uploads in parts (S3; Azure's blocks, GCS's objects joined by compose), a file of
more than :data:`PARTS_ABOVE` goes in parts; the
upload's id and part size are noted on the task (``lifecycle.note_upload``) before the first part is
sent. If the sender stops (killed, the network gone), the task stays *created* and the store keeps
the parts it has. :meth:`Resumable.find` finds that task again from the same file, name and type;
:meth:`Resumable.resume` asks the store which parts it holds (ListParts), sends only the others,
joins them and queues the same task. A part the store holds whose checksum is not that of the
file's bytes there (a file changed in its middle, which the fingerprint cannot see) is sent again.

Elsewhere (the local directory, or a smaller file) the file goes in one piece: continuing a task
means copying its whole file again into the same task.

A browser's upload (the New task page, then *Continue upload* on the task's page) goes the same way,
the browser sending the parts to presigned URLs: :meth:`Resumable.browser_parts` checks the file
picked is the one recorded on the task (its fingerprint, which the browser computes alike), notes the
upload on the task (or lists the parts of the one noted) and says which parts the store holds. The
browser cannot work out a part's MD5 cheaply, so a part held is kept on its number and size — unless
the task notes it as one to send again (``resend``: it changed in the store after it was sent, found
when the join was refused, s3task.tasks.changed_parts).
"""

from __future__ import annotations

import hashlib
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, BinaryIO

from .. import lifecycle
from ..errors import (
    InvalidInput,
    InvalidTransition,
    NotFound,
    PartsChanged,
    S3TaskError,
    StoreError,
    TooManyUploads,
    UploadInterrupted,
)
from ..fingerprint import Fingerprint
from ..ids import created_at
from ..input_format import AskedFormat
from ..record import RecipeRef, TaskRecord
from ..states import Status
from ..store.base import JOINED_FROM, MultipartStore, Part
from . import access, changed_parts
from .access import Actor
from .input_check import check_input
from .inputs import Inputs
from .looking import MAX_LIST
from .transitions import Transitions

#: Files above this go in parts where the store takes them (as the browser sends them, ui/direct.py).
PARTS_ABOVE = 16 * 2**20
PART_SIZE = 8 * 2**20
#: At most this many parts (S3 allows 10,000): larger parts for files of more than 8 GB.
MAX_PARTS = 1_000
#: Parts in flight at once.
PARALLEL_PARTS = 4
#: How far back a task waiting for its upload is looked for: the bucket rule `s3task init` sets drops
#: unfinished uploads after a day, and a task's page offers to cancel one forgotten for longer.
FIND_WITHIN = timedelta(days=7)


def part_size_for(size: int) -> int:
    """8 MiB parts, larger (whole MiBs) for files of more than 1,000 of them."""
    return max(PART_SIZE, math.ceil(size / MAX_PARTS / 2**20) * 2**20)


@dataclass(frozen=True)
class BrowserUpload:
    """The upload in parts noted on a task, as a browser continues it: its id, part size and number of
    parts, and the parts the store holds (ETag by number) that need not be sent again."""

    upload_id: str
    part_size: int
    count: int
    held: dict[int, str] = field(default_factory=dict)

    def missing(self) -> list[int]:
        return [n for n in range(1, self.count + 1) if n not in self.held]


class Resumable:
    def __init__(self, transitions: Transitions, inputs: Inputs) -> None:
        self.transitions, self.inputs = transitions, inputs
        self.store, self.layout = transitions.store, transitions.layout

    def in_parts(self, size: int) -> bool:
        """Does a file of ``size`` bytes go in parts here (and so can be continued part by part)?"""
        return isinstance(self.store, MultipartStore) and size > PARTS_ABOVE

    # --- finding the task an interrupted upload was for -------------------------------------------

    def find(self, actor: Actor, name: str, task_type: str, file: Fingerprint) -> TaskRecord | None:
        """``actor``'s newest task named ``name`` of ``task_type`` still waiting for its upload of
        ``file`` (created in the last week); None if there is none. A task waiting for another file of
        the same file name is refused in words (a different file is never continued into it)."""
        waiting = [r for r in self.waiting(actor) if (r.task_name, r.task_type) == (name, task_type)]
        for record in waiting:  # newest first, as listed
            if Fingerprint.from_dict(record.input_fingerprint) == file:
                return record
        for record in waiting:
            recorded = Fingerprint.from_dict(record.input_fingerprint)
            if recorded is not None and recorded.name == file.name:
                raise InvalidInput(
                    f"not resumed: task {record.task_id} ({name!r}) waits for another file called {file.name!r} "
                    f"({file.differs_from(recorded)}); cancel it (s3task cancel {record.task_id}) "
                    "or submit without --resume"
                )
        return None

    def waiting(self, actor: Actor) -> list[TaskRecord]:
        """``actor``'s own tasks of the last week still waiting for an upload that can be continued (the file
        recorded on them), newest first: one listing of their tasks and a read of each recent one."""
        root = self.layout.user_root(actor.name)
        since = self.store.now() - FIND_WITHIN
        ids = [i for i in (self.layout.task_id_of(k) for k in self.store.list_keys(root, limit=MAX_LIST)) if i]
        records, _ = self.transitions.looking.read_many(actor, [i for i in ids if created_at(i) >= since])
        return [
            r
            for r in records
            if r.status == Status.CREATED
            and r.created_by == actor.name
            and Fingerprint.from_dict(r.input_fingerprint) is not None
        ]

    def require_same(self, record: TaskRecord, file: Fingerprint) -> None:
        """Refuse, in words, to continue ``record``'s upload with a file other than the one it was made for."""
        recorded = Fingerprint.from_dict(record.input_fingerprint)
        if recorded is None:
            raise InvalidInput(f"task {record.task_id} has no record of the file it was made for: not continued")
        if why := file.differs_from(recorded):
            raise InvalidInput(
                f"this is not the file task {record.task_id} was made for ({why}); nothing was sent, and the task "
                f"still waits for {recorded.name!r}"
            )

    # --- a browser's upload in parts ------------------------------------------------------------

    def browser_parts(self, actor: Actor, task_id: str, file: Fingerprint) -> BrowserUpload:
        """The upload in parts a browser sends ``file`` to, for a task still waiting for it: the one noted
        on the task with the parts the store holds of it, or (none noted, or gone) a new one, noted before
        any part is sent. A file other than the one recorded on the task is refused (:meth:`require_same`)."""
        record = self.inputs.uploadable(actor, task_id)
        self.require_same(record, file)
        record, _etag, held = self._upload_of(actor, record, file)
        part_size = int(record.input_upload["part_size"])
        count = math.ceil(file.size / part_size)

        def whole(part: Part) -> bool:  # a part of this upload, of the size its place in the file has
            return 1 <= part.number <= count and part.size == min(part_size, file.size - (part.number - 1) * part_size)

        resend = set(record.input_upload.get("resend") or ())  # changed in the store since it was sent
        kept = {p.number: p.etag for p in held if whole(p) and p.number not in resend}
        return BrowserUpload(str(record.input_upload["upload_id"]), part_size, count, kept)

    # --- sending ----------------------------------------------------------------------------------

    def submit(
        self,
        actor: Actor,
        name: str,
        task_type: str,
        payload: dict[str, Any] | None,
        stream: BinaryIO,
        file: Fingerprint,
        input_format: AskedFormat | None = None,
        *,
        recipe: RecipeRef | None = None,
    ) -> TaskRecord:
        """A new task for ``file`` (``stream``, seekable), its input sent and the task queued. An upload in
        parts that stops raises :class:`UploadInterrupted` and leaves the task and its parts to
        :meth:`resume`; any other failure leaves no task behind, as ``Inputs.submit_file``."""
        if not self.in_parts(file.size):
            return self.inputs.submit_file(
                actor, name, task_type, payload, stream, input_format, file.to_dict(), recipe=recipe
            )
        record = self.transitions.create(actor, name, task_type, payload, input_format, file.to_dict(), recipe=recipe)
        try:
            return self._send_and_queue(actor, record, stream, file)
        except TooManyUploads:  # refused before any part went: no task is left for it
            if not self.transitions.discard(record):
                self.inputs.abandon_upload(actor, record.task_id)
            raise

    def resume(self, actor: Actor, record: TaskRecord, stream: BinaryIO, file: Fingerprint) -> TaskRecord:
        """Continue the upload of ``file`` into ``record`` (found by :meth:`find`) and queue it."""
        access.require(actor, record, "upload to")
        if not self.in_parts(file.size):
            self.inputs.upload_input(actor, record.task_id, stream)  # the whole file, into the same task
            # Checked and queued; a file refused then cancels the task, as a browser's upload does.
            return self.inputs.finish_upload(actor, record.task_id, size=file.size)
        return self._send_and_queue(actor, record, stream, file)

    def _send_and_queue(self, actor: Actor, record: TaskRecord, stream: BinaryIO, file: Fingerprint) -> TaskRecord:
        record, etag = self._sent(actor, record, stream, file)
        try:
            # One request, as a submit's: the stored file's start (judged) with its size and ETag.
            meta, judged = check_input(self.store, record, self.transitions.params_of(record), file.size)
            self.transitions.recall(record.task_id)
            return self.transitions.queue(record, etag, meta, judged)
        except InvalidTransition:
            raise  # submitted or cancelled meanwhile, by someone else: left as it is
        except StoreError as e:
            # The file is whole in the store; only its check or the queueing write did not get through.
            raise UploadInterrupted(
                f"the file of task {record.task_id} is in the store, but the task could not be queued "
                f"({e.message}); run the same command with --resume to queue it (nothing is sent again)"
            ) from e
        except S3TaskError:
            # The file is in the store but cannot be queued (refused, or the store failed us):
            # a task this service made goes, any other is cancelled; never one waiting for a file.
            if not self.transitions.discard(record):
                self.inputs.abandon_upload(actor, record.task_id)
            raise

    def _sent(self, actor: Actor, record: TaskRecord, stream: BinaryIO, file: Fingerprint) -> tuple[TaskRecord, str]:
        """Every part of the file in the store, joined: the record as last written, and its ETag."""
        store = self.store
        assert isinstance(store, MultipartStore)  # in_parts() said so
        sender: _Sender | None = None
        # Whatever the store fails here, the task and the parts it holds stay, for --resume.
        try:
            if self._joined(record, stream, file):  # an earlier run joined it and stopped before queueing
                known = self.transitions.recall(record.task_id)
                return known if known is not None else self.transitions.records.read(record.task_id)
            record, etag, held = self._upload_of(actor, record, file)
            sender = _Sender(store, record, stream, file.size)
            kept = sender.keep(held)
            sent = sender.send([n for n in range(1, sender.count + 1) if n not in kept])
            joined = sorted({**kept, **sent}.items())
            store.complete_multipart(record.input_object_path, sender.upload_id, joined)
        except PartsChanged as e:  # another sender put other bytes into a part meanwhile: nothing joined
            assert sender is not None
            numbers = changed_parts.changed(store, record.input_object_path, sender.upload_id, joined)
            resend = numbers if numbers is not None else [n for n, _ in joined]
            gone = not store.part_etags  # its parts go by number: one named is one no longer held
            changed_parts.note_resend(self.transitions, record.task_id, sender.upload_id, resend, gone=gone)
            how = changed_parts.WITH_THE_CLI  # which sends again every held part that is not the file's bytes
            said = changed_parts.words(file.name, record.task_id, numbers, how=how, gone=gone)
            raise UploadInterrupted(said) from e
        except StoreError as e:
            count = sender.count if sender else math.ceil(file.size / part_size_for(file.size))
            raise UploadInterrupted(
                f"the upload of {file.name!r} stopped with {sender.held if sender else 0} of {count} parts in the "
                f"store ({e.message}); they are kept: run the same command with --resume to send the rest to task "
                f"{record.task_id}"
            ) from e
        return record, etag

    def _joined(self, record: TaskRecord, stream: BinaryIO, file: Fingerprint) -> bool:
        """Whether the task's input is already this file, joined from the parts noted on it: its size, and
        its ETag the one S3 gives an object joined from those parts (the MD5 of the parts' MD5s, then the
        count), worked out from the file's own bytes; on a store whose ETag says nothing of the parts (GCS),
        the upload the object names as the one it was joined from (``JOINED_FROM``), the one noted."""
        noted = record.input_upload
        if not noted.get("part_size"):
            return False
        try:
            meta = self.store.head(record.input_object_path)
        except NotFound:
            return False
        if meta.size != file.size:
            return False
        if meta.metadata.get(JOINED_FROM):
            return meta.metadata[JOINED_FROM] == str(noted.get("upload_id"))
        part_size, digests = int(noted["part_size"]), []
        stream.seek(0)
        while chunk := stream.read(part_size):
            digests.append(hashlib.md5(chunk, usedforsecurity=False).digest())
        joined = hashlib.md5(b"".join(digests), usedforsecurity=False).hexdigest()
        return meta.etag.strip('"') == f"{joined}-{len(digests)}"

    def _upload_of(self, actor: Actor, record: TaskRecord, file: Fingerprint) -> tuple[TaskRecord, str, list[Part]]:
        """The task's upload in parts, started and noted on it if it has none still open, and the parts
        the store holds of it: the record (as written or read), its ETag, the parts."""
        store = self.store
        assert isinstance(store, MultipartStore)
        noted = record.input_upload
        if noted.get("upload_id"):
            try:
                held = store.list_parts(record.input_object_path, str(noted["upload_id"]))
                known = self.transitions.recall(record.task_id)
                current, etag = known if known is not None else self.transitions.records.read(record.task_id)
                return current, etag, held
            except NotFound:
                pass  # gone (completed, aborted or swept): a new upload into the same task
        upload_id = self.inputs.open_upload(actor, record)  # within the bounds on open uploads
        upload = {"upload_id": upload_id, "part_size": part_size_for(file.size)}
        known = self.transitions.recall(record.task_id)
        written = self.transitions.records.write(
            record.task_id,
            lambda r, now: lifecycle.note_upload(r, now, fingerprint=file.to_dict(), upload=upload),
            first=known,
        )
        if written.etag is None:  # a write whose answer was lost, found landed: read its ETag
            current, etag = self.transitions.records.read(record.task_id)
        else:
            current, etag = written.record, written.etag
        if known is not None:  # made by this service just now: discard() removes it if its file is refused
            self.transitions._remember(current, etag)
        return current, etag, []


class _Sender:
    """Sends the parts of one file to the upload noted on its task, :data:`PARALLEL_PARTS` at a time."""

    def __init__(self, store: MultipartStore, record: TaskRecord, stream: BinaryIO, size: int) -> None:
        self.store, self.key, self.stream, self.size = store, record.input_object_path, stream, size
        self.upload_id = str(record.input_upload["upload_id"])
        self.part_size = int(record.input_upload["part_size"])
        self.count = math.ceil(size / self.part_size)
        self._lock = threading.Lock()
        self.held = 0  # parts of this file the store holds: kept, then sent

    def _read(self, number: int) -> bytes:
        start = (number - 1) * self.part_size
        with self._lock:  # one file position, shared by the sending threads
            self.stream.seek(start)
            return self.stream.read(min(self.part_size, self.size - start))

    def keep(self, held: list[Part]) -> dict[int, str]:
        """The parts the store holds that are this file's bytes (size and MD5, which is a part's ETag on
        S3), by number; any other is sent again."""
        kept: dict[int, str] = {}
        for part in held:
            if not 1 <= part.number <= self.count:
                continue
            data = self._read(part.number)
            if part.size == len(data) and part.etag.strip('"') == hashlib.md5(data, usedforsecurity=False).hexdigest():
                kept[part.number] = part.etag
        self.held = len(kept)
        return kept

    def _one(self, number: int) -> tuple[int, str]:
        etag = self.store.upload_part(self.key, self.upload_id, number, self._read(number))
        with self._lock:
            self.held += 1
        return number, etag

    def send(self, numbers: list[int]) -> dict[int, str]:
        """Send these parts; their ETags by number. The first failure stops the rest and is raised."""
        if not numbers:
            return {}
        with ThreadPoolExecutor(min(PARALLEL_PARTS, len(numbers)), thread_name_prefix="s3task-part") as pool:
            futures = [pool.submit(self._one, n) for n in numbers]
            try:
                return dict(f.result() for f in futures)
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
