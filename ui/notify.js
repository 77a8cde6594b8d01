// "Your task ended" in the browser (ui/notify.py mounts this; no network, no library).
// An ES module: Streamlit calls the default export every time the page renders the component,
// with `data.tasks` = the person's own tasks on the page, each {id, state, ended, title, text, url}.
// The first sight of a task only records its state; a later render that shows it ended (and
// not ended before) changes the tab's title and, with permission, shows a desktop notification.
// On a task's page (`data.page` = {id, ended}), the task ending while watched scrolls the page to its top.
const REG = (globalThis.__s3taskNotify ??= { seen: new Map(), told: new Set(), ours: null, base: null });

const MARK = { completed: "\u2713", failed_for_good: "\u2717", abandoned: "\u25a0" };

function keepTitle() {
  // Streamlit sets the title on its own (page changes, reruns): put ours back while it stands.
  if (REG.observer) return;
  REG.observer = new MutationObserver(() => {
    if (REG.ours && document.title !== REG.ours) {
      REG.base = document.title;
      document.title = REG.ours;
    }
  });
  REG.observer.observe(document.head, { subtree: true, childList: true, characterData: true });
  const seen = () => {
    // The person is looking again: the page's own title comes back.
    if (!REG.ours || document.visibilityState !== "visible") return;
    const base = REG.base;
    REG.ours = null;
    if (base !== null) document.title = base;
  };
  document.addEventListener("visibilitychange", seen);
  window.addEventListener("focus", seen);
  document.addEventListener("pointerdown", seen, true);
  document.addEventListener("keydown", seen, true);
}

function announce(task) {
  const url = new URL(task.url, document.baseURI).href;
  if (!REG.ours) REG.base = document.title;
  REG.ours = `${MARK[task.state] ?? "\u2022"} ${task.title}`;
  document.title = REG.ours;
  keepTitle();
  if (!("Notification" in globalThis) || Notification.permission !== "granted") return;
  try {
    const note = new Notification(task.text, { body: "Click to open the task.", tag: `s3task-${task.id}` });
    note.onclick = () => {
      window.focus();
      window.location.assign(url);
      note.close();
    };
  } catch (e) {
    // Some browsers allow notifications only from a service worker; the title still says it.
    console.info("s3task: no desktop notification:", e);
  }
}

function permissionUi(root) {
  const button = root.querySelector("button");
  const supported = "Notification" in globalThis;
  const show = () => {
    // Offered until the person decides; the browser remembers the answer for this site.
    root.hidden = !supported || Notification.permission !== "default";
  };
  button.onclick = async () => {
    try {
      await Notification.requestPermission();
    } finally {
      show();
    }
  };
  show();
}

function toTop(from) {
  // Streamlit scrolls an element of its own (its main area), not the window: every scrolled box
  // above us goes to 0, out through the shadow root the component is drawn in.
  for (let box = from; box; box = box.parentElement ?? box.getRootNode?.().host) {
    if (box.scrollTop > 0) box.scrollTop = 0;
  }
  window.scrollTo(0, 0);
}

function revealEnd(page, parentElement) {
  // A task's page whose task ended while the person watched: its title and downloads are at the top.
  if (!page) return;
  const before = REG.pageSeen?.get(page.id);
  (REG.pageSeen ??= new Map()).set(page.id, page.ended);
  if (before === false && page.ended) toTop(parentElement);
}

export default function (component) {
  const { data, parentElement } = component;
  const root = parentElement.querySelector(".s3n");
  if (root) permissionUi(root);
  revealEnd(data?.page, parentElement);
  for (const task of data?.tasks ?? []) {
    const before = REG.seen.get(task.id);
    REG.seen.set(task.id, task.state);
    if (before === undefined || before === task.state || !task.ended) continue;
    const once = `${task.id}:${task.state}`;
    if (REG.told.has(once)) continue;
    REG.told.add(once);
    announce(task);
  }
}
