// The service worker (Chromium) / background script (Firefox). It alone owns the WebSocket to
// the local daemon: content scripts on public pages cannot reach loopback. It keeps the
// outbox in storage, reconnects with back-off, pings while open, routes scores back to the
// tab and frame a comment came from, and decides which comments are sampled for rating.
/* global importScripts */
if (typeof importScripts === "function") {
  importScripts("lib/ns.js", "lib/hash.js", "lib/sampling.js", "lib/outbox.js");
}
const ns = globalThis.modlens;
const store = chrome.storage.local;

const KEEPALIVE_MS = 20000;
const RESEND_AFTER_MS = 30000; // unacknowledged on an open socket this long: send again
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30000;
const CHUNK_ITEMS = 50;

const state = {
  settings: null,
  study: null, // hello_ok.study (client_settings)
  detectors: [],
  consent: null, // {study_id, at}
  ws: null,
  conn: "disconnected", // disconnected | connecting | ready | no_token | refused | error
  lastError: "",
  sessionId: null,
  backoff: BACKOFF_MIN_MS,
  reconnectTimer: null,
  keepaliveTimer: null,
  helloId: null,
  sentAt: new Map(), // outbox id -> time sent on the current socket
  routes: new Map(), // comments message id -> {tabId, frameId}
  tabs: new Map(), // tabId -> Map(frameId -> page status)
  totals: { found: 0, sent: 0, scored: 0, rated: 0, errors: 0 },
  rated: {}, // "platform|key" -> {derived, at}
  decileCounts: null,
  salts: {}, // study_id -> random salt (used when the study provides none)
};
const outbox = new ns.Outbox(store);

// ---------------------------------------------------------------- settings and storage
let ready = null;
function init() {
  if (!ready) ready = (async () => {
    const got = await store.get(["settings", "study", "detectors", "consent", "totals", "rated", "decileCounts", "salts"]);
    state.settings = { ...ns.DEFAULT_SETTINGS, ...(got.settings || {}) };
    state.settings.sites = { ...ns.DEFAULT_SETTINGS.sites, ...(state.settings.sites || {}) };
    if (!got.settings) await applySeed();
    if (!state.settings.raterId) {
      state.settings.raterId = ns.newId("rater");
      await store.set({ settings: state.settings });
    }
    state.study = got.study || null;
    state.detectors = got.detectors || [];
    state.consent = got.consent || null;
    state.totals = { ...state.totals, ...(got.totals || {}) };
    state.rated = got.rated || {};
    state.decileCounts = got.decileCounts || {};
    state.salts = got.salts || {};
    await outbox.load();
  })();
  return ready;
}

// `modlens browse` writes seed.json (daemon address + token) into its copy of the extension,
// so a participant needs no pairing step. Read once, when no settings exist yet.
async function applySeed() {
  try {
    const res = await fetch(chrome.runtime.getURL("seed.json"));
    if (!res.ok) return;
    const seed = await res.json();
    for (const k of ["daemonUrl", "token", "raterId"]) if (typeof seed[k] === "string" && seed[k]) state.settings[k] = seed[k];
    await store.set({ settings: state.settings });
  } catch (_) {
    // no seed file: an ordinary installation, paired from the options page
  }
}

function consented() {
  return !!(state.study && state.consent && state.consent.study_id === state.study.study_id);
}

function displayMode() {
  const d = state.settings.display;
  return d === "blind" || d === "scores" ? d : (state.study && state.study.display) || "blind";
}

function siteActive(site) {
  return consented() && !state.settings.paused && state.settings.sites[site] !== false;
}

async function authorSalt() {
  const study = state.study;
  if (study.author_salt) return study.author_salt;
  if (!state.salts[study.study_id]) {
    state.salts[study.study_id] = ns.newId("salt");
    await store.set({ salts: state.salts });
  }
  return state.salts[study.study_id];
}

let totalsTimer = null;
function saveTotalsSoon() {
  clearTimeout(totalsTimer);
  totalsTimer = setTimeout(() => store.set({ totals: state.totals, decileCounts: state.decileCounts }), 300);
}

// ---------------------------------------------------------------- socket
function setConn(conn, error) {
  state.conn = conn;
  if (error !== undefined) state.lastError = error;
  broadcast({ type: "state", state: publicState() });
}

