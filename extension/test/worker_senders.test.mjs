// The worker's message handlers (worker/*.js, loaded as the service worker loads them) against a
// fake `chrome`: who may ask what, the daemon address check, no token in any state.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { ORIGIN, FakeSocket, clone, fakeStorage, installWorkerChrome, loadWorker, startWorker } from "./fakes.mjs";

const TOKEN = "T0KEN-secret-0123456789";
const SALT = "author-salt-secret";

const storage = fakeStorage([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: TOKEN, raterId: "rater-1" }],
  ["study", { study_id: "s1", title: "t", author_salt: SALT, consent_text: "the text", sampling: { mode: "all", salt: "x" } }],
  ["consent", { study_id: "s1", at: "2026-01-01T00:00:00Z", media: false, text: "the text" }]]);
const { stored } = storage;
// what the worker broadcasts and which sockets it opens
const { broadcasts } = installWorkerChrome(storage);
const sockets = FakeSocket.opened;
const ns = loadWorker();
await startWorker(ns);

const contentScript = { id: "modlens-id", url: "https://www.youtube.com/watch?v=abc", tab: { id: 7, url: "https://www.youtube.com/watch?v=abc" }, frameId: 0 };
const framedContentScript = { ...contentScript, url: "about:blank", frameId: 3 };
const optionsPage = { id: "modlens-id", url: `${ORIGIN}/options.html`, tab: { id: 9 }, frameId: 0 };
const otherExtension = { id: "someone-else", url: "chrome-extension://ponmlkjihgfedcbaponmlkjihgfedcba/page.html" };
// as background.js answers: a handler's exception becomes {error}
const ask = (msg, sender) => Promise.resolve().then(() => ns.onPageMessage(msg, sender)).catch((err) => ({ error: err.message }));
const privileged = [
  ns.messages.setSettings({ daemonUrl: "ws://evil.example/ws", token: "stolen" }),
  ns.messages.consent(false, "s1"),
  ns.messages.joinStudy('{"pack": 1}', "evil.modlens", true),
  ns.messages.getState(),
  ns.messages.reconnect(),
  ns.messages.deadLetters(),
];

