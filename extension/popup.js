// Popup: connection state, counts for this page and in total, adapter status, pause, options.
const $ = (id) => document.getElementById(id);
const LABELS = { ready: "connected", connecting: "connecting", disconnected: "disconnected", refused: "refused", no_token: "not paired", error: "error" };

async function activeTabId() {
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab ? tab.id : null;
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
  const t = st.totals;
  for (const k of ["sent", "scored", "rated", "queued"]) $("t-" + k).textContent = t[k] ?? 0;
  const pages = st.pages || [];
  if (pages.length) {
    const lines = pages.map((p) => `${p.adapter}: ${p.reason || p.state}${p.errors ? ` · ${p.errors} errors` : ""}${p.state === "adapter found nothing" ? ` (${p.counts ? "" : ""}markup changed?)` : ""}`);
    $("adapter").textContent = lines.join("; ");
    const sum = { found: 0, queued: 0, scored: 0, rated: 0 };
    for (const p of pages) for (const k of Object.keys(sum)) sum[k] += (p.counts && p.counts[k]) || 0;
    for (const k of Object.keys(sum)) $("p-" + k).textContent = sum[k];
    $("page-counts").hidden = false;
  }
}

async function refresh() {
  const st = await chrome.runtime.sendMessage({ type: "get_state", tabId: await activeTabId() });
  if (st && !st.error) show(st);
}

$("paused").addEventListener("change", async (ev) => {
  await chrome.runtime.sendMessage({ type: "set_settings", settings: { paused: ev.target.checked } });
  refresh();
});
for (const id of ["open-options", "open-consent"]) {
  $(id).addEventListener("click", (ev) => { ev.preventDefault(); chrome.runtime.openOptionsPage(); window.close(); });
}
$("open-calibration").addEventListener("click", (ev) => {
  ev.preventDefault();
  chrome.tabs.create({ url: chrome.runtime.getURL("calibration.html") });
  window.close();
});
chrome.runtime.onMessage.addListener((msg) => { if (msg && (msg.type === "counts" || msg.type === "state")) refresh(); });
refresh();
