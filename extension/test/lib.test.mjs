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
