// The popup's saved/scored counts (worker/counters.js countComments) against a fake
// chrome.storage.local that records every write: each distinct comment (study-log row id) counts
// once per study and kind, across duplicate acks and worker restarts (load() reads storage back),
// and what one daemon message writes does not grow with the comments counted before it.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { fakeStorage, loadExtension } from "./fakes.mjs";

// lists keys in key order ("…:10" before "…:9"), as chrome.storage.local does, not in write order;
// logs the keys and JSON size of each write
const storage = fakeStorage();
const { stored, writes } = storage;
globalThis.chrome = { storage: { local: storage } };
const ns = loadExtension(["constants", "outbox"], ["worker/counters"]);
const { counters } = ns;
const inStudy = (id) => { ns.config = { study: { study_id: id } }; };
// a stopped worker reads what it counted, and its outbox, back from storage (as background.js's ready())
let outbox = null;
const restart = async () => {
  const all = await storage.get(null);
  outbox = new ns.Outbox(storage);
  await outbox.load(all);
  await counters.load(all, outbox);
};
// storage emptied, the worker started in `study`
const fresh = async (study = "s1") => {
  stored.clear();
  inStudy(study);
  await restart();
};
// the bytes `act` writes
const bytesWrittenBy = async (act) => {
  writes.length = 0;
  await act();
  return writes.reduce((a, w) => a + w.bytes, 0);
};

test("what one ack writes does not grow with the comments counted before it", async () => {
  await fresh("grow");
  const sizes = [];
  for (let n = 0; n < 400; n++) {
    sizes.push(await bytesWrittenBy(() => counters.countComments("saved", [10_000 + 2 * n, 10_001 + 2 * n])));
  }
  assert.equal(counters.totals.saved, 800);
  // the 400th ack of two new comments writes what the 1st did (give or take the digits of the totals)
  assert.ok(sizes[399] <= sizes[0] + 16, `first ack wrote ${sizes[0]} bytes, the 400th ${sizes[399]}`);
  await restart();
  assert.equal(counters.totals.saved, 800);
});

test("a comment counts once per study and kind: duplicate acks, repeats within an ack, restarts", async () => {
  await fresh();
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
  await fresh();
  await counters.countComments("saved", [1]);
  storage.failSet = 1;
  await assert.rejects(counters.countComments("saved", [2, 3]), /quota/);
  assert.equal(counters.totals.saved, 1, "counted though not stored");
  await counters.countComments("saved", [2, 3]); // the outbox still holds the message: its resend is acknowledged again
  assert.equal(counters.totals.saved, 3);
  await restart();
  assert.equal(counters.totals.saved, 3);
});

test("ids whose write is still under way are neither shown nor taken as stored: a second count waits, and counts them if that write fails", async () => {
  await fresh();
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  storage.hangSet = 1; // the first write hangs (a handler given up on, or one on a socket left since)
  const first = counters.countComments("scored", [1, 2]);
  let second = null;
  counters.countComments("scored", [2, 3]).then((counted) => { second = counted; });
  await tick();
  assert.deepEqual([second, counters.totals.scored], [null, 0], "returned, or shown, before 1 and 2 were stored");
  storage.releaseHung(true); // ... then fails
  await assert.rejects(first, /quota/);
  while (second === null) await tick();
  assert.deepEqual([second, counters.totals.scored], [true, 2], "2 and 3: 1 stays uncounted with its failed write");
  await restart();
  assert.equal(counters.totals.scored, 2, "2 and 3 stored");
  // the same, the hanging write holding: the second writes nothing more for 5
  storage.hangSet = 1;
  const held = counters.countComments("scored", [4, 5]);
  const again = counters.countComments("scored", [5]);
  await tick();
  assert.equal(counters.totals.scored, 2);
  storage.releaseHung(false);
  assert.deepEqual(await Promise.all([held, again]), [true, false]);
  assert.equal(counters.totals.scored, 4);
  await restart();
  assert.equal(counters.totals.scored, 4);
});

