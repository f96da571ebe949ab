// Popup: connection state, the study's task pages with progress, site access, counts for this
// page and in total, adapter status, pause, options.
const $ = (id) => document.getElementById(id);
const LABELS = { ready: "connected", connecting: "connecting", disconnected: "disconnected", refused: "refused", no_token: "not paired", error: "error" };

const ns = globalThis.modlens;

// The page this popup is about: the active tab (its URL is readable thanks to activeTab); or,
// when popup.html is opened as a tab (tests, links), the one named by ?page=<url>[&tab=<id>].
async function targetPage() {
  const q = new URLSearchParams(location.search);
  if (q.get("page")) return { tabId: q.has("tab") ? Number(q.get("tab")) : null, url: q.get("page") };
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab ? { tabId: tab.id, url: tab.url || "" } : { tabId: null, url: "" };
}
const target = targetPage();

// Site access: built-in platforms always; any other site once switched on here. The pattern is
// known before any click, because permissions.request must be called inside the click itself.
let site = null; // {pattern, host, on}
async function showSite() {
  const { url } = await target;
  const pattern = ns.sitePattern(url);
  $("site").hidden = !pattern;
  if (!pattern) return;
  const host = new URL(url).hostname;
  if (ns.siteAccess.builtInOrigins().has(pattern)) {
    site = null;
    $("site-note").textContent = `${host} is built in: modlens runs here without asking.`;
    $("site-toggle").hidden = true;
    return;
  }
  const on = await chrome.permissions.contains({ origins: [pattern] });
  site = { pattern, host, on };
  $("site-note").textContent = on ? `modlens runs on ${host}.` : `modlens does not run on ${host}.`;
  $("site-toggle").textContent = on ? "Disable on this site" : "Enable modlens on this site";
  $("site-toggle").hidden = false;
}

$("site-toggle").addEventListener("click", () => {
  if (!site) return;
  const origins = [site.pattern];
  const change = site.on ? chrome.permissions.remove({ origins }) : chrome.permissions.request({ origins });
  if (!site.on) $("site-note").textContent = `Asking the browser for access to ${site.host}…`;
  // the worker registers or removes the content scripts when the permission changes
  change.then(async () => {
    const wasOn = site.on;
    await showSite();
    if (wasOn && site && site.on) $("site-note").textContent += " Access to more sites was granted in the browser's extension settings; change it there.";
  }, (err) => { $("site-note").textContent = `Site access unchanged: ${err.message}`; });
});

// Task pages: a link each (opens the page), rated/target, the one this popup is about marked.
async function showTasks(tasks) {
  const items = (tasks && tasks.items) || [];
  $("tasks").hidden = !items.length && !(tasks && !tasks.freeBrowsing);
  const { url } = await target;
  const here = ns.pageId(url);
  $("tasks-overall").textContent = ns.taskSummary(tasks);
  ns.renderTaskList($("task-list"), tasks, here, (taskUrl) => { chrome.tabs.create({ url: taskUrl }); window.close(); });
  // Free browsing off: say so where it matters, on a page that is not one of the tasks.
  const offTask = !!(tasks && !tasks.freeBrowsing) && !!here && !items.some((t) => t.id === here);
  $("tasks-only").hidden = !offTask;
  $("tasks-only").textContent = "This page is not one of the study's pages: this study records comments on the pages listed here only.";
}

