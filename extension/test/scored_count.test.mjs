// The popup's *scored* (worker/daemon_messages.js onScores, worker/counters.js) when storage fails
// the write that counts it: the daemon's `scores` message is neither acknowledged nor resent, so
// what it scored must be counted from memory once storage works again (the next scores message,
// or a retry on its own when none comes), and what is shown never exceeds what is stored.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as refTimeout } from "node:timers";
import { fakeStorage, installWorkerChrome, loadWorker, startWorker } from "./fakes.mjs";

const storage = fakeStorage([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }],
  ["study", { study_id: "s1", title: "t", consent_text: "the text", sampling: { mode: "all", salt: "x" } }],
  ["consent", { study_id: "s1", at: "2026-01-01T00:00:00Z", media: false, text: "the text" }]]);
const { broadcasts } = installWorkerChrome(storage);
const ns = loadWorker();
await startWorker(ns);
const { counters } = ns;

const tick = () => new Promise((resolve) => setImmediate(resolve));
const scoredItem = (id) => ({ key: `k${id}`, comment_id: id, truncated: false,
  detectors: { p: { name: "p", version: "1", labels: { toxic: 0.2 }, toxicity: 0.2, latency_ms: 1 } } });
let n = 0;
// the daemon's answer scoring comments `ids` (a handler's failure is what connection.handle logs)
const scores = (ids) => ns.onDaemonMessage({ type: "scores", id: `page-${++n}`, items: ids.map(scoredItem) }).catch((err) => err);
// scored as stored: the ids of the `cc:scored:` batches a restarted worker counts (counters.load)
const storedScored = () => [...storage.stored].filter(([k]) => k.startsWith("cc:scored:")).reduce((a, [, rec]) => a + rec.ids.length, 0);
const shownScored = () => broadcasts.filter((m) => m.type === "counts").at(-1)?.totals.scored;

test("scored ids whose write failed are counted with the next scores message, once storage works again", async () => {
  storage.failSet = 1;
  assert.match(String(await scores([1, 2])), /quota/);
  assert.deepEqual([counters.totals.scored, storedScored()], [0, 0], "counted though not stored");
  await scores([3]);
  assert.deepEqual([counters.totals.scored, storedScored(), shownScored()], [3, 3, 3], "1 and 2 were scored and never counted");
});

test("scored ids whose write failed are counted once storage works again though no scores message comes", async () => {
  counters.scoredRetryMs = 5; // the retry's wait, shortened for the test
  const before = counters.totals.scored;
  storage.failSet = 1;
  await scores([4, 5]);
  storage.failSet = 1; // the first retry fails too
  for (let i = 0; i < 200 && counters.totals.scored === before; i++) await new Promise((resolve) => refTimeout(resolve, 5)); // the fakes' timers keep no process alive
  assert.deepEqual([counters.totals.scored, storedScored(), shownScored()], [before + 2, before + 2, before + 2]);
});

test("scored ids owed to one study are counted in that study, though another runs when storage works again", async () => {
  counters.scoredRetryMs = 60_000; // only the next scores message retries
  const before = counters.totals.scored;
  storage.failSet = 1;
  await scores([6]);
  ns.config.study = { ...ns.config.study, study_id: "s2" };
  await scores([6]); // row 6 of s2's log is another comment
  assert.deepEqual([counters.totals.scored, storedScored()], [before + 2, before + 2]);
  assert.ok(storage.stored.has("cc:scored:s1:6") && storage.stored.has("cc:scored:s2:6"), [...storage.stored.keys()].join(" "));
  ns.config.study = { ...ns.config.study, study_id: "s1" };
});

test("what is shown never exceeds what is stored while a scored write hangs", async () => {
  const before = counters.totals.scored;
  storage.hangSet = 1;
  const hanging = scores([7]);
  await tick();
  assert.deepEqual([counters.totals.scored, storedScored()], [before, before]);
  storage.releaseHung(true);
  assert.match(String(await hanging), /quota/);
  assert.deepEqual([counters.totals.scored, storedScored()], [before, before]);
  await scores([]);
  assert.deepEqual([counters.totals.scored, storedScored(), shownScored()], [before + 1, before + 1, before + 1]);
});

test("a scored write that hangs holds up no later scores message: the next one counts its own ids meanwhile", { timeout: 5000 }, async () => {
  // one hung write must not stall every later scores message (and the socket's queue behind them):
  // its ids stay owed, and are counted once it holds or, if it fails, by a later call
  const before = counters.totals.scored;
  storage.hangSet = 1;
  const hanging = scores([10]);
  await tick();
  const next = await Promise.race([scores([11]).then(() => "done"), new Promise((resolve) => refTimeout(() => resolve("held up"), 200))]);
  assert.equal(next, "done", "the second scores message waited for the first one's hung write");
  assert.deepEqual([counters.totals.scored, storedScored()], [before + 1, before + 1], "11 counted and stored");
  storage.releaseHung(true); // the hung write fails: 10 stays owed
  assert.match(String(await hanging), /quota/);
  await scores([]);
  assert.deepEqual([counters.totals.scored, storedScored(), shownScored()], [before + 2, before + 2, before + 2]);
  assert.equal(counters.scoredOwed.size, 0);
});
