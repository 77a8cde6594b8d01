"""Files go between the browser and the store directly; the app only hands out short-lived URLs.

Two small custom components (``st.components.v2``, no build step; the uploader's JavaScript is
``ui/direct_upload.js``, read once at import, its HTML and CSS are inline below):

- :func:`uploader` — a file picker that keeps the chosen file in the browser.
  It reads only the first 64 KB (``File.slice``) and reports it, with the name
  and size, for the preview. For a workbook (a zip: its first bytes say so) it
  also reports the byte ranges its preview is read from (``ranges``: offset and
  bytes each): the zip's end with its directory, and of the parts the preview
  needs the whole of the small ones (relationships, the workbook, the styles)
  and the start of the shared strings and of each of the first sheets, within
  the budget :data:`WORKBOOK_BYTES` gives (an encrypted workbook or an .xls, an
  OLE2 file: its first directory sector). Python reads them as a
  :class:`~s3task.csvio.sparse.SparseFile` (``ui/workbookfile.py``). Given an upload plan (``data["upload"]``) it PUTs
  the file itself to the URL in the plan — an S3 presigned URL, an Azure SAS URL, a GCS V4 signed URL,
  or the app's signed ``/transfer`` route on the local store — always with ``Content-Type:
  text/csv`` (whatever the operating system calls the file) and any other header the
  plan names (Azure's ``x-ms-blob-type``, GCS's ``x-goog-if-generation-match``), showing a progress bar,
  the speed and the time left. Large files on S3 go as a presigned multipart upload, on Azure as blocks
  (Put Block, then the app commits them), on GCS as objects of their own (the app composes them): parts in
  parallel, each retried on its own. It also
  reports the file's fingerprint (``edges_sha256``: the SHA-256 of its first
  and last MiB, s3task.fingerprint), recorded on the task, and the upload in
  parts is noted on the task before the first part goes, so that one that
  stops can be continued from the task's page (ui/resume_upload.py): the plan
  then has no URL for a part the store holds, and the browser skips it. It reports
  ``uploaded`` (with the parts' ETags) or ``failed`` (``kind`` ``network`` when
  the browser could not reach the store at all — a CORS rule missing, a
  private endpoint — which makes the page fall back to Streamlit's uploader;
  ``interrupted`` when the connection broke midway; ``http`` when the store
  refused, e.g. an expired link).
- :func:`save` — no visible UI: given a fresh download URL it makes the browser
  fetch it (a hidden frame, so an error page never replaces the app). The
  Download button itself is an ordinary ``st.button`` whose callback asks for
  the URL, so a link never sits in the page long enough to expire.

The browser side keeps its uploads in a module-level registry keyed by task id,
so the component's script running again (it does whenever ``data`` changes)
picks up an upload in flight instead of starting it twice.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from s3task.csvio import INSPECT_BYTES
from s3task.csvio.sparse import SparseFile
from s3task.fingerprint import Fingerprint
from s3task.tasks.browser_uploads import UploadPlan
from s3task.tasks.resumable import PARALLEL_PARTS

#: How much of the chosen file the browser sends for the preview.
PROBE_BYTES = INSPECT_BYTES  # how much of the file the browser sends for the preview
#: What the browser sends of a workbook for its preview (bytes, before base64). The state it reports goes
#: back to the app with every run of the page, so it is kept small: 64 KB of a sheet's compressed XML held
#: 2,694 rows of a 4-column sheet written by xlsxwriter, and 16 KB of its shared strings the texts of all of
#: them — far more than the 10 rows shown and the 30 the header is looked for in.
WORKBOOK_BYTES = {
    "part": 256 * 1024,  # a small part, whole (the package's and the workbook's relationships, the workbook,
    # the styles), at most this
    "strings": 128 * 1024,  # the start of the shared strings
    "sheet": 64 * 1024,  # the start of each sheet
    "sheets": 8,  # of the first sheets
    "budget": 1024 * 1024,  # in all, besides the first 64 KB
}


_HTML = """
<div class="s3u">
  <div class="label">CSV or Excel file</div>
  <label class="drop">
    <input type="file" accept=".csv,.txt,.tsv,.xlsx,.xlsm,.xls,.xlsb,text/csv,text/plain,text/tab-separated-values" />
    <span class="hint"><b>Choose a CSV or Excel file</b> or drop it here</span>
    <span class="chosen"></span>
  </label>
  <div class="bar" hidden>
    <progress max="1" value="0" aria-label="Upload progress"></progress>
    <div class="stats" aria-live="polite"></div>
  </div>
