// Unit tests of the extension's pure helpers: node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
require("../lib/table1.js");
require("../lib/sampling.js");
require("../lib/hash.js");
require("../lib/outbox.js");
require("../lib/constants.js");
require("../lib/messages.js");
require("../lib/router.js");
require("../lib/site_access.js");

test("Table 1: consistent cells, ambiguous cells, inconsistent answers", () => {
  assert.deepEqual(ns.deriveToxicity("more", "same", "toxic"), { rating: "toxic", candidates: ["toxic"], inconsistent: false });
  assert.equal(ns.deriveToxicity("more", "less", "toxic").rating, "hard to say");
  assert.deepEqual(ns.deriveToxicity("more", "less", "toxic").candidates, ["hard to say", "toxic"]);
  assert.equal(ns.deriveToxicity("less", "more", "toxic").inconsistent, true);
  assert.equal(ns.deriveToxicity("less", "same", "not toxic").rating, "not toxic");
  assert.throws(() => ns.deriveToxicity("bigger", "less", "toxic"), /more, less or same/);
  assert.throws(() => ns.deriveToxicity("more", "less", "hard to say"), /extreme anchor/);
});

test("author hash: salted SHA-256, hex, none for a missing author", async () => {
  const a = await ns.hashAuthor("@someone", "salt-1");
  assert.match(a, /^[0-9a-f]{64}$/);
  assert.notEqual(a, await ns.hashAuthor("@someone", "salt-2"));
  assert.equal(a, await ns.hashAuthor("@someone", "salt-1"));
  assert.equal(await ns.hashAuthor("", "salt-1"), null);
  await assert.rejects(() => ns.hashAuthor("@someone", ""), /salt/);
});

test("random sampling is deterministic and close to the rate", () => {
  const s = { mode: "random", rate: 0.3, seed: 7 };
  let taken = 0;
  for (let i = 0; i < 4000; i++) {
    const d1 = ns.decideSample(s, { platform: "youtube", key: `k${i}` }, null, []);
    const d2 = ns.decideSample(s, { platform: "youtube", key: `k${i}` }, null, []);
    assert.equal(d1.sampled, d2.sampled);
    taken += d1.sampled ? 1 : 0;
  }
  assert.ok(Math.abs(taken / 4000 - 0.3) < 0.03, `took ${taken}`);
});

test("decile sampling fills each decile up to per_decile", () => {
  const s = { mode: "deciles", per_decile: 2, detector: null };
  const counts = new Array(10).fill(0);
  const item = (t) => ({ platform: "x", key: String(t), detectors: { det: { toxicity: t } } });
  const picks = [0.05, 0.06, 0.07, 0.95, 1.0, 0.99].map((t) => ns.decideSample(s, item(t), counts, ["det"]).sampled);
  assert.deepEqual(picks, [true, true, false, true, true, false]);
  assert.equal(ns.decideSample(s, { platform: "x", key: "n", detectors: {} }, counts, ["det"]).sampled, false);
});

function memoryArea() {
  const data = {};
  return {
    data,
    get: async () => JSON.parse(JSON.stringify(data)),
    set: async (obj) => Object.assign(data, JSON.parse(JSON.stringify(obj))),
    remove: async (k) => { delete data[k]; },
  };
}

test("outbox: persists, keeps order, survives a restart, drops on ack, buries refusals", async () => {
  const area = memoryArea();
  const box = new ns.Outbox(area);
  await box.add({ type: "comments", id: "c1" }, { tabId: 1 });
  await box.add({ type: "rating", id: "r1" });
  await box.add({ type: "comments", id: "c2" });
  const again = new ns.Outbox(area); // a restarted worker
  await again.load();
  assert.deepEqual(again.pending().map((e) => e.id), ["c1", "r1", "c2"]);
  assert.deepEqual(again.get("c1").route, { tabId: 1 });
  await again.ack("r1");
  await again.bury("c2", { code: "too_large" });
  const third = new ns.Outbox(area);
  await third.load();
  assert.deepEqual(third.pending().map((e) => e.id), ["c1"]);
  assert.equal((await third.dead())[0].error.code, "too_large");
  await assert.rejects(() => third.add({ id: "x" }), /type and an id/);
});

test("text cleaning collapses whitespace like the fixtures expect", () => {
  assert.equal(ns.cleanText("  a\n\n b\t c  "), "a b c");
});

test("site patterns: scheme and host of a page or pattern, no port; none for non-web pages", () => {
  assert.equal(ns.sitePattern("https://www.foxnews.com/us/story?x=1#c"), "https://www.foxnews.com/*");
  assert.equal(ns.sitePattern("http://127.0.0.1:8123/a.html"), "http://127.0.0.1/*");
  assert.equal(ns.sitePattern("https://disqus.com/embed/comments/*"), "https://disqus.com/*");
  assert.equal(ns.sitePattern("HTTPS://User@News.Example:443/"), "https://news.example/*");
  for (const u of ["chrome://extensions", "moz-extension://id/popup.html", "file:///tmp/a.html", "", null]) assert.equal(ns.sitePattern(u), null);
});

test("router: handler by type, fallback for unknown or inherited names", async () => {
  const route = ns.makeRouter({ ping: (m, who) => `pong ${m.n} ${who}` }, (m) => `unknown ${m && m.type}`);
  assert.equal(route({ type: "ping", n: 1 }, "me"), "pong 1 me");
  assert.equal(route({ type: "nope" }), "unknown nope");
  assert.equal(route({ type: "toString" }), "unknown toString");
  assert.equal(route(null), "unknown null");
});

test("messages: shapes shared by content script and worker", () => {
  assert.deepEqual(ns.messages.rate({ platform: "youtube", key: "k1", extra: 1 }, { values: { a: "b" }, time_spent_ms: 5 }),
    { type: ns.MSG.rate, comment: { platform: "youtube", key: "k1" }, values: { a: "b" }, anchors: null, time_spent_ms: 5 });
  assert.deepEqual(ns.messages.getState(), { type: "get_state" });
  assert.deepEqual(ns.messages.getState(7), { type: "get_state", tabId: 7 });
  assert.ok(ns.isStateBroadcast(ns.messages.counts({})) && ns.isStateBroadcast(ns.messages.state({})));
  assert.ok(!ns.isStateBroadcast(ns.messages.scores([])));
  assert.equal(ns.commentKey("study", "g1"), "study|g1");
  assert.deepEqual(ns.wsSubprotocols("t"), ["modlens.v1", "modlens.token.t"]);
});
