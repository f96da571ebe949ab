// The popup's saved/scored counts (worker/counters.js countComments) against a fake
// chrome.storage.local that records every write: each distinct comment (study-log row id) counts
// once per study and kind, across duplicate acks and worker restarts (load() reads storage back),
// and what one daemon message writes does not grow with the comments counted before it.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import vm from "node:vm";

const stored = new Map();
const writes = []; // JSON size of each set() call, in order
let failNextSet = false;
const clone = (v) => (v === undefined ? v : JSON.parse(JSON.stringify(v)));
const area = {
  async get(keys) {
    const names = keys == null ? [...stored.keys()] : [].concat(keys);
    return Object.fromEntries(names.filter((k) => stored.has(k)).map((k) => [k, clone(stored.get(k))]));
  },
  async set(obj) {
    if (failNextSet) { failNextSet = false; throw new Error("QUOTA_BYTES quota exceeded"); }
    writes.push(JSON.stringify(obj).length);
    for (const [k, v] of Object.entries(obj)) stored.set(k, clone(v));
  },
  async remove(keys) { for (const k of [].concat(keys)) stored.delete(k); },
};
globalThis.chrome = { storage: { local: area } };

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
require("../lib/constants.js");
const path = new URL("../worker/counters.js", import.meta.url);
vm.runInThisContext(readFileSync(path, "utf8"), { filename: path.pathname });
const { counters } = ns;
const inStudy = (id) => { ns.config = { study: { study_id: id } }; };
const restart = () => counters.load(); // a stopped worker reads what it counted back from storage

test("what one ack writes does not grow with the comments counted before it", async () => {
  stored.clear();
  inStudy("grow");
  await restart();
  const sizes = [];
  for (let n = 0; n < 400; n++) {
    writes.length = 0;
    await counters.countComments("saved", [10_000 + 2 * n, 10_001 + 2 * n]);
    sizes.push(writes.reduce((a, b) => a + b, 0));
  }
  assert.equal(counters.totals.saved, 800);
  // the 400th ack of two new comments writes what the 1st did (give or take the digits of the totals)
  assert.ok(sizes[399] <= sizes[0] + 16, `first ack wrote ${sizes[0]} bytes, the 400th ${sizes[399]}`);
  await restart();
  assert.equal(counters.totals.saved, 800);
});

test("a comment counts once per study and kind: duplicate acks, repeats within an ack, restarts", async () => {
  stored.clear();
  inStudy("s1");
  await restart();
  await counters.countComments("saved", [1, 2, 2, 3]);
  await counters.countComments("saved", [3, 2, 1]); // the page sent again: same rows
  await counters.countComments("scored", [1, 2]);
  await counters.countComments("saved", ["4", null, 4.5]); // not row ids: not counted
  assert.deepEqual([counters.totals.saved, counters.totals.scored], [3, 2]);
  await restart();
  assert.deepEqual([counters.totals.saved, counters.totals.scored], [3, 2]);
  await counters.countComments("saved", [1, 2, 3, 4]);
  await counters.countComments("scored", [2, 3]);
  assert.deepEqual([counters.totals.saved, counters.totals.scored], [4, 3]);
  inStudy("s2"); // row 1 of another study's log is another comment
  await counters.countComments("saved", [1]);
  assert.equal(counters.totals.saved, 5);
  for (let i = 0; i < 3; i++) {
    await restart();
    assert.deepEqual([counters.totals.saved, counters.totals.scored], [5, 3], `restart ${i}`);
    await counters.countComments("saved", [1]);
    inStudy("s1");
    await counters.countComments("saved", [4, 3]);
    inStudy("s2");
  }
  assert.deepEqual([counters.totals.saved, counters.totals.scored], [5, 3]);
});

test("a write that fails counts nothing: the ack is answered again and counted then", async () => {
  stored.clear();
  inStudy("s1");
  await restart();
  await counters.countComments("saved", [1]);
  failNextSet = true;
  await assert.rejects(counters.countComments("saved", [2, 3]), /quota/);
  assert.equal(counters.totals.saved, 1, "counted though not stored");
  await counters.countComments("saved", [2, 3]); // the outbox still holds the message: its resend is acknowledged again
  assert.equal(counters.totals.saved, 3);
  await restart();
  assert.equal(counters.totals.saved, 3);
});

test("ids stored by the version that kept them as one countedComments collection are kept", async () => {
  stored.clear();
  stored.set("countedComments", { s1: { saved: [1, 2, 3], scored: [1] }, s2: { saved: [1], scored: [] } });
  stored.set("totals", { saved: 99, scored: 99, rated: 2, errors: 0, sent: 7 });
  inStudy("s1");
  await restart();
  assert.deepEqual([counters.totals.saved, counters.totals.scored, counters.totals.rated], [4, 1, 2]);
  assert.equal(counters.totals.sent, undefined);
  assert.ok(!stored.has("countedComments"), "the old collection is still rewritten");
  await counters.countComments("saved", [3, 4]);
  await counters.countComments("scored", [1, 2]);
  await restart();
  assert.deepEqual([counters.totals.saved, counters.totals.scored], [5, 2]);
});
