// The browser the extension's Node tests run the worker in: chrome.storage.local, `chrome`, the
// daemon's sockets and the timers, faked once for every test file, and the worker's scripts loaded
// as the service worker loads them. Each test file runs in a process of its own, so installing
// these on globalThis touches no other file.
// node --test runs every .mjs under test/ as a test file, this one too: run that way, it checks its
// own storage's key order (the counters tests rely on it), rather than being counted as an empty pass.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import vm from "node:vm";
import { parseDocument } from "htmlparser2";
import { selectAll, selectOne, is } from "css-select";
import { textContent } from "domutils";

export const ORIGIN = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";
export const clone = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

/** chrome.storage.local over a Map. get(null) lists every key in key order, as chrome.storage.local
 * does ("…:10" before "…:9"), not in write order. `failSet = n` (n > 0): the n-th set() from now
 * fails as a full storage does; `writes` logs each set() that succeeded ({keys, bytes}); `readsOfAll`
 * counts get(null). `hangSet = n` (n > 0): the n-th set() from now hangs, writing nothing, until
 * `releaseHung(fail)`: then it fails as a full storage does (fail true) or is written. */
export function fakeStorage(entries = []) {
  const stored = new Map(entries);
  const storage = {
    stored,
    writes: [],
    readsOfAll: 0,
    failSet: 0,
    hangSet: 0,
    hung: [], // the set() calls hanging: resolve(fail) ends one
    releaseHung(fail) {
      for (const resolve of storage.hung.splice(0)) resolve(fail);
    },
    async get(keys) {
      if (keys == null) storage.readsOfAll += 1;
      const names = keys == null ? [...stored.keys()].sort() : [].concat(keys);
      return Object.fromEntries(names.filter((k) => stored.has(k)).map((k) => [k, clone(stored.get(k))]));
    },
    async set(obj) {
      if (storage.failSet && --storage.failSet === 0) throw new Error("QUOTA_BYTES quota exceeded");
      if (storage.hangSet && --storage.hangSet === 0) {
        const fail = await new Promise((resolve) => storage.hung.push(resolve));
        if (fail) throw new Error("QUOTA_BYTES quota exceeded");
      }
      storage.writes.push({ keys: Object.keys(obj), bytes: JSON.stringify(obj).length });
      for (const [k, v] of Object.entries(obj)) stored.set(k, clone(v));
    },
    async remove(keys) { for (const k of [].concat(keys)) stored.delete(k); },
  };
  return storage;
}

/** The daemon's end of a WebSocket: every socket the worker opens is in `FakeSocket.opened`; open()
 * is the daemon accepting it (the worker's hello goes, and is returned). */
export class FakeSocket {
  static OPEN = 1;
  static opened = [];
  constructor(url, protocols) {
    Object.assign(this, { url, protocols, readyState: 0, sent: [], closed: false });
    FakeSocket.opened.push(this);
  }
  send(frame) { this.sent.push(JSON.parse(frame)); }
  close() { this.closed = true; this.readyState = 3; }
  open() { this.readyState = 1; this.onopen(); return this.sent[0]; }
}

/** Installs the `chrome` the service worker sees, over `storage`, with no seed.json and FakeSocket
 * for WebSocket. Returns what the worker broadcast to pages and tabs, and the listeners it added
 * (by event: message, installed, tabRemoved, added, removed). */
export function installWorkerChrome(storage) {
  const broadcasts = [];
  const listeners = {};
  const event = (name) => ({ addListener: (fn) => { listeners[name] = fn; } });
  globalThis.chrome = {
    runtime: { id: "modlens-id", getURL: (p) => `${ORIGIN}/${p}`, getManifest: () => ({ content_scripts: [] }),
      sendMessage: async (msg) => { broadcasts.push(clone(msg)); }, onMessage: event("message"), onInstalled: event("installed") },
    storage: { local: storage },
    tabs: { sendMessage: async (tabId, msg) => { broadcasts.push(clone(msg)); }, onRemoved: event("tabRemoved"), query: async () => [] },
    permissions: { contains: async () => true, getAll: async () => ({ origins: [] }), onAdded: event("added"), onRemoved: event("removed") },
    scripting: { getRegisteredContentScripts: async () => [] },
  };
  globalThis.fetch = async () => ({ ok: false }); // no seed.json
  globalThis.WebSocket = FakeSocket;
  unrefTimers();
  return { broadcasts, listeners };
}