function connect() {
  if (state.ws || state.reconnectTimer) return;
  const { daemonUrl, token } = state.settings;
  if (!token) return setConn("no_token", "No pairing token: run `modlens pair` and paste it in the options.");
  let ws;
  try {
    ws = new WebSocket(daemonUrl, ["modlens.v1", "modlens.token." + token]);
  } catch (err) {
    setConn("error", `Bad daemon address ${daemonUrl}: ${err.message}`);
    return;
  }
  state.ws = ws;
  state.sentAt.clear();
  setConn("connecting");
  ws.onopen = () => {
    state.helloId = ns.newId("hello");
    const hello = { type: "hello", id: state.helloId, protocol: ns.PROTOCOL, client: "modlens-extension",
      client_version: ns.VERSION, token, rater_id: state.settings.raterId };
    if (state.consent) { hello.study_id = state.consent.study_id; hello.consent_at = state.consent.at; }
    ws.send(JSON.stringify(hello));
  };
  ws.onmessage = (ev) => {
    let msg;
    try { msg = JSON.parse(ev.data); } catch (_) { return; }
    onDaemonMessage(msg).catch((err) => console.error("modlens: handling", msg.type, err));
  };
  ws.onclose = (ev) => {
    if (state.ws !== ws) return;
    state.ws = null;
    state.sessionId = null;
    clearInterval(state.keepaliveTimer);
    // A refused handshake (401/403) surfaces as 1006 before open; say so instead of looping fast.
    const neverOpened = state.conn === "connecting";
    setConn(neverOpened ? "refused" : "disconnected",
      neverOpened ? `Daemon at ${daemonUrl} not reachable or refused the token (code ${ev.code}).` : `Connection closed (code ${ev.code}).`);
    scheduleReconnect();
  };
  ws.onerror = () => {}; // onclose follows and handles it
}

function scheduleReconnect() {
  if (state.reconnectTimer) return;
  const delay = state.backoff * (0.75 + Math.random() * 0.5);
  state.backoff = Math.min(BACKOFF_MAX_MS, state.backoff * 2);
  state.reconnectTimer = setTimeout(() => { state.reconnectTimer = null; connect(); }, delay);
}

function reconnectNow() {
  clearTimeout(state.reconnectTimer);
  state.reconnectTimer = null;
  state.backoff = BACKOFF_MIN_MS;
  if (state.ws) {
    const ws = state.ws;
    state.ws = null;
    ws.onclose = null;
    try { ws.close(1000, "reconnect"); } catch (_) { /* already closed */ }
    clearInterval(state.keepaliveTimer);
  }
  connect();
}

function socketReady() {
  return state.ws && state.ws.readyState === WebSocket.OPEN && state.sessionId;
}

function flush(force) {
  if (!socketReady() || !consented()) return;
  const now = Date.now();
  for (const entry of outbox.pending()) {
    const at = state.sentAt.get(entry.id);
    if (at !== undefined && !force && now - at < RESEND_AFTER_MS) continue;
    if (entry.notBefore && entry.notBefore > now) continue;
    state.sentAt.set(entry.id, now);
    if (entry.route) state.routes.set(entry.id, entry.route);
    state.ws.send(JSON.stringify(entry.message));
  }
}

async function onDaemonMessage(msg) {
  switch (msg.type) {
    case "hello_ok": {
      state.sessionId = msg.session_id;
      state.backoff = BACKOFF_MIN_MS;
      state.study = msg.study;
      state.detectors = msg.detectors || [];
      await store.set({ study: state.study, detectors: state.detectors });
      setConn("ready", "");
      clearInterval(state.keepaliveTimer);
      state.keepaliveTimer = setInterval(() => {
        if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify({ type: "ping", id: ns.newId("ping") }));
        flush(false);
      }, KEEPALIVE_MS);
      flush(true);
      return;
    }
    case "comments_ok":
      await outbox.ack(msg.id);
      state.sentAt.delete(msg.id);
      broadcastCounts();
      return;
    case "scores":
      return onScores(msg);
    case "rating_ok": {
      const entry = await outbox.ack(msg.id);
      state.sentAt.delete(msg.id);
      if (!msg.duplicate) state.totals.rated += 1;
      saveTotalsSoon();
      if (entry && entry.route) sendToTab(entry.route, { type: "rating_ok", comment: entry.message.comment, derived_toxicity: msg.derived_toxicity, inconsistent: msg.inconsistent });
      broadcastCounts();
      return;
    }
    case "error":
      return onError(msg);
    default:
      return; // pong, variants, status_ok: nothing to do here
  }
}

