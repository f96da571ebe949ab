// A withdrawal reaches the daemon of the study withdrawn from on the visit that finds it running
// that study again (worker/connection.js, worker/daemon_messages.js), against a fake `chrome` and
// fake sockets: the hello that finds the study out cannot carry it, so the worker says hello again.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import vm from "node:vm";

const A = { study_id: "A", title: "a", consent_text: "A's text", sampling: { mode: "all", salt: "x" } };
const B = { study_id: "B", title: "b", consent_text: "B's text", sampling: { mode: "all", salt: "x" } };
const stored = new Map([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }],
  ["study", A]]);
const clone = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));
const area = {
  async get(keys) {
    const names = keys == null ? [...stored.keys()].sort() : [].concat(keys);
    return Object.fromEntries(names.filter((k) => stored.has(k)).map((k) => [k, clone(stored.get(k))]));
  },
  async set(obj) { for (const [k, v] of Object.entries(obj)) stored.set(k, clone(v)); },
  async remove(keys) { for (const k of [].concat(keys)) stored.delete(k); },
};
globalThis.chrome = {
  runtime: { id: "modlens-id", getURL: (p) => `chrome-extension://x/${p}`, getManifest: () => ({ content_scripts: [] }),
    sendMessage: async () => {} },
  storage: { local: area },
  tabs: { sendMessage: async () => {} },
  permissions: { contains: async () => true },
};
globalThis.fetch = async () => ({ ok: false });
const sockets = [];
globalThis.WebSocket = class {
  static OPEN = 1;
  constructor(url) { this.url = url; this.readyState = 0; this.sent = []; sockets.push(this); }
  send(frame) { this.sent.push(JSON.parse(frame)); }
  close() { this.readyState = 3; }
  open() { this.readyState = 1; this.onopen(); return this.sent[0]; } // the daemon accepts it: the hello goes
};
const realSetTimeout = globalThis.setTimeout;
globalThis.setTimeout = (fn, ms) => { const t = realSetTimeout(fn, ms); t.unref(); return t; };
const realSetInterval = globalThis.setInterval;
globalThis.setInterval = (fn, ms) => { const t = realSetInterval(fn, ms); t.unref(); return t; };

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
for (const lib of ["constants", "sites", "messages", "protocol", "router", "hash", "sampling", "tasks", "outbox", "site_access"]) require(`../lib/${lib}.js`);
for (const file of ["worker/config", "worker/counters", "worker/tabs", "worker/connection", "worker/delivery", "lib/media",
  "worker/media", "worker/daemon_messages", "worker/page_messages"]) {
  const path = new URL(`../${file}.js`, import.meta.url);
  vm.runInThisContext(readFileSync(path, "utf8"), { filename: path.pathname });
}
const storedAtStart = await chrome.storage.local.get(null);
await ns.delivery.outbox.load(storedAtStart);
await Promise.all([ns.config.load(), ns.counters.load(storedAtStart, ns.delivery.outbox)]);
const { config, connection } = ns;

// the daemon, running `study`, answers the hello on the newest socket as the real one does
async function daemonRuns(study) {
  const hello = sockets.at(-1).open();
  if (hello.study_id && hello.study_id !== study.study_id) {
    await ns.onDaemonMessage({ type: "error", id: hello.id, code: "study_mismatch", message: "another study" });
    return [hello, ...(await daemonRuns(study))];
  }
  await ns.onDaemonMessage({ type: "hello_ok", id: hello.id, session_id: `sess-${sockets.length}`, server_version: "0",
    protocol: 1, study, detectors: [], variants_enabled: false });
  return [hello];
}
const restartDaemon = () => connection.reconnectNow(); // its socket closed; the worker connects again

test("a daemon that runs the withdrawn study again is told on the visit that finds it, after a consent to another", async () => {
  await config.setConsent(true, "A");
  await config.setConsent(false, "A"); // withdrawn while A's daemon is down
  const withdrawnAt = config.withdrawalToSend().at;
  connection.connect();
  let hellos = await daemonRuns(B); // it comes back running B
  assert.equal(config.study.study_id, "B");
  assert.equal(hellos.at(-1).consent_withdrawn_at, undefined, "B's daemon is not told of A");
  await config.setConsent(true, "B");
  restartDaemon();
  hellos = await daemonRuns(A); // it runs A again: the hello that learns so carried B's consent, then nothing
  assert.equal(config.study.study_id, "A");
  const last = sockets.at(-1);
  assert.equal(last.readyState, 0, "the worker did not say hello again, on a new socket");
  const told = last.open();
  assert.deepEqual([told.study_id, told.consent_withdrawn_at, told.consent_at], ["A", withdrawnAt, undefined]);
  await ns.onDaemonMessage({ type: "hello_ok", id: told.id, session_id: "sess-told", server_version: "0",
    protocol: 1, study: A, detectors: [], variants_enabled: false });
  assert.equal(sockets.at(-1), last, "the hello that carried it is not said again");
  assert.equal(connection.sessionId, "sess-told");
  clearInterval(connection.keepaliveTimer);
});
