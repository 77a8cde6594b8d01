// The direct uploader's browser side (ui/direct.py loads this file into its st.components.v2 component).
// An ES module: Streamlit calls the default export with the component each time it renders.
const REG = (globalThis.__s3taskUploads ??= { files: new Map(), jobs: new Map() });

function mb(bytes) {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
}

function duration(seconds) {
  if (!isFinite(seconds)) return "";
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

function newId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function toBase64(buffer) {
  const bytes = new Uint8Array(buffer);
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

// --- what a workbook's preview is read from -----------------------------------------------------------
// A workbook is a zip, read from its end (the directory) and from the start of each part, not from the
// file's first bytes. So for one the browser also sends [offset, bytes] ranges: the zip's end and
// directory, the small parts whole, the start of the shared strings and of the first sheets (ui/direct.py).

async function bytesOf(file, start, end) {
  return new Uint8Array(await file.slice(start, end).arrayBuffer());
}

function startsWith(bytes, magic) {
  return magic.every((b, i) => bytes[i] === b);
}

// Which of limits' sizes a part of a workbook is read to: a sheet's start, the shared strings', a small part whole.
function partKind(name) {
  if (/(^|\/)worksheets\/[^/]+\.xml$/i.test(name)) return "sheet";
  if (/(^|\/)sharedStrings\.xml$/i.test(name)) return "strings";
  if (/(^|\/)_rels\/(workbook\.xml)?\.rels$|(^|\/)(workbook|styles)\.xml$/i.test(name)) return "part";
  return null;
}

// The entries of a zip's central directory: name, compressed size, where its local header starts and how long
// that header is as a rule (a local extra field may be longer than the directory's: some slack is sent too).
function zipEntries(dir) {
  const view = new DataView(dir.buffer, dir.byteOffset, dir.byteLength);
  const entries = [];
  for (let at = 0; at + 46 <= dir.length && view.getUint32(at, true) === 0x02014b50; ) {
    const nameLength = view.getUint16(at + 28, true);
    const extra = view.getUint16(at + 30, true);
    entries.push({
      name: new TextDecoder().decode(dir.subarray(at + 46, at + 46 + nameLength)),
      size: view.getUint32(at + 20, true),
      offset: view.getUint32(at + 42, true),
      header: 30 + nameLength + extra + 1024,
    });
    at += 46 + nameLength + extra + view.getUint16(at + 32, true);
  }
  return entries;
}

async function zipRanges(file, limits) {
  const tailStart = Math.max(0, file.size - 65536 - 22); // the end record, after a comment of up to 64 KB
  const tail = await bytesOf(file, tailStart, file.size);
  const view = new DataView(tail.buffer);
  let end = tail.length - 22;
  while (end >= 0 && view.getUint32(end, true) !== 0x06054b50) end--;
  if (end < 0) return [[tailStart, tail]]; // no zip: the app says so
  // The end record and the 20 bytes before it (where a zip64's locator would be): what the zip module reads.
  const ranges = [[tailStart + Math.max(0, end - 20), tail.subarray(Math.max(0, end - 20))]];
  const dirSize = view.getUint32(end + 12, true);
  const dirStart = view.getUint32(end + 16, true);
  if (dirStart === 0xffffffff || dirSize > limits.budget) return ranges; // a zip64, or a huge directory: no preview
  const dir = dirStart >= tailStart
    ? tail.subarray(dirStart - tailStart, dirStart - tailStart + dirSize)
    : await bytesOf(file, dirStart, dirStart + dirSize);
  ranges.push([dirStart, dir]);
  const order = { part: 0, strings: 1, sheet: 2 };
  const parts = zipEntries(dir)
    .map((entry) => ({ ...entry, kind: partKind(entry.name) }))
    .filter((entry) => entry.kind)
    .sort((a, b) => order[a.kind] - order[b.kind] || a.name.localeCompare(b.name, "en", { numeric: true }));
  let budget = limits.budget - dir.length;
  let sheets = 0;
  for (const part of parts) {
    if (part.kind === "sheet" && ++sheets > limits.sheets) break;
    const whole = part.header + part.size;
    const length = Math.min(part.header + Math.min(part.size, limits[part.kind]), budget);
    if (length <= part.header || (part.kind === "part" && length < whole)) continue; // a small part whole, or not
    ranges.push([part.offset, await bytesOf(file, part.offset, Math.min(file.size, part.offset + length))]);
    budget -= length;
  }
  return ranges;
}

// An OLE2 file (an encrypted workbook, an .xls): its first directory sector, which names its streams.
async function ole2Ranges(file, head) {
  if (head.length < 512) return [];
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const at = (view.getUint32(0x30, true) + 1) * 2 ** view.getUint16(0x1e, true);
  return at < file.size ? [[at, await bytesOf(file, at, Math.min(file.size, at + 8192))]] : [];
}

async function previewRanges(file, head, limits) {
  if (!limits || file.size <= head.length) return []; // the first bytes are the whole file
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04])) return zipRanges(file, limits);
  if (startsWith(head, [0xd0, 0xcf, 0x11, 0xe0])) return ole2Ranges(file, head);
  return [];
}

