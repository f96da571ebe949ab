// A rating goes to the daemon naming the study it was given in (worker/page_messages.js, lib/protocol.js,
// worker/delivery.js), against a fake `chrome` and a fake daemon socket. The daemon stores a rating that
// names no study in whichever study it runs; one naming another study it refuses `study_mismatch`,
// nothing stored. Such a refusal is not retried for as long as it lasts: the rating is kept aside, its
// comment is unrated again and its page says why.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeSocket, fakeStorage, installWorkerChrome, loadWorker, startWorker } from "./fakes.mjs";

const A = { study_id: "A", title: "a", consent_text: "A's text", sampling: { mode: "all", salt: "x" } };
// a rating an earlier version queued under A: its outbox entry names the study, its message none
const older = { id: "r-older", seq: 1, route: null, study: "A", consent: null, attempts: 0, createdAt: 0,
  message: { type: "rating", id: "r-older", comment: { platform: "youtube", key: "old" }, values: { toxicity: "toxic" }, anchors: null } };
const storage = fakeStorage([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }],
  ["study", A], ["consent", { study_id: "A", at: "2026-01-01T00:00:00Z", media: false, text: A.consent_text }], ["ob:r-older", older]]);
const { broadcasts } = installWorkerChrome(storage);
const ns = loadWorker();
await startWorker(ns);
const { connection, counters, delivery } = ns;

connection.connect();
const socket = FakeSocket.opened.at(-1);
const hello = socket.open();
await ns.onDaemonMessage({ type: "hello_ok", id: hello.id, session_id: "sess-1", server_version: "0", protocol: 1,
  study: A, detectors: [], variants_enabled: false });
clearInterval(connection.keepaliveTimer);

const contentScript = { id: "modlens-id", url: "https://www.youtube.com/watch?v=a", tab: { id: 7, url: "https://www.youtube.com/watch?v=a" }, frameId: 0 };
const ask = (msg, sender) => Promise.resolve().then(() => ns.onPageMessage(msg, sender)).catch((err) => ({ error: err.message }));
const sentRatings = (id) => socket.sent.filter((m) => m.type === "rating" && m.id === id);

test("a rating goes to the daemon naming the study it was given in, the study its outbox entry is kept for", async () => {
  const answer = await ask(ns.messages.rate({ platform: "youtube", key: "k1" }, { values: { toxicity: "toxic" } }), contentScript);
  assert.equal(answer.queued, true, JSON.stringify(answer));
  assert.equal(delivery.outbox.get(answer.id).study, "A");
  assert.equal(delivery.outbox.get(answer.id).message.study_id, "A", "the stored message names it too (sent again after a restart)");
  assert.deepEqual(sentRatings(answer.id).map((m) => m.study_id), ["A"]);
});

test("a rating an earlier version queued goes naming the study its outbox entry was kept for", async () => {
  delivery.flush(true);
  const sent = sentRatings("r-older");
  assert.ok(sent.length >= 1, "not sent");
  assert.ok(sent.every((m) => m.study_id === "A"), JSON.stringify(sent));
});

// not sent again: no longer in the outbox (flush sends only what waits there), kept aside as a dead letter
test("a rating the daemon refuses as another study's is kept aside, unrated, its page told why, and not sent again", async () => {
  const before = delivery.totals();
  const answer = await ask(ns.messages.rate({ platform: "youtube", key: "k2" }, { values: { toxicity: "not toxic" } }), contentScript);
  assert.equal(counters.ratingOf("youtube", "k2").id, answer.id);
  const told = broadcasts.length;
  await ns.onDaemonMessage({ type: "error", id: answer.id, code: "study_mismatch",
    message: "study_id: the rating was given in study 'A', not the running study 'B'; nothing stored" });
  assert.ok(!delivery.outbox.has(answer.id), "still queued: resent for as long as the daemon runs another study");
  assert.deepEqual((await delivery.outbox.dead()).filter((d) => d.id === answer.id).map((d) => d.error.code), ["study_mismatch"]);
  assert.equal(counters.ratingOf("youtube", "k2"), null, "still marked rated, though nothing was stored");
  const refusals = broadcasts.slice(told).filter((m) => m.type === ns.MSG.ratingRefused);
  assert.deepEqual(refusals.map((m) => [m.comment.key, m.code]), [["k2", "study_mismatch"]]);
  assert.match(refusals[0].message, /not the running study 'B'/);
  const after = delivery.totals();
  assert.deepEqual([after.queued, after.not_delivered, after.rated || 0], [before.queued, before.not_delivered + 1, before.rated || 0]);
  // answered again (a resend crossed the first answer): neither counted nor told twice
  await ns.onDaemonMessage({ type: "error", id: answer.id, code: "study_mismatch", message: "again" });
  assert.equal(delivery.totals().not_delivered, before.not_delivered + 1);
  assert.equal(broadcasts.slice(told).filter((m) => m.type === ns.MSG.ratingRefused).length, 1);
});
