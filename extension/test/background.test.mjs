// The worker's start (background.js ready()) against a fake `chrome`: what it stored is read back
// once, and the counters and the outbox rest on that one read.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import vm from "node:vm";

const ORIGIN = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";
const rating = (id, key, seq) => ({ id, seq, route: null, study: "s1", consent: null, attempts: 0, createdAt: 1,
  message: { type: "rating", id, comment: { platform: "youtube", key }, values: { toxicity: "toxic" }, anchors: null, time_spent_ms: 0 } });
const stored = new Map([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }],
  ["study", { study_id: "s1", title: "t", consent_text: "the text", sampling: { mode: "all", salt: "x" } }],
  ["consent", { study_id: "s1", at: "2026-01-01T00:00:00Z", media: false, text: "the text" }],
  ["ob:r-waiting", rating("r-waiting", "c1", 3)], // in the outbox: marked, not saved
  ["cc:rated:s1:r-acked", { kind: "rated", study: "s1", ids: ["r-acked"] }], // acknowledged, with its record
  ["cc:rating:s1:r-acked", { kind: "rating", study: "s1", ids: ["r-acked"], id: "r-acked", comment: "youtube|c2", at: 1, values: { toxicity: "toxic" }, seq: 2 }],
  ["dead:r-refused", { ...rating("r-refused", "c3", 1), error: { code: "invalid_fields", message: "refused" } }], // refused for good
]);
let readsOfAll = 0;
const clone = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));
const area = {
  async get(keys) {
    if (keys == null) readsOfAll += 1;
    const names = keys == null ? [...stored.keys()].sort() : [].concat(keys);
    return Object.fromEntries(names.filter((k) => stored.has(k)).map((k) => [k, clone(stored.get(k))]));
  },
  async set(obj) { for (const [k, v] of Object.entries(obj)) stored.set(k, clone(v)); },
  async remove(keys) { for (const k of [].concat(keys)) stored.delete(k); },
};
const listeners = {};
const event = (name) => ({ addListener: (fn) => { listeners[name] = fn; } });
globalThis.chrome = {
  runtime: { id: "modlens-id", getURL: (p) => `${ORIGIN}/${p}`, getManifest: () => ({ content_scripts: [] }),
    sendMessage: async () => {}, onMessage: event("message"), onInstalled: event("installed") },
  storage: { local: area },
  tabs: { sendMessage: async () => {}, onRemoved: event("tabRemoved"), query: async () => [] },
  permissions: { contains: async () => true, getAll: async () => ({ origins: [] }), onAdded: event("added"), onRemoved: event("removed") },
  scripting: { getRegisteredContentScripts: async () => [] },
};
globalThis.fetch = async () => ({ ok: false });
globalThis.WebSocket = class {
  static OPEN = 1;
  constructor(url) { this.url = url; this.readyState = 0; }
  send() {}
  close() {}
};
const realSetTimeout = globalThis.setTimeout;
globalThis.setTimeout = (fn, ms) => { const t = realSetTimeout(fn, ms); t.unref(); return t; };
const realSetInterval = globalThis.setInterval;
globalThis.setInterval = (fn, ms) => { const t = realSetInterval(fn, ms); t.unref(); return t; };

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
for (const lib of ["constants", "sites", "messages", "protocol", "router", "hash", "sampling", "tasks", "outbox", "site_access"]) require(`../lib/${lib}.js`);
for (const file of ["worker/config", "worker/counters", "worker/tabs", "worker/connection", "worker/delivery", "lib/media",
  "worker/media", "worker/daemon_messages", "worker/page_messages", "background"]) {
  const path = new URL(`../${file}.js`, import.meta.url);
  vm.runInThisContext(readFileSync(path, "utf8"), { filename: path.pathname });
}

test("a worker start reads storage whole once; the outbox, the dead letters and the counts rest on it", async () => {
  // a page asks for the state: answered after ready()
  const optionsPage = { id: "modlens-id", url: `${ORIGIN}/options.html`, tab: { id: 9 }, frameId: 0 };
  const state = await new Promise((respond) => listeners.message(ns.messages.getState(), optionsPage, respond));
  assert.ok(!state.error, state.error);
  assert.equal(readsOfAll, 1, "storage read whole more than once at start");
  const { counters, delivery } = ns;
  assert.deepEqual([delivery.outbox.size, delivery.outbox.deadItems, counters.totals.rated], [1, 1, 1]);
  const mark = (key) => counters.ratingOf("youtube", key);
  assert.deepEqual([mark("c1").id, mark("c1").saved, mark("c2").id, mark("c2").saved, mark("c3")], ["r-waiting", false, "r-acked", true, null]);
});