// --- which file it is: the SHA-256 of its first and last MiB (s3task/fingerprint.py, computed alike) -------

const EDGE = 1 << 20;

// The first MiB, then the part of the last MiB not already in it; "" where the page has no Web Crypto
// (a plain-http address other than localhost): the task is then made without it, and cannot be continued.
async function edgesSha256(file) {
  if (!globalThis.crypto?.subtle) return "";
  const start = Math.max(EDGE, file.size - EDGE);
  const pieces = [file.slice(0, Math.min(EDGE, file.size))];
  if (file.size > start) pieces.push(file.slice(start, file.size));
  const digest = await crypto.subtle.digest("SHA-256", await new Blob(pieces).arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// --- continuing an upload: a part without a URL is one the store holds already ------------------------------

function heldBytes(file, plan) {
  return plan.parts.reduce((sum, url, i) => sum + (url ? 0 : partLength(file, plan, i)), 0);
}

function partLength(file, plan, index) {
  return Math.max(0, Math.min(plan.part_size, file.size - index * plan.part_size));
}

function toSend(plan) {
  return plan.parts.flatMap((url, i) => (url ? [i] : []));
}

// --- the upload -------------------------------------------------------------------------------------------

// One PUT with progress; resolves with the response's ETag, rejects with {kind, status, message}.
function put(url, body, headers, onProgress, job) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    job.xhrs.add(xhr);
    xhr.open("PUT", url);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      job.xhrs.delete(xhr);
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve(xhr.getResponseHeader("ETag"));
        return;
      }
      const text = (xhr.responseText || "").slice(0, 300);
      const code = (text.match(/<Code>([^<]+)<\/Code>/) || [])[1] || "";
      let message = code || text || `HTTP ${xhr.status}`;
      try { message = JSON.parse(text).message || message; } catch (_) {}
      reject({ kind: "http", status: xhr.status, message });
    };
    xhr.onerror = () => {
      job.xhrs.delete(xhr);
      const message = "the store did not answer, or its CORS rule does not let this app in";
      reject({ kind: "network", status: 0, message });
    };
    xhr.onabort = () => {
      job.xhrs.delete(xhr);
      reject({ kind: "aborted", status: 0, message: "the upload was stopped" });
    };
    xhr.send(body);
  });
}

