// The study's item set (issue 27): the assignment the daemon gave this participant at hello
// (`study.itemset` of hello_ok, daemon/itemset.py), one comment at a time in the assignment's
// order, rated with the SAME panel as comments on web pages (content/ui.js). Each answer is an
// ordinary `rate` request to the worker (outbox, consent check, exactly-once delivery); the
// daemon logged the set's comments at start under their own platform and key. Like the
// calibration page it never shows scores (the set is rated blind), and gold is not marked.
const ns = globalThis.modlens;
const $ = (id) => document.getElementById(id);

let current = null; // the item whose panel is open: {platform, key, text}
let shownAt = 0;
const skipped = new Set(); // Cancel moves on; skipped items come back after the others
const id = (item) => ns.commentKey(item.platform, item.key);

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
  const form = ns.buildRatingPanel({ study }, { platform: item.platform, key: item.key },
    (answer) => submit(item, answer), () => { skipped.add(id(item)); current = null; refresh(); });
  root.append(style, form);
  $("panel").replaceChildren(host);
  $("item").hidden = false;
  const first = form.querySelector("input");
  if (first) first.focus();
}

async function submit(item, answer) {
  const res = await chrome.runtime.sendMessage(ns.messages.rate({ platform: item.platform, key: item.key },
    { ...answer, time_spent_ms: Math.round(performance.now() - shownAt) })).catch((err) => ({ error: String(err) }));
  if (!res || !res.queued) {
    const msg = $("panel").firstChild && $("panel").firstChild.shadowRoot.querySelector(".msg");
    if (msg) msg.textContent = `Not saved: ${(res && (res.reason || res.error)) || "no answer from the extension"}`;
    return;
  }
  skipped.delete(id(item));
  current = null;
  refresh();
}

async function refresh() {
  const st = await chrome.runtime.sendMessage(ns.messages.getState()).catch(() => null);
  if (!st || st.error) return block("The extension did not answer; reload this page.");
  if (!st.study) return block("Not connected to the modlens daemon yet (run `modlens serve`, then pair in the options).", true);
  if (!st.consented) return block("Please read and accept the study's consent text first.", true);
  const set = st.itemset;
  if (!set || !set.total) {
    $("progress").textContent = "";
    return block("This study has no item set to rate: rate the comments modlens asks about on the web.");
  }
  $("assignment").textContent = `Your assignment: ${set.assignment} (task ${set.task})`;
  $("progress").textContent = `item set: ${set.done}/${set.total} done`;
  $("blocked").hidden = true;
  const todo = set.items.filter((i) => !i.done);
  if (!todo.length) {
    $("item").hidden = true;
    const wasOpen = current !== null || $("finished").hidden;
    current = null;
    $("finished").hidden = false;
    if (wasOpen) $("finished").focus();
    return;
  }
  $("finished").hidden = true;
  if (current && todo.some((i) => id(i) === id(current))) return; // keep the panel being filled in
  if (todo.every((i) => skipped.has(id(i)))) skipped.clear();
  const next = todo.find((i) => !skipped.has(id(i))) || todo[0];
  show(next, set.items.findIndex((i) => id(i) === id(next)), set.total, st.study);
}

$("open-options").addEventListener("click", (ev) => { ev.preventDefault(); chrome.runtime.openOptionsPage(); });
chrome.runtime.onMessage.addListener((msg) => { if (ns.isStateBroadcast(msg)) refresh(); });
refresh();