async function onError(msg) {
  if (msg.id && msg.id === state.helloId) {
    setConn("refused", `Daemon refused the handshake: ${msg.code}: ${msg.message}`);
    return;
  }
  const entry = outbox.get(msg.id);
  if (!entry) return;
  state.sentAt.delete(msg.id);
  state.totals.errors += 1;
  // A rating may race its comment's first insert after a replay: retry a few times first.
  const transient = !ns.PERMANENT_ERRORS.has(msg.code) || (msg.code === "unknown_comment" && entry.attempts < 5);
  if (transient) {
    entry.attempts += 1;
    entry.notBefore = Date.now() + (msg.retry_after_ms || Math.min(30000, 1000 * 2 ** entry.attempts));
    setTimeout(() => flush(false), entry.notBefore - Date.now() + 10);
  } else {
    console.warn("modlens: daemon refused", entry.message.type, msg.code, msg.message);
    await outbox.bury(msg.id, { code: msg.code, message: msg.message });
  }
  broadcastCounts();
}

async function onScores(msg) {
  const route = state.routes.get(msg.id);
  const sampling = state.study && state.study.sampling;
  const detectorKeys = state.detectors.map((d) => d.key);
  const studyKey = state.study ? state.study.study_id : "";
  if (!state.decileCounts[studyKey]) state.decileCounts[studyKey] = new Array(10).fill(0);
  const items = [];
  const platform = route && route.platform;
  for (const item of msg.items || []) {
    state.totals.scored += 1;
    const decision = ns.decideSample(sampling, { ...item, platform }, state.decileCounts[studyKey], detectorKeys);
    const detectors = {};
    for (const [k, d] of Object.entries(item.detectors || {})) {
      detectors[k] = { name: d.name, version: d.version, toxicity: d.toxicity, error: d.error || null };
    }
    items.push({ key: item.key, sampled: decision.sampled, detectors, rated: state.rated[`${platform}|${item.key}`] || null });
  }
  saveTotalsSoon();
  if (route) sendToTab(route, { type: "scores", items });
  broadcastCounts();
}

// ---------------------------------------------------------------- content scripts
function sendToTab(route, message) {
  if (route.tabId == null || route.tabId < 0) return;
  chrome.tabs.sendMessage(route.tabId, message, { frameId: route.frameId || 0 }).catch(() => {});
}

function broadcast(message) {
  chrome.runtime.sendMessage(message).catch(() => {}); // popup / options, when open
}

function broadcastCounts() {
  broadcast({ type: "counts", totals: { ...state.totals, queued: outbox.size } });
}

function contentConfig() {
  return {
    consented: consented(), paused: state.settings.paused, sites: state.settings.sites, display: displayMode(),
    study: state.study && { study_id: state.study.study_id, attributes: state.study.attributes, toxicity_mode: state.study.toxicity_mode,
      anchors: state.study.anchors, max_comment_chars: state.study.max_comment_chars },
    customSelectors: state.settings.customSelectors || [],
  };
}

async function queueComments(msg, sender) {
  if (!siteActive(msg.site)) return { queued: false, reason: consented() ? "paused or site switched off" : "consent needed" };
  const salt = await authorSalt();
  const route = { tabId: sender.tab ? sender.tab.id : -1, frameId: sender.frameId || 0, platform: msg.page.platform };
  const items = [];
  for (const it of msg.items) {
    const item = { key: String(it.key), text: it.text };
    if (it.parent_key) item.parent_key = String(it.parent_key);
    if (it.time_shown) item.time_shown = it.time_shown;
    const h = await ns.hashAuthor(it.author, salt);
    if (h) item.author_hash = h;
    items.push(item);
  }
  const page = { url: msg.page.url, platform: msg.page.platform, page_key: msg.page.page_key, title: msg.page.title || "" };
  const ids = [];
  for (let i = 0; i < items.length; i += CHUNK_ITEMS) {
    const message = { type: "comments", id: ns.newId("c"), page, items: items.slice(i, i + CHUNK_ITEMS) };
    await outbox.add(message, route);
    state.routes.set(message.id, route);
    ids.push(message.id);
  }
  state.totals.sent += items.length;
  saveTotalsSoon();
  ensureConnected();
  flush(false);
  broadcastCounts();
  return { queued: true, ids };
}

