"""One exception hierarchy for s3task.

Every error the core raises derives from :class:`S3TaskError`. The class
docstring is the default message, and the original exception (a botocore
error, an ``OSError``) is kept as ``__cause__`` by the code that raises.
Lost races have their own types, because losing a race is normal: callers
re-read and decide again.
"""

from __future__ import annotations


class S3TaskError(Exception):
    """Something went wrong in s3task."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


# --- settings ---------------------------------------------------------------


class SettingsError(S3TaskError, ValueError):
    """A setting has a value s3task cannot use (the message names it, the value, and what is allowed).

    Still a ``ValueError`` too, as it was before it joined the root: parsers of a setting's
    value (``s3task.notify.email.Smtp.parse``) raise it where a bad value is a ``ValueError``.
    """


# --- store boundary ---------------------------------------------------------


class StoreError(S3TaskError):
    """The object store reported an error."""


class NotFound(StoreError):
    """The object does not exist."""


class AlreadyExists(StoreError):
    """The object already exists (a create lost to an earlier write)."""


class PreconditionFailed(StoreError):
    """The object changed since it was read (its ETag no longer matches)."""


class Conflict(PreconditionFailed):
    """A concurrent conditional write to the same object is in progress.

    Treated like a lost compare-and-set: re-read, recompute, try again. The
    old body is never resent with a fresh ETag, which would overwrite the
    write that won.
    """


class StoreUnavailable(StoreError):
    """The object store could not be reached or did not answer in time."""


class AccessDeniedByStore(StoreError):
    """The object store refused the request (credentials or permissions)."""


class BucketMissing(StoreError):
    """The bucket does not exist."""


class MarkerLost(StoreError):
    """A task that may be pending has no active/ marker, and putting it back failed."""


class PartsChanged(StoreError):
    """The store does not hold the parts named for a join as they were sent (S3's InvalidPart: a part sent
    again with other bytes since, or never sent): nothing was joined."""


class UnsafeStore(StoreError):
    """The store does not enforce conditional writes; running on it would corrupt task state."""


class InvalidKey(StoreError):
    """The object key is not allowed (empty, absolute, '..' or NUL)."""


# --- records and lifecycle --------------------------------------------------


class RecordError(S3TaskError):
    """A task record could not be read."""


class CorruptRecord(RecordError):
    """A task record is not valid JSON of the expected shape."""


class UnsupportedSchema(RecordError):
    """A task record was written by a newer version of s3task; it is left untouched."""


class InvalidTransition(S3TaskError):
    """The task's current state does not allow this change."""


class OutputPreparing(S3TaskError):
    """A copy of a task's output (Excel, exact values, rows with errors) is still being made: ask again soon."""


class CannotExport(InvalidTransition):
    """This copy of the output cannot be made (too big for Excel, no error column, no errors)."""


class NotReady(InvalidTransition):
    """The copy has not been made yet: ask for it to be prepared first."""


class NotOwner(InvalidTransition):
    """This worker no longer owns the task (cancelled, expired or claimed by another)."""


# --- control API -----------------------------------------------------------


class InvalidTaskId(S3TaskError):
    """That is not a valid task id."""


class TaskNotFound(S3TaskError):
    """No task with that id exists."""


class AccessDenied(S3TaskError):
    """You are not allowed to do that to this task."""


class InvalidInput(S3TaskError):
    """The input file cannot be used."""


class UploadInterrupted(S3TaskError):
    """An upload in parts stopped before the store had all of it; what it sent is kept, to be continued."""


class TooManyUploads(InvalidTransition):
    """As many uploads in parts are open as allowed (on this task, or of yours): continue or cancel one first."""


class NotSent(S3TaskError):
    """The preview's copy of the file does not hold these bytes: the browser sent only some of the file."""


class TooManyConflicts(S3TaskError):
    """The task kept changing under us; try again in a moment."""


class TooManyRequests(S3TaskError):
    """You have done that too often in the last minute; try again in a moment."""

    def __init__(self, message: str | None = None, *, retry_after: int = 60) -> None:
        super().__init__(message)
        #: Seconds until the request would be accepted (the HTTP API's Retry-After).
        self.retry_after = retry_after


class UnknownTaskType(S3TaskError):
    """No task type with that name is registered."""


# --- notifications -----------------------------------------------------------


class DeliveryFailed(S3TaskError):
    """The receiver did not take the event (no answer in time, or not a 2xx answer)."""
