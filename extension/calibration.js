// Calibration round: the study's gold comments, one at a time, rated with the SAME panel as
// comments on web pages (content/ui.js). Each answer is an ordinary `rate` request to the
// worker, so it goes through the outbox like any rating (comment platform "study"; the daemon
// logged these comments at start). Scores are never shown here: gold is not highlighted.
const ns = globalThis.modlens;
const $ = (id) => document.getElementById(id);
const PLATFORM = "study";

let current = null; // the gold item whose panel is open: {key, text}
let shownAt = 0;
const skipped = new Set(); // Cancel moves on; skipped items come back after the others

function block(text, withOptionsLink) {
  $("blocked-text").textContent = text;
  $("open-options").hidden = !withOptionsLink;
  $("blocked").hidden = false;
  $("item").hidden = true;
  current = null;
}

function show(item, index, total, study) {
  current = item;
  shownAt = performance.now();
  $("item-title").textContent = `Comment ${index + 1} of ${total}`;
  $("item-text").textContent = item.text;
  const host = document.createElement("div");
  const root = host.attachShadow({ mode: "open" });
  const style = document.createElement("style");
  style.textContent = ns.RATING_PANEL_CSS;
  const form = ns.buildRatingPanel({ study }, { platform: PLATFORM, key: item.key },
    (answer) => submit(item, answer), () => { skipped.add(item.key); current = null; refresh(); });
  root.append(style, form);
  $("panel").replaceChildren(host);
  $("item").hidden = false;
  const first = form.querySelector("input");
  if (first) first.focus();
}

async function submit(item, answer) {
  const res = await chrome.runtime.sendMessage(ns.messages.rate({ platform: PLATFORM, key: item.key },
    { ...answer, time_spent_ms: Math.round(performance.now() - shownAt) })).catch((err) => ({ error: String(err) }));
  if (!res || !res.queued) {
    const msg = $("panel").firstChild && $("panel").firstChild.shadowRoot.querySelector(".msg");
    if (msg) msg.textContent = `Not saved: ${(res && (res.reason || res.error)) || "no answer from the extension"}`;
    return;
  }
  skipped.delete(item.key);
  current = null;
  refresh();
}

async function refresh() {
  const st = await chrome.runtime.sendMessage(ns.messages.getState()).catch(() => null);
  if (!st || st.error) return block("The extension did not answer; reload this page.");
  const cal = st.calibration || { total: 0, done: 0, items: [] };
  $("progress").textContent = `calibration: ${cal.done}/${cal.total} done`;
  if (!st.study) return block("Not connected to the modlens daemon yet (run `modlens serve`, then pair in the options).", true);
  if (!st.consented) return block("Please read and accept the study's consent text first.", true);
  if (!cal.total) return block("This study has no calibration round.");
  $("blocked").hidden = true;
  const todo = cal.items.filter((i) => !i.done);
  if (!todo.length) {
    $("item").hidden = true;
    const wasOpen = current !== null || $("finished").hidden;
    current = null;
    $("finished").hidden = false;
    if (wasOpen) $("finished").focus();
    return;
  }
  $("finished").hidden = true;
  if (current && todo.some((i) => i.key === current.key)) return; // keep the panel being filled in
  const next = todo.find((i) => !skipped.has(i.key)) || todo[0];
  if (todo.every((i) => skipped.has(i.key))) skipped.clear();
  show(next, cal.items.findIndex((i) => i.key === next.key), cal.total, st.study);
}

$("open-options").addEventListener("click", (ev) => { ev.preventDefault(); chrome.runtime.openOptionsPage(); });
chrome.runtime.onMessage.addListener((msg) => { if (ns.isStateBroadcast(msg)) refresh(); });
refresh();
