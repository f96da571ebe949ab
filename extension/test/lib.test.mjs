// Unit tests of the extension's pure helpers: node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
require("../lib/table1.js");
require("../lib/sampling.js");
require("../lib/tasks.js");
require("../lib/hash.js");
require("../lib/outbox.js");
require("../lib/constants.js");
require("../lib/messages.js");
require("../lib/router.js");
require("../lib/site_access.js");
require("../lib/protocol.js");

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
  const s = { mode: "random", rate: 0.3, seed: 7, salt: "study-a" };
  let taken = 0;
  for (let i = 0; i < 4000; i++) {
    const d1 = ns.decideSample(s, { platform: "youtube", key: `k${i}` }, []);
    const d2 = ns.decideSample(s, { platform: "youtube", key: `k${i}` }, []);
    assert.equal(d1.sampled, d2.sampled);
    taken += d1.sampled ? 1 : 0;
  }
  assert.ok(Math.abs(taken / 4000 - 0.3) < 0.03, `took ${taken}`);
});

// A synthetic page: n comments with scores skewed to low deciles, as on real sites.
function syntheticComments(n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const u = ns.unitHash("scores", "x", String(i));
    out.push({ platform: i % 2 ? "x" : "youtube", key: `c${i}`, detectors: { det: { toxicity: u * u * u } } });
  }
  return out;
}
const sampledKeys = (s, items) => new Set(items.filter((it) => ns.decideSample(s, it, ["det"]).sampled).map((it) => it.key));

test("every mode decides the same whatever order comments arrive in (overlap between raters)", () => {
  const items = syntheticComments(3000);
  const shuffled = [...items].sort((a, b) => ns.unitHash("shuffle", "", a.key) - ns.unitHash("shuffle", "", b.key));
  for (const s of [{ mode: "all" }, { mode: "random", rate: 0.2, salt: "S" }, { mode: "deciles", per_decile: 15, salt: "S" },
    { mode: "deciles", decile_rates: [0.05, 0.2, 0.4, 0.6, 0.8, 1, 1, 1, 1, 1], salt: "S" }]) {
    const a = sampledKeys(s, items);
    const b = sampledKeys(s, shuffled);
    assert.deepEqual([...a].sort(), [...b].sort(), s.mode);
    assert.ok(a.size > 0 && (s.mode === "all" || a.size < items.length), `${s.mode}: ${a.size}`);
  }
});

test("a different study salt draws a different sample; no salt falls back to the seed", () => {
  const items = syntheticComments(2000);
  for (const mode of ["random", "deciles"]) {
    const a = sampledKeys({ mode, rate: 0.5, per_decile: 50, salt: "study-a" }, items);
    const b = sampledKeys({ mode, rate: 0.5, per_decile: 50, salt: "study-b" }, items);
    const both = [...a].filter((k) => b.has(k)).length;
    // independent draws at 50 %: about a quarter of all comments are in both, far from all
    assert.ok(Math.abs(both / items.length - 0.25) < 0.04, `${mode}: ${both} in both`);
  }
  assert.equal(ns.samplingSalt({ seed: 7 }), "7"); // an older daemon: the old seed-based sample
  assert.equal(ns.samplingSalt({ seed: 7, salt: "s" }), "s");
  assert.equal(ns.samplingSalt(null), "0");
});

test("decile sampling keeps each decile's inclusion rate on a large set", () => {
  const items = syntheticComments(40000);
  const rates = [0.02, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1];
  const s = { mode: "deciles", decile_rates: rates, salt: "rates" };
  const seen = new Array(10).fill(0);
  const taken = new Array(10).fill(0);
  for (const it of items) {
    const d = ns.decileOf(it.detectors.det.toxicity);
    seen[d] += 1;
    if (ns.decideSample(s, it, ["det"]).sampled) taken[d] += 1;
  }
  for (let d = 0; d < 10; d++) {
    const se = Math.sqrt((rates[d] * (1 - rates[d])) / seen[d]);
    assert.ok(Math.abs(taken[d] / seen[d] - rates[d]) <= 4 * se + 1e-9, `decile ${d}: ${taken[d]}/${seen[d]} vs ${rates[d]}`);
  }
  // default: per_decile % of every decile; unscored comments are never asked about
  assert.equal(ns.decileRate({ per_decile: 10 }, 3), 0.1);
  assert.equal(ns.decileRate({ per_decile: 250 }, 3), 1);
  assert.equal(ns.decideSample({ mode: "deciles", salt: "s" }, { platform: "x", key: "n", detectors: {} }, ["det"]).sampled, false);
  assert.throws(() => ns.decideSample({ mode: "best" }, items[0], ["det"]), /unknown sampling mode/);
});