/** Retries, reconnects and keep-alives are timers of up to 30 s: they must not keep a test's process alive. */
function unrefTimers() {
  for (const name of ["setTimeout", "setInterval"]) {
    const real = globalThis[name];
    globalThis[name] = (fn, ms) => { const t = real(fn, ms); t.unref(); return t; };
  }
}

// The DOM of a page the browser has not laid out, over htmlparser2's tree (one wrapper per node, so
// `closest(...) === el` holds as in a browser): no layout boxes, no window to compute styles in, and
// innerText falling back to textContent as the HTML standard says for an element not being rendered.
// The content scripts' tests read comments from it as content/dom.js textOf reads a page in a
// browser (unrenderedText: the line breaks innerText gives once rendered). `n`: the htmlparser2 node,
// for domutils' edits (prepend, removeElement, ...).
const wrappers = new WeakMap();
const wrap = (n) => {
  if (!n) return null;
  if (!wrappers.has(n)) wrappers.set(n, new ParsedNode(n));
  return wrappers.get(n);
};
const isElement = (n) => n && (n.type === "tag" || n.type === "script" || n.type === "style");
const NODE_TYPES = { text: 3, comment: 8, cdata: 4, directive: 10, root: 9 };
class ParsedNode {
  constructor(n) { this.n = n; this.nodeType = isElement(n) ? 1 : NODE_TYPES[n.type] || 0; }
  get localName() { return isElement(this.n) ? this.n.name : undefined; }
  get data() { return this.n.data; }
  get childNodes() { return (this.n.children || []).map(wrap); }
  get parentElement() { return isElement(this.n.parent) ? wrap(this.n.parent) : null; }
  get previousElementSibling() { let s = this.n.prev; while (s && !isElement(s)) s = s.prev; return wrap(s); }
  get ownerDocument() { return { defaultView: null }; }
  get textContent() { return textContent(this.n); }
  get innerText() { return this.textContent; }
  get childElementCount() { return (this.n.children || []).filter(isElement).length; }
  get isConnected() { let n = this.n; while (n.parent) n = n.parent; return n.type === "root"; }
  getClientRects() { return []; }
  getAttribute(name) { const a = this.n.attribs; return a && Object.hasOwn(a, name) ? a[name] : null; }
  hasAttribute(name) { return this.getAttribute(name) !== null; }
  matches(sel) { return is(this.n, sel); }
  closest(sel) { for (let n = this.n; isElement(n); n = n.parent) if (is(n, sel)) return wrap(n); return null; }
  querySelectorAll(sel) { return selectAll(sel, this.n.children || []).map(wrap); }
  querySelector(sel) { return wrap(selectOne(sel, this.n.children || [])); }
}

/** The document `html` parses to, not laid out (above). */
export const parsedDocument = (html) => wrap(parseDocument(html));
/** The first element `html` parses to, outside any document (a site rendering an element anew). */
export const parsedElement = (html) => wrap(parseDocument(html).children.find(isElement));

const require = createRequire(import.meta.url);

const SITES = new URL("../../tests/fixtures/sites/", import.meta.url);
/** A file of site fixture `name` (tests/fixtures/sites/NAME/): fixture.json, page.html, expected.json, ... */
export const fixtureFile = (name, file) => readFileSync(new URL(`${name}/${file}`, SITES), "utf8");

/** The extension's settings the browser tests' runner gives fixture `name`: its generic_selector saved as
 * the custom selector for its page's host (key: none, derived), else none. */
export function fixtureSettings(name) {
  const fx = JSON.parse(fixtureFile(name, "fixture.json"));
  return fx.generic_selector ? { customSelectors: [{ host: new URL(fx.start_url).hostname, ...fx.generic_selector, key: "" }] } : {};
}

/** The keyed records (each with its element, `el`) the fixture's adapter extracts from its `file` as loaded
 * (before any lazy load), read as parsed, not laid out (parsedDocument), at the address the fixture
 * serves that file from (a frame's: its route, given the article's address as Facebook's plugin is);
 * `html`: other markup read in its place; `settings`: the extension's (fixtureSettings unless given). */