function wait(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

// What the plan says a single PUT sends: the signed Content-Type and any header the store needs
// (Azure: x-ms-blob-type), as the server lists them.
function putHeaders(plan) {
  return plan.headers || { "Content-Type": plan.content_type };
}

// A part's tag to report: its ETag where joining the parts needs it (S3), else none (Azure's blocks go by id).
function partTag(plan, etag) {
  if (etag || plan.part_etags === false) return etag || "";
  throw { kind: "http", status: 0, fatal: true,
          message: "the store hides each part's ETag from the browser (its CORS rule must expose ETag)" };
}

async function uploadParts(job, file, plan) {
  const loaded = new Array(plan.parts.length).fill(0);
  const etags = new Array(plan.parts.length);
  const held = heldBytes(file, plan);
  const queue = toSend(plan);
  let next = 0;
  let sent = 0;
  if (held) job.progress(held); // continued: what the store holds shows at once
  const one = async (index) => {
    const start = index * plan.part_size;
    const blob = file.slice(start, Math.min(file.size, start + plan.part_size));
    for (let attempt = 1; ; attempt++) {
      try {
        const etag = await put(plan.parts[index], blob, {}, (n) => {
          loaded[index] = n;
          job.progress(held + loaded.reduce((a, b) => a + b, 0));
        }, job);
        etags[index] = partTag(plan, etag);
        sent += 1;
        return;
      } catch (err) {
        loaded[index] = 0;
        const retriable = !err.fatal && (err.kind === "network" || err.status >= 500 || err.status === 408);
        // A store that never answered a single part is unreachable (CORS, private endpoint): say so at once.
        const unreachable = err.kind === "network" && sent === 0 && loaded.every((n) => n === 0);
        if (job.stopped || !retriable || attempt >= 4 || (unreachable && attempt >= 2)) {
          // A part the store kept failing for now (a broken connection, a 5xx such as SlowDown): the parts held
          // stay, and the upload can be continued (a part refused outright, e.g. an expired link, cannot).
          if (retriable && !unreachable) err.gaveUp = true;
          throw err;
        }
        await wait(500 * 2 ** (attempt - 1));
      }
    }
  };
  const lanes = Array.from({ length: Math.min(plan.parallel, queue.length) }, async () => {
    while (next < queue.length && !job.stopped) await one(queue[next++]);
  });
  await Promise.all(lanes);
  // The parts sent ("" for a tag where the store gives none: Azure's blocks); the app adds the parts held.
  return etags.flatMap((etag, i) => (etag === undefined ? [] : [[i + 1, etag]]));
}

function guardLeaving() {
  // Leaving or reloading the page while a file is being sent asks first (the browser's own words):
  // the upload runs in this page, and leaving stops it.
  if (REG.guarded) return;
  REG.guarded = true;
  window.addEventListener("beforeunload", (e) => {
    if (![...REG.jobs.values()].some((job) => job.state === "running")) return;
    e.preventDefault();
    e.returnValue = "";
  });
}

function startJob(plan, file) {
  guardLeaving();
  const job = {
    id: plan.id, plan, file, xhrs: new Set(), state: "running", loaded: 0, started: performance.now(),
    rate: 0, smoothed: 0, lastAt: performance.now(), lastLoaded: 0, peak: 0,
    outcome: null, reportedTo: null, view: null, report: null, stopped: false,
  };
  job.progress = (bytes) => {
    // Speed: the average so far, then a moving average over quarter seconds.
    const now = performance.now();
    const dt = (now - job.lastAt) / 1000;
    if (dt >= 0.25) {
      const instant = (bytes - job.lastLoaded) / dt;
      job.smoothed = job.smoothed ? 0.7 * job.smoothed + 0.3 * instant : instant;
      job.lastAt = now;
      job.lastLoaded = bytes;
    }
    const elapsed = (now - job.started) / 1000;
    job.rate = job.smoothed || (elapsed > 0.05 && bytes > 0 ? bytes / elapsed : 0);
    job.loaded = Math.min(bytes, plan.size);
    job.peak = Math.max(job.peak, job.loaded);
    render(job);
  };
  job.stop = () => {
    job.stopped = true;
    for (const xhr of job.xhrs) xhr.abort();
  };
  REG.jobs.set(plan.id, job);
  const run = plan.parts
    ? uploadParts(job, file, plan).then((parts) => ({ parts }))
    : put(plan.url, file, putHeaders(plan), job.progress, job).then((etag) => ({ etag }));
  run.then(
    (result) => finish(job, { event: "uploaded", value: { id: job.id, file: plan.file, size: file.size, ...result } }),
    (err) => {
      job.stop();
      // Only a store that never took a byte is unreachable; a connection lost midway is just a failure.
      const broke = (err.kind === "network" && job.peak > 0) || err.gaveUp === true;
      const lost = err.kind === "network" ? "the connection to the task store broke off" : `the task store kept failing: ${err.message}`;
      const why = broke ? { kind: "interrupted", message: lost } : {};
      finish(job, { event: "failed", value: { id: job.id, file: plan.file, ...err, ...why } });
    },
  );
  return job;
}

function finish(job, outcome) {
  if (job.state !== "running") return;
  job.state = outcome.event === "uploaded" ? "done" : "failed";
  if (job.state === "done") job.loaded = job.plan.size;
  job.outcome = outcome;
  render(job);
  tell(job);
}

function tell(job) {
  if (!job.outcome || !job.report || job.reportedTo === job.view?.root) return;
  job.reportedTo = job.view.root;
  job.report(job.outcome.event, job.outcome.value);
}

function render(job) {
  const v = job.view;
  if (!v) return;
  v.bar.hidden = false;
  v.progress.max = job.plan.size || 1;
  v.progress.value = job.loaded;
  v.stats.classList.toggle("error", job.state === "failed");
  if (job.state === "done") {
    v.stats.textContent = `Uploaded ${mb(job.plan.size)} in ${duration((performance.now() - job.started) / 1000)}`;
  } else if (job.state === "failed") {
    v.stats.textContent = `Upload stopped: ${job.outcome.value.message}`;
  } else {
    const pct = job.plan.size ? Math.floor((100 * job.loaded) / job.plan.size) : 0;
    let text = `Uploading: ${pct}% · ${mb(job.loaded)} of ${mb(job.plan.size)}`;
    if (job.rate > 0) text += ` · ${mb(job.rate)}/s · about ${duration((job.plan.size - job.loaded) / job.rate)} left`;
    v.stats.textContent = text;
  }
}

export default function (component) {
  const { data, parentElement, setStateValue, setTriggerValue } = component;
  const root = parentElement.querySelector(".s3u");
  if (!root) return;
  const view = {
    root,
    drop: root.querySelector(".drop"),
    input: root.querySelector("input"),
    chosen: root.querySelector(".chosen"),
    bar: root.querySelector(".bar"),
    progress: root.querySelector("progress"),
    stats: root.querySelector(".stats"),
  };
  const plan = data?.upload || null;
  const probe = data?.probe || 65536;

  // Uploads this page no longer asks for (cancelled, or a new form) stop here.
  for (const job of REG.jobs.values()) {
    if (job.owner === data?.owner && job.state === "running" && job.id !== plan?.id) job.stop();
  }

  const choose = async (file) => {
    if (!file) return;
    const id = newId();
    REG.files.set(id, file);
    view.chosen.textContent = `${file.name} (${mb(file.size)})`;
    const head = await bytesOf(file, 0, probe);
    const ranges = await previewRanges(file, head, data?.workbook);
    const chosen = { id, name: file.name, size: file.size, type: file.type, head: toBase64(head),
                     edges_sha256: await edgesSha256(file) };
    if (ranges.length) chosen.ranges = ranges.map(([at, bytes]) => [at, toBase64(bytes)]);
    setStateValue("file", chosen);
  };
  const busy = !!plan;
  view.drop.classList.toggle("busy", busy);
  view.input.disabled = busy;
  view.input.onchange = () => choose(view.input.files[0]);
  view.drop.ondragover = (e) => { e.preventDefault(); if (!busy) view.drop.classList.add("over"); };
  view.drop.ondragleave = () => view.drop.classList.remove("over");
  view.drop.ondrop = (e) => {
    e.preventDefault();
    view.drop.classList.remove("over");
    if (!busy) choose(e.dataTransfer.files[0]);
  };
  const current = data?.file;
  if (current && REG.files.has(current.id)) view.chosen.textContent = `${current.name} (${mb(current.size)})`;
  else if (!current) view.chosen.textContent = "";

  if (!plan) {
    view.bar.hidden = true;
    return;
  }
  let job = REG.jobs.get(plan.id);
  if (!job) {
    const file = REG.files.get(plan.file);
    if (!file) {
      setTriggerValue("failed", { id: plan.id, file: plan.file, kind: "lost",
                                  message: "the browser no longer has the file; choose it again" });
      return;
    }
    job = startJob(plan, file);
    job.owner = data?.owner;
  }
  job.view = view;
  job.report = setTriggerValue;
  render(job);
  if (!job.seen) {
    // Submit is at the bottom of the form and the bar at its top: bring the bar into view, once.
    job.seen = true;
    view.bar.scrollIntoView({ block: "center" });
  }
  tell(job);
}