test("content scripts and other extensions may not change settings, consent or the study, nor read the state", async () => {
  const before = clone([stored.get("settings"), stored.get("consent")]);
  const opened = sockets.length;
  for (const sender of [contentScript, framedContentScript, otherExtension, undefined]) {
    for (const msg of privileged) {
      const answer = await ask(msg, sender);
      assert.match(answer.error, /accepted from the extension's own pages only/, `${msg.type} from ${sender && sender.url}`);
      assert.ok(!JSON.stringify(answer).includes(TOKEN));
    }
  }
  assert.deepEqual([stored.get("settings"), stored.get("consent")], before);
  assert.equal(ns.config.settings.daemonUrl, "ws://127.0.0.1:8765/ws");
  assert.ok(ns.config.consented());
  assert.equal(sockets.length, opened, "a refused message made the worker reconnect");
});

test("content scripts still send comment traffic, and their config carries no secret", async () => {
  const config = await ask(ns.messages.contentHello(), contentScript);
  assert.equal(config.consented, true);
  for (const secret of [TOKEN, SALT, "rater-1"]) assert.ok(!JSON.stringify(config).includes(secret), secret);
  const status = await ask(ns.messages.pageStatus({ adapter: "youtube", found: 0 }, config.revision), framedContentScript);
  assert.deepEqual(status, { ok: true, stale: false });
  const rated = await ask(ns.messages.rate({ platform: "youtube", key: "k1" },
    { values: { toxicity: "not toxic" }, time_spent_ms: 900 }), contentScript);
  assert.equal(rated.queued, true);
  // another extension may not even send comment traffic
  assert.match((await ask(ns.messages.contentHello(), otherExtension)).error, /own pages only/);
});

test("the extension's pages get a state without the token or the author salt", async () => {
  const state = await ask(ns.messages.getState(), optionsPage);
  assert.equal(state.settings.tokenSet, true);
  assert.equal(state.extensionOrigin, ORIGIN);
  assert.equal(state.study.study_id, "s1");
  assert.ok(!("token" in state.settings) && !("author_salt" in state.study));
  const after = await ask(ns.messages.setSettings({ paused: true }), optionsPage);
  assert.equal(after.settings.paused, true);
  await ask(ns.messages.setSettings({ paused: false }), optionsPage);
  ns.tabs.broadcast(ns.messages.state(ns.publicState()));
  for (const message of [state, after, ...broadcasts]) assert.ok(!JSON.stringify(message).includes(TOKEN));
  assert.ok(broadcasts.length > 0);
});

test("a daemon address off this computer is refused before it is stored or used", async () => {
  const opened = sockets.length;
  for (const url of ["ws://evil.example:8765/ws", "wss://127.0.0.1:8765/ws", "http://127.0.0.1:8765/ws", "ws://127.0.0.1.nip.io/ws",
    "ws://localhost.evil.example/ws", "ws://user:pw@127.0.0.1:8765/ws", "ws://10.0.0.1:8765/ws", "ws://[::2]:8765/ws", "not a url",
    "ws://[::ffff:127.0.0.1]/ws", "ws://0.0.0.0:8765/ws"]) {
    const answer = await ask(ns.messages.setSettings({ daemonUrl: url, token: "new-token" }), optionsPage);
    assert.equal(answer.error, ns.NOT_LOOPBACK, url);
    assert.deepEqual([stored.get("settings").daemonUrl, stored.get("settings").token], ["ws://127.0.0.1:8765/ws", TOKEN], url);
  }
  assert.match((await ask(ns.messages.setSettings({ sneaky: 1 }), optionsPage)).error, /unknown setting sneaky/);
  assert.equal(sockets.length, opened);
  for (const [url, normalised] of [["ws://127.1:9000/ws", "ws://127.0.0.1:9000/ws"], ["ws://[0:0:0:0:0:0:0:1]:8765/ws", "ws://[::1]:8765/ws"],
    ["ws://LOCALHOST:8765/ws", "ws://localhost:8765/ws"], ["ws://127.0.0.1:8765/ws", "ws://127.0.0.1:8765/ws"]]) {
    const answer = await ask(ns.messages.setSettings({ daemonUrl: url }), optionsPage);
    assert.equal(answer.settings.daemonUrl, normalised);
    assert.equal(stored.get("settings").daemonUrl, normalised);
  }
  assert.equal(sockets.at(-1).url, "ws://127.0.0.1:8765/ws"); // reconnected to the loopback address it stored
});

test("an address stored before the check is never connected to", async () => {
  ns.connection.ws = null;
  clearTimeout(ns.connection.reconnectTimer);
  ns.connection.reconnectTimer = null;
  ns.config.settings.daemonUrl = "ws://evil.example/ws";
  const opened = sockets.length;
  ns.connection.connect();
  assert.equal(sockets.length, opened);
  assert.deepEqual([ns.connection.status, ns.connection.lastError], ["error", ns.NOT_LOOPBACK]);
});

test("the sender check itself", () => {
  const runtime = chrome.runtime;
  assert.equal(ns.fromExtensionPage(optionsPage, runtime), true);
  assert.equal(ns.fromExtensionPage({ ...optionsPage, url: `${ORIGIN}.evil.example/options.html` }, runtime), false);
  assert.equal(ns.fromExtensionPage({ ...optionsPage, id: "other" }, runtime), false);
  assert.equal(ns.fromExtensionPage({ id: "modlens-id" }, runtime), false);
  assert.equal(ns.senderMayAsk({ type: "comments" }, contentScript, runtime), true);
  assert.equal(ns.senderMayAsk({ type: "set_settings" }, contentScript, runtime), false);
  assert.equal(ns.senderMayAsk({ type: "set_settings" }, optionsPage, runtime), true);
  assert.equal(ns.extensionOrigin(runtime), ORIGIN);
});
