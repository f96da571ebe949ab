// The worker's start (background.js ready()) against a fake `chrome`: what it stored is read back
// once, and the counters and the outbox rest on that one read.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { ORIGIN, fakeStorage, installWorkerChrome, loadWorker } from "./fakes.mjs";

const rating = (id, key, seq) => ({ id, seq, route: null, study: "s1", consent: null, attempts: 0, createdAt: 1,
  message: { type: "rating", id, comment: { platform: "youtube", key }, values: { toxicity: "toxic" }, anchors: null, time_spent_ms: 0 } });
const storage = fakeStorage([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }],
  ["study", { study_id: "s1", title: "t", consent_text: "the text", sampling: { mode: "all", salt: "x" } }],
  ["consent", { study_id: "s1", at: "2026-01-01T00:00:00Z", media: false, text: "the text" }],
  ["ob:r-waiting", rating("r-waiting", "c1", 3)], // in the outbox: marked, not saved
  ["cc:rated:s1:r-acked", { kind: "rated", study: "s1", ids: ["r-acked"] }], // acknowledged, with its record
  ["cc:rating:s1:r-acked", { kind: "rating", study: "s1", ids: ["r-acked"], id: "r-acked", comment: "youtube|c2", at: 1, values: { toxicity: "toxic" }, seq: 2 }],
  ["dead:r-refused", { ...rating("r-refused", "c3", 1), error: { code: "invalid_fields", message: "refused" } }], // refused for good
]);
const { listeners } = installWorkerChrome(storage);
const ns = loadWorker({ background: true });

test("a worker start reads storage whole once; the outbox, the dead letters and the counts rest on it", async () => {
  // a page asks for the state: answered after ready()
  const optionsPage = { id: "modlens-id", url: `${ORIGIN}/options.html`, tab: { id: 9 }, frameId: 0 };
  const state = await new Promise((respond) => listeners.message(ns.messages.getState(), optionsPage, respond));
  assert.ok(!state.error, state.error);
  assert.equal(storage.readsOfAll, 1, "storage read whole more than once at start");
  const { counters, delivery } = ns;
  assert.deepEqual([delivery.outbox.size, delivery.outbox.deadItems, counters.totals.rated], [1, 1, 1]);
  const mark = (key) => counters.ratingOf("youtube", key);
  assert.deepEqual([mark("c1").id, mark("c1").saved, mark("c2").id, mark("c2").saved, mark("c3")], ["r-waiting", false, "r-acked", true, null]);
});