</div>
"""

_CSS = """
.s3u { font-family: var(--st-font); color: var(--st-text-color); font-size: var(--st-base-font-size, 1rem); }
.label { font-size: .875rem; margin-bottom: .25rem; }
.drop {
  display: flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: center; cursor: pointer;
  padding: 1rem; border-radius: var(--st-base-radius, .5rem);
  background: var(--st-secondary-background-color); border: 1px dashed var(--st-border-color, #ccc);
}
.drop.over { border-color: var(--st-primary-color); }
.drop.busy { cursor: default; opacity: .7; }
.drop input { position: absolute; width: 1px; height: 1px; opacity: 0; }
.drop .hint b { color: var(--st-primary-color); }
.drop .chosen { font-weight: 600; overflow-wrap: anywhere; }
.bar { margin-top: .75rem; }
.bar progress { width: 100%; height: .75rem; accent-color: var(--st-primary-color); }
.stats { font-size: .875em; opacity: .8; margin-top: .25rem; }
.stats.error { color: var(--st-red-text-color, #c00); opacity: 1; }
"""

_JS = (Path(__file__).parent / "direct_upload.js").read_text(encoding="utf-8")

_SAVE_JS = """
const SEEN = (globalThis.__s3taskSaves ??= new Set());

export default function (component) {
  const { data } = component;
  if (!data?.url || SEEN.has(data.nonce)) return;
  SEEN.add(data.nonce);
  // A hidden frame: the response's Content-Disposition makes it a download,
  // and an error page (an expired or refused link) never replaces the app.
  const frame = document.createElement("iframe");
  frame.hidden = true;
  frame.src = data.url;
  document.body.appendChild(frame);
  setTimeout(() => frame.remove(), 10 * 60 * 1000);
}
"""

_uploader = st.components.v2.component("s3task_uploader", html=_HTML, css=_CSS, js=_JS)
_save = st.components.v2.component("s3task_save", js=_SAVE_JS)


# --- what the browser reports ---------------------------------------------------------


@dataclass(frozen=True)
class Chosen:
    """The file picked in the browser: its name, size and first bytes (the file itself stays there), and for a
    workbook the byte ranges its preview is read from."""

    id: str
    name: str
    size: int
    head: bytes
    ranges: tuple[tuple[int, bytes], ...] = ()
    #: the SHA-256 of its first and last MiB (s3task.fingerprint), "" if the browser could not work it out
    edges_sha256: str = ""

    @classmethod
    def from_state(cls, value: Any) -> Chosen | None:
        if not isinstance(value, dict):
            return None
        try:
            sent = value.get("ranges") or ()
            # The budget is the page's, not only the browser's to keep: more than it is never decoded.
            if len(sent) > 64 or sum(len(str(data)) for _at, data in sent) > 2 * WORKBOOK_BYTES["budget"]:
                sent = ()
            ranges = tuple((int(at), base64.b64decode(data)) for at, data in sent)
            head = base64.b64decode(value["head"])[:PROBE_BYTES]
            edges = str(value.get("edges_sha256") or "")[:64]
            return cls(str(value["id"]), str(value["name"]), int(value["size"]), head, ranges, edges)
        except (KeyError, TypeError, ValueError):
            return None

    def fingerprint(self) -> Fingerprint | None:
        """Which file this is (name, size, edges), for the task made for it; None if the browser had no digest."""
        return Fingerprint(self.name, self.size, self.edges_sha256) if self.edges_sha256 else None

    def sparse(self) -> SparseFile:
        """The file as far as the browser sent it: its first bytes and the ranges (a workbook's preview reads it)."""
        return SparseFile(self.size, [(0, self.head), *self.ranges])

    def preview_bytes(self) -> bytes:
        """The head, cut after its last complete line when the file goes on past it."""
        if self.size <= len(self.head):
            return self.head
        end = self.head.rfind(b"\n")
        return self.head[: end + 1] if end >= 0 else self.head


@dataclass(frozen=True)
class Plan:
    """One upload the browser is asked to do (the service's plan, s3task.tasks.browser_uploads) for the file it
    chose, remembered in the session until it ends."""

    upload: UploadPlan
    file_id: str
    content_type: str = "text/csv"

    @property
    def task_id(self) -> str:
        return self.upload.task_id

    def for_browser(self) -> dict[str, Any]:
        plan = self.upload
        base: dict[str, Any] = {"id": plan.task_id, "file": self.file_id, "size": plan.size}
        if plan.parts is not None:
            parts = {"parts": list(plan.parts), "part_size": plan.part_size, "parallel": PARALLEL_PARTS}
            return {**base, **parts, "part_etags": plan.part_etags}
        headers = dict(plan.headers or {"Content-Type": self.content_type})
        return {**base, "url": plan.url, "content_type": self.content_type, "headers": headers}


def sent_parts(report: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """The parts the browser says it sent, ``(number, ETag)`` as it reports them (checked by the service)."""
    return [tuple(pair) for pair in report.get("parts") or [] if isinstance(pair, list | tuple) and len(pair) == 2]


# --- mounting ---------------------------------------------------------------------------


def _noop() -> None:
    pass


def uploader(
    *, key: str, plan: Plan | None, owner: str, on_file_change: Callable[[], None] | None = None
) -> dict[str, Any]:
    """Mount the picker; returns ``file`` (state), ``uploaded`` and ``failed`` (one-run events)."""
    current = st.session_state.get(key)
    chosen = current.get("file") if isinstance(current, dict) else None
    data = {
        "probe": PROBE_BYTES,
        "workbook": WORKBOOK_BYTES,
        "owner": owner,
        "file": {k: chosen[k] for k in ("id", "name", "size")} if isinstance(chosen, dict) else None,
        "upload": plan.for_browser() if plan else None,
    }
    result = _uploader(
        key=key,
        data=data,
        on_file_change=on_file_change or _noop,
        on_uploaded_change=_noop,
        on_failed_change=_noop,
    )
    return dict(result)


def save(*, key: str, url: str | None) -> None:
    """Make the browser download ``url`` once (nothing is shown)."""
    data = {"url": url, "nonce": secrets.token_hex(8)} if url else {}
    _save(key=key, data=data, height=0)