async function queueRating(msg, sender) {
  if (!consented()) return { queued: false, reason: "consent needed" };
  const route = { tabId: sender.tab ? sender.tab.id : -1, frameId: sender.frameId || 0, platform: msg.comment.platform };
  const message = { type: "rating", id: ns.newId("r"), comment: { platform: msg.comment.platform, key: String(msg.comment.key) },
    values: msg.values, anchors: msg.anchors || null, time_spent_ms: Math.max(0, Math.round(msg.time_spent_ms || 0)) };
  await outbox.add(message, route);
  state.rated[`${message.comment.platform}|${message.comment.key}`] = { at: Date.now(), values: msg.values };
  await store.set({ rated: state.rated });
  ensureConnected();
  flush(false);
  broadcastCounts();
  return { queued: true, id: message.id };
}

// Calibration round (calibration.html): the study's gold comments, rated like any comment but
// on platform "study". Done = the rating is in the outbox (delivery is then exactly once).
function calibrationState() {
  const gold = (state.study && state.study.gold) || [];
  const items = gold.map((g) => ({ key: g.key, text: g.text, done: !!state.rated[`study|${g.key}`] }));
  return { total: items.length, done: items.filter((i) => i.done).length, items };
}

function publicState(tabId) {
  // The popup asks for its tab; without a tab id (tests, options) every observed frame is listed.
  const frames = tabId != null ? [...(state.tabs.get(tabId) || new Map()).values()]
    : [...state.tabs.entries()].flatMap(([id, m]) => [...m.values()].map((f) => ({ ...f, tabId: id })));
  return {
    conn: state.conn, lastError: state.lastError, consented: consented(), paused: state.settings.paused,
    study: state.study, detectors: state.detectors, consent: state.consent, settings: state.settings,
    totals: { ...state.totals, queued: outbox.size }, pages: frames, display: displayMode(),
    calibration: calibrationState(),
  };
}

function ensureConnected() {
  if (!state.ws && !state.reconnectTimer) connect();
}

chrome.runtime.onMessage.addListener((msg, sender, respond) => {
  init().then(async () => {
    switch (msg && msg.type) {
      case "content_hello": return contentConfig();
      case "comments": return queueComments(msg, sender);
      case "rate": return queueRating(msg, sender);
      case "page_status": {
        const tabId = sender.tab ? sender.tab.id : -1;
        if (!state.tabs.has(tabId)) state.tabs.set(tabId, new Map());
        state.tabs.get(tabId).set(sender.frameId || 0, { ...msg.status, frameId: sender.frameId || 0 });
        return { ok: true };
      }
      case "get_state": return publicState(msg.tabId);
      case "set_settings": {
        const before = state.settings;
        state.settings = { ...state.settings, ...msg.settings };
        await store.set({ settings: state.settings });
        if (before.daemonUrl !== state.settings.daemonUrl || before.token !== state.settings.token) reconnectNow();
        await pushConfigToTabs();
        return publicState();
      }
      case "consent": {
        if (!state.study || msg.study_id !== state.study.study_id) return { ok: false, error: "study changed; reload the consent text" };
        state.consent = msg.accept ? { study_id: msg.study_id, at: new Date().toISOString() } : null;
        await store.set({ consent: state.consent });
        reconnectNow(); // the daemon records consent_at at hello
        await pushConfigToTabs();
        return { ok: true, consent: state.consent };
      }
      case "reconnect": reconnectNow(); return { ok: true };
      case "dead_letters": return outbox.dead();
      default: return { error: `unknown message ${msg && msg.type}` };
    }
  }).then(respond, (err) => respond({ error: String(err && err.message || err) }));
  return true; // async response
});

async function pushConfigToTabs() {
  for (const tabId of state.tabs.keys()) {
    chrome.tabs.sendMessage(tabId, { type: "config_changed" }).catch(() => {});
  }
}

chrome.tabs.onRemoved.addListener((tabId) => state.tabs.delete(tabId));

// A stopped worker wakes on any event; the alarm makes sure a pending outbox is retried.
if (chrome.alarms) {
  chrome.alarms.create("modlens-wake", { periodInMinutes: 0.5 });
  chrome.alarms.onAlarm.addListener(() => init().then(ensureConnected));
}
chrome.runtime.onInstalled.addListener((details) => {
  init().then(() => {
    if (details.reason === "install" && !consented()) chrome.runtime.openOptionsPage().catch(() => {});
  });
});
init().then(ensureConnected);