test("the stored totals never hold a saved, scored or rated number other than the one counted, and keep what only they hold", async () => {
  // two counts under way at once each wrote the total it computed when it began: the last write
  // could store the smaller one. Load counts these from the cc: batches; the totals keep errors,
  // images and ratings counted before ids were
  await fresh();
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  counters.totals.errors = 3;
  storage.hangSet = 1;
  const first = counters.countComments("saved", [1, 2]);
  await counters.countComments("saved", [3]);
  storage.releaseHung(false);
  await first;
  await tick();
  assert.equal(counters.totals.saved, 3);
  const written = stored.get("totals");
  for (const kind of ["saved", "scored", "rated"]) {
    assert.ok(!(kind in written) || written[kind] === counters.totals[kind], `stored ${kind} ${written[kind]}, counted ${counters.totals[kind]}`);
  }
  await restart();
  assert.deepEqual([counters.totals.saved, counters.totals.errors], [3, 3]);
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

// ratings (rated, and the rating of each comment) and task pages (taskPageOf) are kept the same way.
// A rating goes as the page's rating does (page_messages.js queueRating): into the outbox, then
// marked; acknowledged as rating_ok does it (daemon_messages.js); refused as delivery.retire does.
const rated = () => counters.totals.rated;
const queueRating = (key, id, values = { toxicity: "toxic" }) => outbox.add({ type: "rating", id,
  comment: { platform: "youtube", key }, values, anchors: null, time_spent_ms: 0 }, null, { study: ns.config.study.study_id });
const rate = async (key, id, values) => {
  const entry = await queueRating(key, id, values);
  counters.markRated(entry);
  return entry;
};
const ack = async (id) => {
  const pending = outbox.get(id);
  if (pending) await counters.ratingSaved(pending);
  await outbox.ack(id);
};
const refuse = async (id) => {
  await outbox.bury(id, { code: "invalid_fields", message: "refused for the test" });
  counters.forgetRating(id);
};
const stateOf = () => ({ rated: rated(), marks: JSON.parse(JSON.stringify(counters.rated)), pages: { ...counters.taskPageOf } });

test("a rating and a task page's comments write what they add, not what was rated or sent before", async () => {
  await fresh("grow");
  const sizes = [];
  for (let n = 0; n < 300; n++) {
    sizes.push(await bytesWrittenBy(async () => {
      await counters.onTaskPage("youtube", [`k${n}a`, `k${n}b`], "youtube.com/watch?v=task");
      await rate(`k${n}a`, `r-${1000 + n}`);
      await ack(`r-${1000 + n}`);
    }));
  }
  // the 300th rating and page write what the 1st did (give or take the digits of the totals, the
  // sequence number and the time)
  assert.ok(sizes[299] <= sizes[0] + 24, `the first wrote ${sizes[0]} bytes, the 300th ${sizes[299]}`);
  assert.equal(rated(), 300);
  assert.equal(Object.keys(counters.taskPageOf).length, 600);
  const before = stateOf();
  await restart();
  assert.deepEqual(stateOf(), before);
});

test("ratings and task pages read the same after a restart: duplicate acks, a rating again, one refused, a comment on another page", async () => {
  await fresh();
  await counters.onTaskPage("youtube", ["a", "b", "a"], "P1");
  await counters.onTaskPage("youtube", ["b", "c"], "P2"); // b seen again on another task page: it is P2's now
  await counters.onTaskPage("youtube", ["b"], "P1"); // and back on P1 (a key already named a batch once)
  await rate("a", "r-1");
  await ack("r-1");
  await ack("r-1"); // answered again (duplicate): the same rating
  await rate("b", "r-2", { toxicity: "not toxic" });
  await rate("b", "r-3"); // rated again: the latest is its rating, both are ratings once acknowledged
  await ack("r-3");
  await ack("r-2");
  await rate("c", "r-4");
  await refuse("r-4"); // refused for good: c is not rated
  await rate("d", "r-5"); // in the outbox: rated, not saved
  const expect = {
    rated: 3,
    pages: { "youtube|a": "P1", "youtube|b": "P1", "youtube|c": "P2" },
    marks: { "youtube|a": [{ toxicity: "toxic" }, true], "youtube|b": [{ toxicity: "toxic" }, true], "youtube|d": [{ toxicity: "toxic" }, false] },
  };
  const seen = () => ({ rated: rated(), pages: { ...counters.taskPageOf },
    marks: Object.fromEntries(Object.entries(counters.rated).map(([k, r]) => [k, [r.values, r.saved]])) });
  assert.deepEqual(seen(), expect);
  for (let i = 0; i < 2; i++) {
    await restart();
    assert.deepEqual(seen(), expect, `restart ${i}`);
    await ack("r-1"); // a resend after the restart, answered again
    await counters.onTaskPage("youtube", ["a", "b", "c"], "P1"); // a page sent again: c moves to P1 (then stays)
    expect.pages["youtube|c"] = "P1";
  }
  await rate("b", "r-6", { toxicity: "very toxic" });
  assert.deepEqual(counters.ratingOf("youtube", "b").values, { toxicity: "very toxic" });
  await refuse("r-6"); // its latest rating refused: the one before is its rating
  assert.deepEqual(counters.ratingOf("youtube", "b").values, { toxicity: "toxic" });
  await restart();
  assert.deepEqual(counters.ratingOf("youtube", "b").values, { toxicity: "toxic" });
  assert.equal(rated(), 3);
  await ack("r-5");
  await restart();
  assert.deepEqual([rated(), counters.ratingOf("youtube", "d").saved], [4, true]);
});

test("a rating, its acknowledgement or a task page whose write fails counts nothing", async () => {
  await fresh();
  storage.failSet = 1;
  await assert.rejects(rate("a", "r-1"), /quota/);
  assert.equal(counters.ratingOf("youtube", "a"), null, "rated though not stored");
  await rate("a", "r-1");
  storage.failSet = 1;
  await assert.rejects(ack("r-1"), /quota/);
  assert.deepEqual([rated(), counters.ratingOf("youtube", "a").saved], [0, false], "acknowledged though not stored");
  await ack("r-1"); // still in the outbox: its resend is answered again
  assert.deepEqual([rated(), counters.ratingOf("youtube", "a").saved], [1, true]);
  storage.failSet = 1;
  await assert.rejects(counters.onTaskPage("youtube", ["a", "b"], "P1"), /quota/);
  assert.deepEqual(counters.taskPageOf, {}, "on a task page though not stored");
  await counters.onTaskPage("youtube", ["a", "b"], "P1"); // the page sends its comments again
  const before = stateOf();
  await restart();
  assert.deepEqual(stateOf(), before);
  assert.deepEqual(counters.taskPageOf, { "youtube|a": "P1", "youtube|b": "P1" });
});

test("a rating's mark is its outbox entry until acknowledged: a worker stopped before marking or forgetting it reads the outbox", async () => {
  await fresh();
  await counters.onTaskPage("youtube", ["a", "b"], "P1");
  await queueRating("a", "r-1"); // in the outbox; the worker stopped before it marked the comment
  await restart();
  assert.deepEqual([counters.ratingOf("youtube", "a").id, counters.ratingOf("youtube", "a").saved], ["r-1", false]);
  await ack("r-1");
  await restart();
  assert.deepEqual([rated(), counters.ratingOf("youtube", "a").saved], [1, true], "delivered and counted, yet unrated");
  assert.deepEqual(Object.keys(counters.ratedInStudy()), ["youtube|a"]);
  await rate("b", "r-2");
  await outbox.bury("r-2", { code: "invalid_fields", message: "refused" }); // the worker stopped before it forgot it
  await restart();
  assert.equal(counters.ratingOf("youtube", "b"), null, "a rating refused for good is still marked");
  assert.equal(rated(), 1);
});

test("marking and forgetting a rating write nothing; its acknowledgement stores the rating and its count in one write", async () => {
  await fresh();
  const entry = await queueRating("a", "r-1");
  writes.length = 0;
  storage.failSet = 1; // a write after the outbox's would fail: there is none
  counters.markRated(entry);
  storage.failSet = 0;
  assert.deepEqual(writes, []);
  assert.equal(counters.ratingOf("youtube", "a").id, "r-1");
  await ack("r-1");
  assert.deepEqual(writes.map(({ keys }) => keys.sort()), [["cc:rated:s1:r-1", "cc:rating:s1:r-1", "totals"]]);
  // stopped after the acknowledgement was stored, before the outbox let the message go: counted once
  await rate("b", "r-2");
  await counters.ratingSaved(outbox.get("r-2"));
  await restart();
  assert.deepEqual([rated(), counters.ratingOf("youtube", "b").saved], [2, true]);
  await ack("r-2"); // the resend, answered duplicate
  assert.equal(rated(), 2);
  await rate("c", "r-3");
  writes.length = 0;
  await refuse("r-3");
  assert.deepEqual(writes.map(({ keys }) => keys.filter((k) => k.startsWith("cc:"))), [[]], "only the dead letter is written");
  assert.equal(counters.ratingOf("youtube", "c"), null);
});

test("more than ten task pages and ratings of one comment: the latest wins, whatever order storage lists them in", async () => {
  await fresh();
  for (let n = 1; n <= 12; n++) { // seq 1..12: storage lists "…:10", "…:11", "…:12" before "…:2"
    await counters.onTaskPage("youtube", ["a"], `P${n}`);
    await rate("a", `r-${n}`, { toxicity: `answer ${n}` });
    if (n % 4) await ack(`r-${n}`); // most acknowledged, some waiting in the outbox
  }
  await rate("b", "r-b2", { toxicity: "second" });
  await rate("b", "r-b1", { toxicity: "third" }); // ids out of rating order
  await ack("r-b1");
  const seen = () => [counters.taskPageOf["youtube|a"], counters.ratingOf("youtube", "a").values.toxicity, counters.ratingOf("youtube", "b").values.toxicity];
  assert.deepEqual(seen(), ["P12", "answer 12", "third"]);
  await restart();
  assert.deepEqual(seen(), ["P12", "answer 12", "third"]);
  await ack("r-12");
  await restart();
  assert.deepEqual([...seen(), rated()], ["P12", "answer 12", "third", 11]);
});

test("a comment's latest rating is the one rated last, though the clock was set back or the worker restarted", async () => {
  await fresh();
  const now = Date.now;
  try {
    await rate("a", "r-1", { toxicity: "first" });
    await ack("r-1");
    Date.now = () => now() - 3_600_000; // the clock set back an hour
    await rate("a", "r-2", { toxicity: "second" });
    assert.equal(counters.ratingOf("youtube", "a").values.toxicity, "second");
    await ack("r-2");
    await restart(); // the outbox is empty: it numbers its entries on after the ratings stored
    assert.equal(counters.ratingOf("youtube", "a").values.toxicity, "second");
    await rate("a", "r-3", { toxicity: "third" });
    assert.equal(counters.ratingOf("youtube", "a").values.toxicity, "third");
    await restart();
    assert.equal(counters.ratingOf("youtube", "a").values.toxicity, "third");
    await ack("r-3");
    await restart();
    assert.equal(counters.ratingOf("youtube", "a").values.toxicity, "third");
  } finally {
    Date.now = now;
  }
});

test("an acknowledgement that came before the comment was marked keeps the rating acknowledged", async () => {
  await fresh();
  const entry = await queueRating("a", "r-1");
  await counters.ratingSaved(entry); // its answer came first
  counters.markRated(entry);
  assert.deepEqual([rated(), counters.ratingOf("youtube", "a").saved], [1, true]);
});

test("the rated and taskPageOf lists of earlier versions are moved, and what they counted is kept", async () => {
  stored.clear();
  stored.set("rated", {
    "youtube|a": { at: 1, values: { toxicity: "toxic" }, id: "r-1", study: "s1", saved: true },
    "youtube|b": { at: 2, values: { toxicity: "toxic" }, id: "r-2", study: "s1", saved: false }, // in the outbox
    "youtube|old": { at: 3, values: { toxicity: "not toxic" } }, // stored before ratings kept their id and state
  });
  stored.set("ob:r-2", { id: "r-2", seq: 1, message: { type: "rating", id: "r-2", comment: { platform: "youtube", key: "b" },
    values: { toxicity: "toxic" }, anchors: null }, route: null, study: "s1", attempts: 0, createdAt: 2 });
  stored.set("taskPageOf", { "youtube|a": "P1", "youtube|b": "P2" });
  stored.set("totals", { saved: 0, scored: 0, rated: 7, errors: 0 }); // 7 acknowledgements, counted without ids
  inStudy("s1");
  await restart();
  assert.ok(!stored.has("rated") && !stored.has("taskPageOf"), "the old lists are still rewritten");
  assert.equal(rated(), 7);
  assert.deepEqual(["a", "b", "old"].map((k) => counters.ratingOf("youtube", k).saved), [true, false, true]);
  assert.deepEqual(counters.taskPageOf, { "youtube|a": "P1", "youtube|b": "P2" });
  await ack("r-2");
  await counters.onTaskPage("youtube", ["a"], "P2");
  for (let i = 0; i < 2; i++) {
    await restart();
    assert.equal(rated(), 8);
    assert.equal(counters.ratingOf("youtube", "b").saved, true);
    assert.deepEqual(counters.taskPageOf, { "youtube|a": "P2", "youtube|b": "P2" });
  }
});