export function fixtureRecords(name, { file = "page.html", settings = fixtureSettings(name), html = fixtureFile(name, file) } = {}) {
  const fx = JSON.parse(fixtureFile(name, "fixture.json"));
  for (const part of ["lib/sampling", "lib/hash", "content/dom", "content/registry", "content/observer", `content/adapters/${fx.adapter}`]) {
    require(`../${part}.js`);
  }
  const ns = require("../lib/ns.js");
  const route = Object.entries(fx.routes).find(([, served]) => served === file)[0];
  const loc = new URL(route.endsWith("*") ? `${route.slice(0, -1)}?href=${encodeURIComponent(fx.start_url)}` : route);
  const adapter = ns.adapters.find((a) => a.name === fx.adapter);
  const doc = parsedDocument(html);
  globalThis.location = loc;
  try {
    assert.ok(adapter.matches(loc, settings, doc), `${fx.adapter} takes ${name}'s ${file}`);
    const page = { page_key: String(adapter.pageKey(loc, doc)) };
    assert.equal(page.page_key, fx.page_key, name);
    const obs = new ns.CommentObserver(adapter, {}, { document: doc });
    // an element the adapter makes no keyed record of (a wrapper the comment selector also matches) is none
    return doc.querySelectorAll(adapter.comments).map((el) => [el, obs.extract(el, page)])
      .filter(([, r]) => r && r.key).map(([el, r]) => ({ ...r, el }));
  } finally {
    delete globalThis.location;
  }
}

/** Loads lib/ modules (CommonJS, on the shared namespace) and then the classic scripts `files`
 * (paths under extension/, no .js) in this context, in the order given; returns the namespace. */
export function loadExtension(libs, files) {
  const ns = require("../lib/ns.js");
  for (const lib of libs) require(`../lib/${lib}.js`);
  for (const file of files) {
    const path = new URL(`../${file}.js`, import.meta.url);
    vm.runInThisContext(readFileSync(path, "utf8"), { filename: path.pathname });
  }
  return ns;
}

const WORKER_LIBS = ["constants", "sites", "messages", "protocol", "router", "hash", "sampling", "tasks", "outbox", "site_access"];
// the worker's own parts, classic scripts on `globalThis.modlens`, in background.js's order
const WORKER_FILES = ["worker/config", "worker/counters", "worker/tabs", "worker/connection", "worker/delivery", "lib/media",
  "worker/media", "worker/daemon_messages", "worker/page_messages"];

/** Loads the worker's parts, and background.js after them when `background` (it starts the worker). */
export const loadWorker = ({ background = false } = {}) =>
  loadExtension(WORKER_LIBS, background ? [...WORKER_FILES, "background"] : WORKER_FILES);

/** What background.js's ready() does before it answers anything: storage read whole once, the
 * outbox, the settings and the counters loaded from it. */
export async function startWorker(ns) {
  const storedAtStart = await chrome.storage.local.get(null);
  await ns.delivery.outbox.load(storedAtStart);
  await Promise.all([ns.config.load(), ns.counters.load(storedAtStart, ns.delivery.outbox)]);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  test("the fake storage lists every key in key order, not in write order, and fails the set() it is told to", async () => {
    const storage = fakeStorage([["b", 1]]);
    await storage.set({ "cc:10": 10, "cc:9": 9, a: { x: [1] } });
    assert.deepEqual(Object.keys(await storage.get(null)), ["a", "b", "cc:10", "cc:9"]);
    assert.deepEqual(await storage.get(["cc:9", "missing"]), { "cc:9": 9 });
    storage.failSet = 2;
    await storage.set({ c: 1 });
    await assert.rejects(storage.set({ d: 1 }), /quota/);
    assert.deepEqual([storage.stored.has("d"), storage.failSet, storage.writes.map((w) => w.keys)], [false, 0, [["cc:10", "cc:9", "a"], ["c"]]]);
  });

  test("the fake storage hangs the set() it is told to until released, then fails it or writes it", async () => {
    const storage = fakeStorage();
    storage.hangSet = 1;
    const hanging = storage.set({ e: 1 });
    await storage.set({ f: 1 }); // the next set() does not wait for it
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual([storage.stored.has("e"), storage.stored.has("f"), storage.hung.length], [false, true, 1]);
    storage.releaseHung(true);
    await assert.rejects(hanging, /quota/);
    storage.hangSet = 1;
    const held = storage.set({ g: 1 });
    storage.releaseHung(false);
    await held;
    assert.deepEqual([storage.stored.has("e"), storage.stored.get("g"), storage.hung.length], [false, 1, 0]);
  });
}