test("task pages: URLs match by page, not by spelling", () => {
  const id = ns.pageId;
  const yt = "youtube.com/watch?v=Xq7pLm2Rk4A";
  for (const u of ["https://www.youtube.com/watch?v=Xq7pLm2Rk4A", "http://youtube.com/watch?v=Xq7pLm2Rk4A&t=30s",
    "https://m.youtube.com/watch?feature=share&v=Xq7pLm2Rk4A", "https://youtu.be/Xq7pLm2Rk4A",
    "https://www.youtube.com/shorts/Xq7pLm2Rk4A", "https://www.youtube.com/watch?v=Xq7pLm2Rk4A#comments"]) assert.equal(id(u), yt, u);
  assert.notEqual(id("https://www.youtube.com/watch?v=Bn4tTz8wQeY"), yt);
  assert.equal(id("https://twitter.com/SomeOne/status/1790000000000000001?s=20"), "x.com/i/status/1790000000000000001");
  assert.equal(id("https://x.com/someone/status/1790000000000000001/"), "x.com/i/status/1790000000000000001");
  // news: path and the page-naming query kept, tracking dropped, order and trailing slash ignored
  assert.equal(id("https://www.news.example/a/story/?utm_source=x&id=4&p=2"), id("https://news.example/a/story?p=2&id=4"));
  assert.notEqual(id("https://news.example/a/story?id=4"), id("https://news.example/a/story?id=5"));
  assert.notEqual(id("https://news.example/a/story"), id("https://news.example/a/other"));
  assert.equal(id("http://127.0.0.1:8123/article"), "127.0.0.1:8123/article");
  assert.equal(id("chrome-extension://abc/popup.html"), null);
  assert.equal(id("not a url"), null);
  const tasks = [{ url: "https://www.youtube.com/watch?v=Xq7pLm2Rk4A", target: 2 }, { url: "https://news.example/a/story", title: "Story" }];
  assert.equal(ns.taskFor(tasks, "https://youtu.be/Xq7pLm2Rk4A"), tasks[0]);
  assert.equal(ns.taskFor(tasks, "https://news.example/b"), null);
  assert.equal(ns.taskFor(undefined, "https://news.example/a/story"), null);
});

test("task progress counts this browser's rated comments per task page", () => {
  const tasks = [{ url: "https://www.youtube.com/watch?v=AAA", target: 2 }, { url: "https://news.example/s", target: 3 }, { url: "https://x.com/a/status/1" }];
  const pageOf = { "youtube|k1": "youtube.com/watch?v=AAA", "youtube|k2": "youtube.com/watch?v=AAA", "youtube|k3": "youtube.com/watch?v=AAA",
    "generic|n1": "news.example/s", "x|t1": "x.com/i/status/1" };
  const rated = { "youtube|k1": {}, "youtube|k2": {}, "youtube|k3": {}, "generic|n1": {}, "x|t1": {}, "youtube|elsewhere": {} };
  const p = ns.taskProgress(tasks, pageOf, rated);
  assert.deepEqual(p.items.map((t) => [t.rated, t.target, t.done]), [[3, 2, true], [1, 3, false], [1, null, false]]);
  assert.deepEqual({ rated: p.rated, target: p.target, toward: p.toward, done: p.done }, { rated: 5, target: 5, toward: 3, done: 1 });
  assert.equal(ns.taskProgress([], {}, rated).items.length, 0);
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

test("popup: the daemon's live-variant counts from its status_ok answer", () => {
  const statusOk = { type: "status_ok", id: "s1", detectors: [], counts: {},
    queue: { connections: 2, variants: { live_rate: 20, live_backlog: 256, queued: 3, done: 40, failed: 1, deferred: 7,
      deferred_by_reason: { "perturbation.live_rate": 7 } } } };
  const v = ns.daemonVariants(statusOk);
  assert.deepEqual(v, { made: 40, waiting: 3, deferred: 7, failed: 1 });
  assert.equal(ns.variantsLine(v),
    "variants (whole daemon): 40 made · 3 waiting · 7 deferred · 1 failed (`modlens rescore --variants` makes the deferred ones)");
  assert.equal(ns.variantsLine({ made: 5, waiting: 0, deferred: 0, failed: 0 }), "variants (whole daemon): 5 made · 0 waiting · 0 deferred");
  // an older daemon (no variants in its queue) or a garbled count: nothing, or 0, never NaN
  assert.equal(ns.daemonVariants({ queue: { connections: 1 } }), null);
  assert.equal(ns.variantsLine(null), "");
  assert.deepEqual(ns.daemonVariants({ queue: { variants: { done: "x", queued: -1 } } }), { made: 0, waiting: 0, deferred: 0, failed: 0 });
  assert.deepEqual(ns.protocol.status().type, "status");
});

test("seed timings (browser tests) shorten only the named waits, never lengthen one", () => {
  const before = { KEEPALIVE_MS: ns.KEEPALIVE_MS, SILENT_AFTER_MS: ns.SILENT_AFTER_MS, RESEND_AFTER_MS: ns.RESEND_AFTER_MS };
  try {
    const applied = ns.applyTimings({ KEEPALIVE_MS: 2000, SILENT_AFTER_MS: 10 ** 9, RESEND_AFTER_MS: 1, BACKOFF_MAX_MS: "5", UNSENT_RETRY_MAX_MS: -1 });
    assert.deepEqual(applied, { KEEPALIVE_MS: 2000 });
    assert.equal(ns.KEEPALIVE_MS, 2000);
    assert.equal(ns.SILENT_AFTER_MS, before.SILENT_AFTER_MS);
    assert.equal(ns.RESEND_AFTER_MS, before.RESEND_AFTER_MS);
    assert.deepEqual(ns.applyTimings(undefined), {});
  } finally {
    Object.assign(ns, before);
  }
});

test("a rating not taken is worded once, for the marker and the calibration and item-set pages alike", () => {
  assert.equal(ns.ratingNotTakenText({ queued: false, reason: "consent needed" }),
    "Not saved: the extension did not take this rating: consent needed");
  assert.equal(ns.ratingNotTakenText({ queued: false }), "Not saved: the extension did not take this rating: no reason given");
  assert.equal(ns.ratingNotTakenText({ error: "storage full" }), "Not saved: storage full");
  assert.equal(ns.ratingNotTakenText(null), "Not saved: no answer from the extension");
});