function show(st) {
  $("conn").textContent = LABELS[st.conn] || st.conn;
  $("conn").className = "pill " + (st.conn === "ready" ? "ready" : ["refused", "no_token", "error"].includes(st.conn) ? "bad" : "");
  $("conn-detail").textContent = st.lastError || (st.study ? `Study: ${st.study.title}` : "");
  $("consent-needed").hidden = st.consented || !st.study;
  $("paused").checked = !!st.paused;
  const cal = st.calibration || { total: 0, done: 0 };
  $("calibration").hidden = !cal.total;
  $("cal-progress").textContent = `calibration: ${cal.done}/${cal.total} done`;
  $("open-calibration").hidden = cal.done >= cal.total;
  showTasks(st.tasks);
  const t = st.totals;
  for (const k of ["saved", "scored", "rated", "queued"]) $("t-" + k).textContent = t[k] ?? 0;
  // dead letters: refused by the daemon for good, or collected for another study; kept, not sent again. Those set
  // aside at a withdrawal may have been sent before it (their answer not yet come, or sent by a worker since
  // restarted): the daemon may hold those, and the withdrawal covers them there
  $("not-delivered").hidden = !t.not_delivered;
  $("not-delivered").textContent = `not delivered: ${t.not_delivered || 0} (refused by the daemon, or collected for another study, under an earlier consent text or before you withdrew consent; kept in the browser, not sent again; any set aside at your withdrawal that the daemon received are covered by the withdrawal)`;
  // of those: collected under a consent text no longer in force (a consent counts for the text agreed to)
  $("consent-discarded").hidden = !t.consent_discarded;
  $("consent-discarded").textContent = `${t.consent_discarded || 0} discarded: collected under an earlier consent text`;
  $("withdrawn-discarded").hidden = !t.withdrawn_discarded;
  // some may have been sent, their answer not yet come (or sent by a worker since restarted, which forgot it):
  // the daemon may hold those, and the withdrawal covers them there
  $("withdrawn-discarded").textContent = `${t.withdrawn_discarded || 0} discarded when you withdrew consent (not sent again; any the daemon received are covered by the withdrawal)`;
  // images attached to comments (studies with media.collect): fetched and sent, logged, not sent
  const media = st.study && st.study.media;
  $("media-counts").hidden = !(media && media.collect);
  $("media-counts").textContent = `images: ${t.media_sent || 0} sent · ${t.media_scored || 0} logged · `
    + `${t.media_failed || 0} failed · ${t.media_skipped || 0} over the limit`
    + (t.media_not_taken ? ` · ${t.media_not_taken} dropped (a pause, a withdrawal or the site switched off while their comment's images were being fetched)` : "");
  // the daemon's live variants (all its connections): made, waiting, deferred to `modlens rescore --variants`.
  // Its last status answer: said only while connected, not as what a daemon that stopped is doing now
  $("variant-counts").textContent = ns.variantsLine(st.variants);
  $("variant-counts").hidden = !st.variants || st.conn !== "ready";
  const pages = st.pages || [];
  if (pages.length) {
    const lines = pages.map((p) => `${p.adapter}: ${p.reason || p.state}${p.errors ? ` · ${p.errors} errors` : ""}${p.state === "adapter found nothing" ? " (markup changed?)" : ""}`
      + (p.counts && p.counts.unsent ? ` · ${p.counts.unsent} comments not taken by the extension yet (${p.unsent_error}); trying again` : ""));
    $("adapter").textContent = lines.join("; ");
    showFields(pages);
    const sum = { found: 0, queued: 0, scored: 0, rated: 0 };
    for (const p of pages) for (const k of Object.keys(sum)) sum[k] += (p.counts && p.counts[k]) || 0;
    for (const k of Object.keys(sum)) $("p-" + k).textContent = sum[k];
    $("page-counts").hidden = false;
  }
}

// Per-field "not found" counts of the page's observers (content/observer.js): a field that no
// strategy of the adapter found is counted, never filled in; plus how the parents were found.
const FIELD_NAMES = { key: "key", text: "text", author: "author", parent: "parent of a reply", time: "absolute time" };
function showFields(pages) {
  const missing = {};
  const parents = {};
  for (const p of pages) {
    for (const [k, n] of Object.entries(p.missing || {})) missing[k] = (missing[k] || 0) + n;
    for (const [k, n] of Object.entries(p.parents || {})) parents[k] = (parents[k] || 0) + n;
  }
  const notFound = Object.keys(FIELD_NAMES).filter((k) => missing[k]).map((k) => `${FIELD_NAMES[k]} ${missing[k]}`);
  $("fields").textContent = notFound.length ? `not found: ${notFound.join(" · ")}` : "every field found";
  $("fields").className = notFound.some((t) => !t.startsWith("absolute time")) ? "warn" : "muted";
  const via = Object.entries(parents).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k.replace(/_/g, " ")} ${n}`);
  $("parents").textContent = via.length ? `parents by: ${via.join(" · ")}` : "";
  $("fields").hidden = !pages.some((p) => p.missing);
  $("parents").hidden = !via.length;
}

async function refresh() {
  const st = await chrome.runtime.sendMessage(ns.messages.getState((await target).tabId));
  if (st && !st.error) show(st);
}

$("paused").addEventListener("change", async (ev) => {
  await chrome.runtime.sendMessage(ns.messages.setSettings({ paused: ev.target.checked }));
  refresh();
showSite();
});
for (const id of ["open-options", "open-consent"]) {
  $(id).addEventListener("click", (ev) => { ev.preventDefault(); chrome.runtime.openOptionsPage(); window.close(); });
}
$("open-calibration").addEventListener("click", (ev) => {
  ev.preventDefault();
  chrome.tabs.create({ url: chrome.runtime.getURL("calibration.html") });
  window.close();
});
chrome.runtime.onMessage.addListener((msg) => { if (ns.isStateBroadcast(msg)) refresh(); });
refresh();
showSite();
