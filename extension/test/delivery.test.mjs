// Delivery's give-up rule (worker/delivery.js, lib/outbox.js) against a fake `chrome`: what the
// daemon refuses as retriable (`unavailable`: its study log cannot be written now) stays in the
// outbox however often it is refused; a rating whose page is still in the outbox is not given up
// for `unknown_comment`; a handshake answered `unavailable` is tried again, not shown as refused.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { setInterval as refInterval } from "node:timers";
import { FakeSocket, fakeStorage, installWorkerChrome, loadWorker, startWorker } from "./fakes.mjs";

const storage = fakeStorage([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }],
  ["study", { study_id: "s1", title: "t", consent_text: "the text", sampling: { mode: "all", salt: "x" } }],
  ["consent", { study_id: "s1", at: "2026-01-01T00:00:00Z", media: false, text: "the text" }]]);
const { broadcasts } = installWorkerChrome(storage);
const sockets = FakeSocket.opened;
const ns = loadWorker();
await startWorker(ns);
const { delivery } = ns;

const page = { type: "comments", id: "page-1", page: { url: "https://www.youtube.com/watch?v=a", platform: "youtube", page_key: "a" },
  items: [{ key: "c1", text: "first" }, { key: "c2", text: "second" }] };
const rating = (id, key) => ({ type: "rating", id, comment: { platform: "youtube", key }, values: { toxicity: "toxic" }, anchors: null });
const refuse = (id, code) => ns.onDaemonMessage({ type: "error", id, code, message: `${code} for the test` });

test("a page refused as unavailable stays in the outbox however long that lasts, then goes on its ack", async () => {
  await delivery.queue(page, null);
  for (let i = 0; i < 12; i++) await refuse("page-1", "unavailable");
  assert.ok(delivery.outbox.has("page-1"));
  assert.equal(delivery.outbox.get("page-1").attempts, 12);
  assert.deepEqual(await delivery.outbox.dead(), []);
  await ns.onDaemonMessage({ type: "comments_ok", id: "page-1", accepted: 2, truncated: [], comment_ids: { c1: 1, c2: 2 } });
  assert.ok(!delivery.outbox.has("page-1"));
});

test("a rating of a comment whose page is still in the outbox is not given up for unknown_comment", async () => {
  await delivery.queue({ ...page, id: "page-2" }, null);
  await delivery.queue(rating("r-wait", "c2"), null);
  for (let i = 0; i < 9; i++) await refuse("r-wait", "unknown_comment");
  assert.ok(delivery.outbox.has("r-wait"), "buried while its page was waiting to be stored");
  await delivery.acknowledged("page-2"); // the page is stored now: the usual few tries apply again
  for (let i = 0; i < 2; i++) await refuse("r-wait", "unknown_comment");
  assert.ok(!delivery.outbox.has("r-wait"));
  assert.deepEqual((await delivery.outbox.dead()).map((d) => [d.id, d.error.code]), [["r-wait", "unknown_comment"]]);
});

test("a rating of a comment no page in the outbox holds is given up after a few unknown_comment answers", async () => {
  await delivery.queue(rating("r-orphan", "never-sent"), null);
  for (let i = 0; i < 5; i++) await refuse("r-orphan", "unknown_comment");
  assert.ok(delivery.outbox.has("r-orphan"));
  await refuse("r-orphan", "unknown_comment");
  assert.ok(!delivery.outbox.has("r-orphan"));
});

test("a handshake answered unavailable is tried again on a new socket, not shown as refused", async () => {
  clearTimeout(ns.connection.reconnectTimer);
  ns.connection.reconnectTimer = null;
  ns.connection.ws = null;
  ns.connection.connect();
  const ws = sockets.at(-1);
  const helloId = ns.connection.hello("T0KEN-0123456789").id;
  await ns.onDaemonMessage({ type: "error", id: helloId, code: "unavailable", message: "the study log cannot be written" });
  assert.equal(ns.connection.status, "disconnected");
  assert.match(ns.connection.lastError, /unavailable.*trying again/);
  assert.ok(ws.closed && ns.connection.ws === null && ns.connection.reconnectTimer, "no new try was scheduled");
});

test("a page counts as saved once, with the rows the daemon named, and waits as its comments", async () => {
  const saved = ns.counters.totals.saved;
  const waiting = delivery.outbox.waitingItems();
  await delivery.queue({ ...page, id: "page-saved" }, null);
  await delivery.queue(rating("r-saved", "c1"), null);
  assert.equal(delivery.outbox.waitingItems(), waiting + 3, "2 comments and 1 rating wait");
  assert.equal(ns.counters.totals.saved, saved, "queued is not saved");
  const ok = { type: "comments_ok", id: "page-saved", accepted: 2, truncated: [], comment_ids: { c1: 7, c2: 8 } };
  await ns.onDaemonMessage(ok);
  await ns.onDaemonMessage(ok); // the answer to the same page sent twice before its first answer came
  assert.equal(ns.counters.totals.saved, saved + 2);
  assert.equal(delivery.outbox.waitingItems(), waiting + 1);
});

test("a page observed again sends its comments again: while both messages wait, queued counts each comment once", async () => {
  const contentScript = { id: "modlens-id", url: "https://www.youtube.com/watch?v=again", tab: { id: 7, url: "https://www.youtube.com/watch?v=again" }, frameId: 0 };
  const pg = { url: "https://www.youtube.com/watch?v=again", platform: "youtube", page_key: "again", title: "t" };
  const items = [{ key: "again-1", text: "first", author: "a" }, { key: "again-2", text: "second", author: "b" }];
  const before = delivery.totals().queued;
  const first = await ns.onPageMessage(ns.messages.comments("youtube", pg, items), contentScript);
  // the participant paused and went on (or switched the site off and on): the observer starts again
  // and the page sends the same comments, while the first message still waits (the daemon is down)
  const again = await ns.onPageMessage(ns.messages.comments("youtube", pg, items), contentScript);
  assert.ok(first.queued && again.queued);
  assert.equal(delivery.totals().queued, before + 2, "2 comments wait, in two messages");
  // a rating of one of them is one more thing waiting, whatever else waits for that comment
  await delivery.queue(rating("r-again", "again-1"), null);
  assert.equal(delivery.totals().queued, before + 3);
  for (const id of [...first.ids, ...again.ids, "r-again"]) await delivery.acknowledged(id);
  assert.equal(delivery.totals().queued, before);
});

test("the same comments set aside twice (two messages of a page refused for good) are counted once as not delivered", async () => {
  const before = delivery.totals().not_delivered;
  for (const id of ["page-dead-a", "page-dead-b"]) {
    await delivery.queue({ ...page, id, items: [{ key: "dead-1", text: "one" }, { key: "dead-2", text: "two" }] }, null);
    await refuse(id, "invalid_fields");
  }
  assert.deepEqual(["page-dead-a", "page-dead-b"].map((id) => delivery.outbox.has(id)), [false, false]);
  assert.equal(delivery.totals().not_delivered, before + 2, "2 comments kept aside, in two dead letters");
  // a restarted worker counts the stored dead letters the same way
  const restarted = new ns.Outbox(chrome.storage.local);
  await restarted.load();
  assert.equal(restarted.deadItems, delivery.totals().not_delivered);
});

test("scored counts comments a detector scored, once, however often the daemon answers the page", async () => {
  const before = ns.counters.totals.scored;
  const scores = { type: "scores", id: "page-scored", items: [
    { key: "s1", comment_id: 1, truncated: false, detectors: { p: { name: "p", version: "1", labels: { toxic: 0.2 }, toxicity: 0.2, latency_ms: 1 } } },
    { key: "s2", comment_id: 2, truncated: false, detectors: {}, not_scored: "whitespace" },
    { key: "s3", comment_id: 3, truncated: false, detectors: { p: { name: "p", version: "1", labels: null, toxicity: null, latency_ms: 1, error: "timeout" } } },
  ] };
  await ns.onDaemonMessage(scores);
  await ns.onDaemonMessage(scores); // the same page sent again before its first answer: answered again
  assert.equal(ns.counters.totals.scored, before + 1);
});

test("a rating refused for good leaves its comment unrated; one acknowledged is marked saved", async () => {
  ns.counters.markRated(await delivery.queue(rating("r-bad", "c9"), null));
  await refuse("r-bad", "invalid_fields");
  assert.equal(ns.counters.ratingOf("youtube", "c9"), null);
  ns.counters.markRated(await delivery.queue(rating("r-good", "c9"), null));
  assert.equal(ns.counters.ratingOf("youtube", "c9").saved, false);
  await ns.onDaemonMessage({ type: "rating_ok", id: "r-good", rating_id: 4, derived_toxicity: null, inconsistent: false, duplicate: false });
  assert.equal(ns.counters.ratingOf("youtube", "c9").saved, true);
});

test("a refusal for good whose dead letter cannot be written leaves the message queued and marked, not gone", async () => {
  // a full storage refuses the dead letter's write: the message must still be somewhere, the
  // outbox (queued, refused again on its resend) or the dead letters (not delivered)
  const before = delivery.totals();
  ns.counters.markRated(await delivery.queue(rating("r-nowhere", "c8"), null));
  storage.failSet = 1; // the dead letter's write fails
  await assert.rejects(refuse("r-nowhere", "invalid_fields"), /quota/);
  const after = delivery.totals();
  assert.deepEqual([after.queued, after.not_delivered], [before.queued + 1, before.not_delivered], "neither queued nor kept aside");
  assert.equal(ns.counters.ratingOf("youtube", "c8").id, "r-nowhere", "still marked while it is queued");
  const reloaded = new ns.Outbox(chrome.storage.local); // the worker restarted
  await reloaded.load();
  assert.ok(reloaded.has("r-nowhere"), "gone from storage");
  await refuse("r-nowhere", "invalid_fields"); // refused again on its resend: now a dead letter
  assert.deepEqual([delivery.totals().queued, delivery.totals().not_delivered], [before.queued, before.not_delivered + 1]);
  assert.equal(ns.counters.ratingOf("youtube", "c8"), null);
  const again = new ns.Outbox(chrome.storage.local);
  await again.load();
  assert.deepEqual([again.has("r-nowhere"), again.deadItems], [false, before.not_delivered + 1]);
  // a worker stopped between the dead letter's write and the entry's removal: it is dead, not also queued
  const half = await delivery.queue(rating("r-half", "c7"), null);
  await chrome.storage.local.set({ "dead:r-half": { ...half, error: { code: "invalid_fields", message: "for the test" } } });
  const restarted = new ns.Outbox(chrome.storage.local);
  await restarted.load();
  assert.deepEqual([restarted.has("r-half"), restarted.deadItems], [false, before.not_delivered + 2]);
  assert.ok(!storage.stored.has("ob:r-half"), "its outbox entry is left in storage, skipped at every start");
  await delivery.outbox.ack("r-half");
  await chrome.storage.local.remove("dead:r-half"); // (the case built by hand: the other tests do not count it)
});

test("the page is told a rating was not saved exactly when it is neither queued nor marked", async () => {
  // as background.js answers a page: a handler's exception becomes {error}, the page's "Not saved: …"
  const ask = (msg, sender) => Promise.resolve().then(() => ns.onPageMessage(msg, sender)).catch((err) => ({ error: err.message }));
  const sender = { id: "modlens-id", url: "https://www.youtube.com/watch?v=a", tab: { id: 7, url: "https://www.youtube.com/watch?v=a" }, frameId: 0 };
  for (let n = 1; n <= 3; n++) { // the first, second or third write while it is handled fails
    const key = `not-saved-${n}`;
    storage.failSet = n; // the n-th set() from now fails
    const answer = await ask(ns.messages.rate({ platform: "youtube", key }, { values: { toxicity: "toxic" } }), sender);
    storage.failSet = 0;
    const queued = delivery.outbox.pending().filter((e) => e.message.type === "rating" && e.message.comment.key === key);
    const mark = ns.counters.ratingOf("youtube", key);
    if (answer.queued) {
      assert.deepEqual([queued.map((e) => e.id), mark && mark.id], [[answer.id], answer.id], `write ${n}`);
    } else {
      assert.match(answer.error || "", /quota/, `write ${n}`);
      assert.deepEqual([queued, mark], [[], null], `write ${n}: the page says "Not saved", yet it is queued or marked`);
    }
  }
});

test("what was queued under one study is set aside, not sent, once the daemon runs another", async () => {
  const s1 = ns.config.study;
  await delivery.queue({ ...page, id: "page-s1" }, null);
  ns.counters.markRated(await delivery.queue(rating("r-s1", "c5"), null));
  await ns.onDaemonMessage({ type: "rating_ok", id: "r-s1", rating_id: 5, derived_toxicity: null, inconsistent: false, duplicate: false });
  assert.equal(delivery.outbox.get("page-s1").study, "s1");
  // another study, with a consent text of its own: set aside as another study's, not as another text's
  await ns.config.setStudy({ ...s1, study_id: "s2", consent_text: "study s2's text" }, []);
  await delivery.setAsideNotConsentedTo(ns.config.study);
  assert.ok(!delivery.outbox.has("page-s1"));
  assert.deepEqual((await delivery.outbox.dead()).filter((d) => d.id === "page-s1").map((d) => d.error.code), ["study_changed"]);
  assert.equal(ns.counters.ratingOf("youtube", "c5"), null, "a rating for s1 is not one in s2");
  await ns.config.setStudy(s1, []);
  assert.equal(ns.counters.ratingOf("youtube", "c5").id, "r-s1");
});

test("what was queued under an earlier consent text is set aside and counted, not delivered under the new one", async () => {
  const before = ns.config.study, agreed = ns.config.consent;
  assert.equal(agreed.sha256, await ns.sha256Hex("the text"), "the consent names its text by its hash");
  assert.equal(ns.protocol.hello({ token: "t", raterId: "r", consent: agreed }).consent_sha256, agreed.sha256);
  await delivery.queue({ ...page, id: "page-old-text" }, null);
  ns.counters.markRated(await delivery.queue(rating("r-old-text", "c6"), null));
  assert.equal(delivery.outbox.get("page-old-text").consent, agreed.sha256);
  const counted = delivery.totals().consent_discarded;
  // the daemon comes back on the same study with another consent text; the participant agrees to it
  await ns.onDaemonMessage({ type: "hello_ok", id: "h", session_id: "s", server_version: "0", protocol: 1,
    study: { ...before, consent_text: "the new text" }, detectors: [], variants_enabled: false });
  await ns.config.setConsent(true, before.study_id);
  assert.ok(ns.config.consented());
  const frames = [];
  Object.assign(ns.connection, { ws: { readyState: 1, send: (f) => frames.push(JSON.parse(f)), close() {} }, sessionId: "sess" });
  delivery.flush(true);
  assert.deepEqual(frames.filter((f) => f.id === "page-old-text" || f.id === "r-old-text"), []);
  assert.ok(!delivery.outbox.has("page-old-text") && !delivery.outbox.has("r-old-text"));
  const dead = (await delivery.outbox.dead()).filter((d) => ["page-old-text", "r-old-text"].includes(d.id));
  assert.deepEqual(dead.map((d) => d.error.code), ["consent_changed", "consent_changed"]);
  assert.equal(delivery.totals().consent_discarded, counted + 3, "two comments and a rating");
  assert.equal(ns.counters.ratingOf("youtube", "c6"), null, "a rating under the earlier text is not one under the new");
  // what is queued under the new consent goes
  await delivery.queue({ ...page, id: "page-new-text" }, null);
  delivery.flush(true);
  assert.ok(frames.some((f) => f.id === "page-new-text"));
  clearInterval(ns.connection.keepaliveTimer); // hello_ok started the session's keep-alive
  Object.assign(ns.connection, { ws: null, sessionId: null });
  await ns.config.setStudy(before, []);
  ns.config.consent = agreed;
});

test("images count as sent when they go on the socket, once, not when queued", async () => {
  const sent = ns.counters.totals.media_sent || 0;
  const frames = [];
  const media = { type: "comment_media", id: "media-1", platform: "youtube", comment_key: "c1",
    items: [{ mime: "image/png", sha256: "ab".repeat(32), data_b64: "iVBORw0KGgo=", url: null, position: 0 }] };
  await delivery.queue(media, null, { persist: false });
  assert.equal(ns.counters.totals.media_sent || 0, sent, "queued is not sent");
  Object.assign(ns.connection, { ws: { readyState: 1, send: (f) => frames.push(JSON.parse(f)), close() {} }, sessionId: "sess" });
  try {
    delivery.flush(true);
    delivery.flush(true); // sent again (a new socket): the same images
  } finally {
    Object.assign(ns.connection, { ws: null, sessionId: null });
  }
  assert.equal(frames.filter((f) => f.id === "media-1").length, 2);
  await new Promise((resolve) => setImmediate(resolve)); // the count is stored before it shows
  assert.equal(ns.counters.totals.media_sent, sent + 1);
});

test("a rating counts as rated on its first acknowledgement, even one that says the daemon had it already", async () => {
  // sent, written, the socket gone before rating_ok: the resend is answered duplicate: true, and it
  // is the only answer this browser gets for the rating the log holds
  const rated = ns.counters.totals.rated;
  await delivery.queue(rating("r-dup", "c1"), null);
  const ok = { type: "rating_ok", id: "r-dup", rating_id: 9, derived_toxicity: null, inconsistent: false, duplicate: true };
  await ns.onDaemonMessage(ok);
  assert.equal(ns.counters.totals.rated, rated + 1);
  await ns.onDaemonMessage(ok); // answered twice (sent twice on one socket): counted once
  assert.equal(ns.counters.totals.rated, rated + 1);
});

test("saved and scored count a comment's log row once: its page sent again, and after the worker restarted", async () => {
  const before = { ...ns.counters.totals };
  const item = (key, id) => ({ key, comment_id: id, truncated: false,
    detectors: { p: { name: "p", version: "1", labels: { toxic: 0.2 }, toxicity: 0.2, latency_ms: 1 } } });
  for (const [n, id] of [[1, "again-1"], [2, "again-2"], [3, "again-3"]]) {
    if (n === 3) await ns.counters.load(await chrome.storage.local.get(null), delivery.outbox); // the worker stopped: what it counted is read back from storage
    await delivery.queue({ ...page, id }, null);
    await ns.onDaemonMessage({ type: "comments_ok", id, accepted: 2, truncated: [], comment_ids: { c1: 41, c2: 42 } });
    await ns.onDaemonMessage({ type: "scores", id, items: [item("c1", 41), item("c2", 42)] });
    assert.equal(ns.counters.totals.saved, before.saved + 2, `load ${n}`);
    assert.equal(ns.counters.totals.scored, before.scored + 2, `load ${n}`);
  }
});

test("what was set aside is counted the same after the worker restarted: read back from the dead letters", async () => {
  const before = delivery.totals();
  // comments of their own: c1 and c2 were set aside by earlier tests, and a comment is counted once
  await delivery.queue({ ...page, id: "page-restart", items: [{ key: "restart-1", text: "one" }, { key: "restart-2", text: "two" }] }, null);
  await delivery.queue(rating("r-restart", "c1"), null);
  await delivery.retire(delivery.outbox.get("page-restart"), { code: "consent_changed", message: "for the test" });
  await refuse("r-restart", "invalid_fields");
  const counted = delivery.totals();
  assert.equal(counted.consent_discarded, before.consent_discarded + 2, "the page's two comments");
  assert.equal(counted.not_delivered, before.not_delivered + 3, "two comments and a rating");
  // the browser stopped the worker: a new one reads the outbox back from storage (outbox.load)
  delivery.outbox = new ns.Outbox(chrome.storage.local);
  await delivery.outbox.load();
  const reloaded = delivery.totals();
  assert.equal(reloaded.consent_discarded, counted.consent_discarded);
  assert.equal(reloaded.not_delivered, counted.not_delivered);
});

// The daemon's answers as the socket hands them over (connection.handle, what background.js wires up).
const arrive = (...msgs) => {
  clearTimeout(ns.connection.reconnectTimer); // no new socket mid-test: its chain would drop these
  ns.connection.reconnectTimer = null;
  ns.connection.onMessage = ns.onDaemonMessage;
  return Promise.allSettled(msgs.map((m) => ns.connection.handle(m)));
};

test("two acknowledgements of one rating at once, the first write failing: the second stores it itself", async () => {
  // a resend crossed the first answer: the duplicate answer comes while the first one's write is
  // still under way; that write fails. The second is handled only once the first is done, so it
  // counts and stores the rating itself: never dropped from the outbox on the strength of the
  // first's write, never left counted by a write that failed.
  const rated = ns.counters.totals.rated;
  await delivery.queue(rating("r-twice", "c2"), null);
  const ok = { type: "rating_ok", id: "r-twice", rating_id: 11, derived_toxicity: null, inconsistent: false, duplicate: false };
  storage.failSet = 1; // the first handler's write fails
  const answers = await arrive(ok, { ...ok, duplicate: true });
  assert.deepEqual(answers.map((a) => a.status), ["rejected", "fulfilled"]);
  assert.equal(ns.counters.totals.rated, rated + 1);
  assert.ok(!delivery.outbox.has("r-twice"));
  await ns.counters.load(await chrome.storage.local.get(null), delivery.outbox); // the worker restarted
  assert.equal(ns.counters.totals.rated, rated + 1);
  assert.equal(ns.counters.ratingOf("youtube", "c2").id, "r-twice", "marked rated after a restart");
});

test("two acknowledgements of one page at once, the first write failing: the second counts the page itself", async () => {
  const saved = ns.counters.totals.saved;
  await delivery.queue({ ...page, id: "page-twice" }, null);
  const ok = { type: "comments_ok", id: "page-twice", accepted: 2, truncated: [], comment_ids: { c1: 71, c2: 72 } };
  storage.failSet = 1;
  const answers = await arrive(ok, ok);
  assert.deepEqual(answers.map((a) => a.status), ["rejected", "fulfilled"]);
  assert.equal(ns.counters.totals.saved, saved + 2);
  assert.ok(!delivery.outbox.has("page-twice"));
  // one row of the first answer, both of the second: 71 rolled back, then counted once by the second
  await delivery.queue({ ...page, id: "page-partly" }, null);
  const both = { ...ok, id: "page-partly", comment_ids: { c1: 81, c2: 82 } };
  storage.failSet = 1;
  const mixed = await arrive({ ...both, comment_ids: { c1: 81 } }, both);
  assert.deepEqual(mixed.map((a) => a.status), ["rejected", "fulfilled"]);
  assert.equal(ns.counters.totals.saved, saved + 4);
  assert.ok(!delivery.outbox.has("page-partly"));
  await ns.counters.load(await chrome.storage.local.get(null), delivery.outbox); // the worker restarted
  assert.equal(ns.counters.totals.saved, saved + 4, "counted once each after a restart");
});

test("the daemon's messages are handled one after another, in the order they came, past a failed one", async () => {
  const log = [];
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  ns.connection.onMessage = async (msg) => {
    log.push(`start ${msg.id}`);
    await tick();
    await tick();
    log.push(`end ${msg.id}`);
    if (msg.id === "a") throw new Error("a fails");
  };
  const error = console.error;
  console.error = () => {};
  try {
    const done = await Promise.allSettled(["a", "b", "c"].map((id) => ns.connection.handle({ type: "x", id })));
    assert.deepEqual(done.map((d) => d.status), ["rejected", "fulfilled", "fulfilled"]);
  } finally {
    console.error = error;
  }
  assert.deepEqual(log, ["start a", "end a", "start b", "end b", "start c", "end c"]);
});

/** Runs `body` with console.error silenced (the failed handlings it logs) and the worker's own
 *  message handler and handler timeout put back after it; the event loop is kept alive meanwhile
 *  (the worker's timers are unref'd here, and the handler timeout is one). */
async function quietly(body) {
  const [error, limit] = [console.error, ns.connection.handleTimeoutMs];
  const alive = refInterval(() => {}, 1000);
  console.error = () => {};
  try {
    await body();
  } finally {
    clearInterval(alive);
    Object.assign(ns.connection, { onMessage: ns.onDaemonMessage, handleTimeoutMs: limit });
    console.error = error;
  }
}

test("a handler that never ends holds the next message up only until the handler timeout, and counts as failed", { timeout: 5000 }, async () => {
  clearTimeout(ns.connection.reconnectTimer);
  ns.connection.reconnectTimer = null;
  await quietly(async () => {
    const log = [];
    ns.connection.handleTimeoutMs = 20;
    ns.connection.onMessage = (msg) => { log.push(msg.id); return msg.id === "hangs" ? new Promise(() => {}) : Promise.resolve(); };
    const done = await Promise.allSettled(["hangs", "next"].map((id) => ns.connection.handle({ type: "x", id })));
    assert.deepEqual(done.map((d) => d.status), ["rejected", "fulfilled"]);
    assert.match(done[0].reason.message, /did not end in 0\.02 s/);
    assert.deepEqual(log, ["hangs", "next"]);
  });
});

test("a new socket's messages do not wait for the old one's, and the old one's queued messages are dropped", { timeout: 5000 }, async () => {
  clearTimeout(ns.connection.reconnectTimer);
  ns.connection.reconnectTimer = null;
  await quietly(async () => {
    const log = [];
    let release;
    ns.connection.onMessage = (msg) => { log.push(msg.id); return msg.id === "slow" ? new Promise((resolve) => { release = resolve; }) : Promise.resolve(); };
    ns.connection.reconnectNow();
    const old = sockets.at(-1);
    old.open();
    const slow = ns.connection.handle({ type: "x", id: "slow" }, old);
    const stale = ns.connection.handle({ type: "hello_ok", id: "stale", session_id: "old-session" }, old);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log, ["slow"], "the slow handler is running, the stale hello_ok waits for it");
    ns.connection.reconnectNow(); // the daemon restarted: a new socket
    const fresh = sockets.at(-1);
    assert.notEqual(fresh, old);
    fresh.open();
    await ns.connection.handle({ type: "x", id: "fresh" }, fresh); // not held up by the old socket's slow handler
    assert.deepEqual(log, ["slow", "fresh"]);
    // a message that still comes on the old socket is dropped and leaves the new socket's order alone
    let releaseFresh;
    ns.connection.onMessage = (msg) => { log.push(msg.id); return msg.id === "fresh-slow" ? new Promise((resolve) => { releaseFresh = resolve; }) : Promise.resolve(); };
    const freshSlow = ns.connection.handle({ type: "x", id: "fresh-slow" }, fresh);
    const late = ns.connection.handle({ type: "x", id: "late-old" }, old);
    const freshNext = ns.connection.handle({ type: "x", id: "fresh-next" }, fresh);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(log, ["slow", "fresh", "fresh-slow"], "the new socket's next message ran before the one before it ended");
    releaseFresh();
    await Promise.allSettled([freshSlow, late, freshNext]);
    assert.deepEqual(log, ["slow", "fresh", "fresh-slow", "fresh-next"]);
    assert.deepEqual((await Promise.allSettled([late])).map((d) => d.status), ["rejected"]);
    release();
    const [slowDone, staleDone] = await Promise.allSettled([slow, stale]);
    assert.equal(slowDone.status, "fulfilled");
    assert.equal(staleDone.status, "rejected");
    assert.match(staleDone.reason.message, /socket was closed before its turn/);
    assert.deepEqual(log.filter((id) => id === "stale"), [], "the old socket's queued message ran after the reconnect");
  });
  ns.connection.endSession("test over");
});

// A storage write that hangs past the handler timeout and then fails: the next message (a
// duplicate answer to a resend) runs while it hangs. The ids that write was to count must leave
// the outbox only once they are stored, by that write or by the duplicate's own.
const later = () => new Promise((resolve) => setTimeout(resolve, 30));

test("an answer handled while the first answer's write hangs past the timeout, that write then failing: the page is counted and stored, not lost", { timeout: 5000 }, async () => {
  await quietly(async () => {
    ns.connection.handleTimeoutMs = 20;
    const saved = ns.counters.totals.saved;
    await delivery.queue({ ...page, id: "page-hung" }, null);
    const ok = { type: "comments_ok", id: "page-hung", accepted: 2, truncated: [], comment_ids: { c1: 91, c2: 92 } };
    storage.hangSet = 1; // the first handler's write hangs
    await arrive(ok, ok);
    assert.ok(delivery.outbox.has("page-hung"), "let go while no write that counts it has held");
    assert.equal(delivery.totals().saved, saved, "the popup counts what is not stored yet");
    storage.releaseHung(true); // ... then fails
    await later();
    assert.equal(ns.counters.totals.saved, saved + 2);
    assert.ok(!delivery.outbox.has("page-hung"));
    await ns.counters.load(await chrome.storage.local.get(null), delivery.outbox); // the worker restarted
    assert.equal(ns.counters.totals.saved, saved + 2, "stored: counted after a restart");
  });
});

test("a rating answered again while the first answer's write hangs past the timeout, that write then failing: counted, marked, stored", { timeout: 5000 }, async () => {
  await quietly(async () => {
    ns.connection.handleTimeoutMs = 20;
    const rated = ns.counters.totals.rated;
    await delivery.queue(rating("r-hung", "c3"), null);
    const ok = { type: "rating_ok", id: "r-hung", rating_id: 12, derived_toxicity: null, inconsistent: false, duplicate: false };
    storage.hangSet = 1;
    await arrive(ok, { ...ok, duplicate: true });
    assert.ok(delivery.outbox.has("r-hung"), "let go while no write that counts it has held");
    storage.releaseHung(true);
    await later();
    assert.equal(ns.counters.totals.rated, rated + 1);
    assert.ok(!delivery.outbox.has("r-hung"));
    await ns.counters.load(await chrome.storage.local.get(null), delivery.outbox); // the worker restarted
    assert.equal(ns.counters.totals.rated, rated + 1, "stored: counted after a restart");
    assert.equal((ns.counters.ratingOf("youtube", "c3") || {}).id, "r-hung", "marked rated after a restart");
  });
});

test("an answer handled while the first answer's write hangs, that write then holding: counted once, written once", { timeout: 5000 }, async () => {
  await quietly(async () => {
    ns.connection.handleTimeoutMs = 20;
    const saved = ns.counters.totals.saved;
    await delivery.queue({ ...page, id: "page-slow" }, null);
    const ok = { type: "comments_ok", id: "page-slow", accepted: 2, truncated: [], comment_ids: { c1: 93, c2: 94 } };
    storage.hangSet = 1;
    await arrive(ok, ok);
    assert.ok(delivery.outbox.has("page-slow"));
    storage.writes.length = 0;
    storage.releaseHung(false); // ... then is written
    await later();
    assert.equal(ns.counters.totals.saved, saved + 2);
    assert.ok(!delivery.outbox.has("page-slow"));
    assert.equal(storage.writes.filter((w) => w.keys.some((k) => k.startsWith("cc:saved:"))).length, 1, "written by the first answer alone");
    await ns.counters.load(await chrome.storage.local.get(null), delivery.outbox);
    assert.equal(ns.counters.totals.saved, saved + 2);
  });
});

test("a refusal for good answered again while its dead letter's write hangs past the timeout: not delivered counts it once, its page is told once", { timeout: 5000 }, async () => {
  // the first refusal's dead-letter write hangs; its handler is given up on, the message resent and
  // refused again: the second burial must be the first one, not another count of the same message
  await quietly(async () => {
    ns.connection.handleTimeoutMs = 20;
    const before = delivery.totals();
    const route = { tabId: 7, frameId: 0, platform: "youtube" };
    ns.counters.markRated(await delivery.queue(rating("r-buried-twice", "c4"), route));
    const told = () => broadcasts.filter((m) => m.type === ns.MSG.ratingRefused && m.comment.key === "c4").length;
    const refusal = { type: "error", id: "r-buried-twice", code: "invalid_fields", message: "invalid_fields for the test" };
    storage.hangSet = 1; // the dead letter's write hangs
    await arrive(refusal);
    assert.ok(delivery.outbox.has("r-buried-twice"), "queued while its dead letter is not written");
    await arrive(refusal); // resent (the first handler was given up on) and refused again
    storage.releaseHung(false); // ... then the first write holds
    await later();
    assert.deepEqual([delivery.totals().not_delivered, delivery.totals().queued], [before.not_delivered + 1, before.queued]);
    assert.equal(told(), 1, "the page was told more than once");
    const restarted = new ns.Outbox(chrome.storage.local);
    await restarted.load();
    assert.equal(restarted.deadItems, delivery.totals().not_delivered, "the count differs from the dead letters stored");
  });
});

test("a burial whose write hangs and then fails leaves the message queued for every refusal that waited on it", { timeout: 5000 }, async () => {
  await quietly(async () => {
    ns.connection.handleTimeoutMs = 20;
    const before = delivery.totals();
    await delivery.queue(rating("r-bury-fails", "c4"), null);
    const refusal = { type: "error", id: "r-bury-fails", code: "invalid_fields", message: "invalid_fields for the test" };
    storage.hangSet = 1;
    await arrive(refusal);
    const second = delivery.outbox.bury("r-bury-fails", { code: "invalid_fields", message: "again" });
    storage.releaseHung(true); // ... then fails
    await assert.rejects(second, /quota/);
    assert.deepEqual([delivery.totals().not_delivered, delivery.totals().queued], [before.not_delivered, before.queued + 1]);
    await refuse("r-bury-fails", "invalid_fields"); // refused again on its resend, storage working: buried once
    assert.deepEqual([delivery.totals().not_delivered, delivery.totals().queued], [before.not_delivered + 1, before.queued]);
  });
});

// The options page asking the worker, as background.js answers it (a handler's exception becomes {error}),
// the participant's consent to the current study given first where it is not.
async function consentedOnOptionsPage() {
  const ask = (msg, sender) => Promise.resolve().then(() => ns.onPageMessage(msg, sender)).catch((err) => ({ error: err.message }));
  const optionsPage = { id: "modlens-id", url: `${chrome.runtime.getURL("")}options.html`, tab: { id: 9 }, frameId: 0 };
  const study = ns.config.study;
  if (!ns.config.consented()) assert.equal((await ask(ns.messages.consent(true, study.study_id, study.consent_text), optionsPage)).ok, true);
  return { ask, optionsPage, study };
}

// One flush onto an open socket: the frames it sent. The socket is taken away after, and the keep-alive
// a hello_ok started is stopped.
function flushOnOpenSocket() {
  const frames = [];
  Object.assign(ns.connection, { ws: { readyState: 1, send: (f) => frames.push(JSON.parse(f)), close() {} }, sessionId: "sess" });
  try {
    delivery.flush(true);
  } finally {
    clearInterval(ns.connection.keepaliveTimer);
    Object.assign(ns.connection, { ws: null, sessionId: null });
  }
  return frames;
}

test("what was queued before a withdrawal is set aside and counted, not delivered once the participant agrees again", async () => {
  const { ask, optionsPage, study } = await consentedOnOptionsPage();
  const before = delivery.totals();
  // comments of their own: earlier tests left c1 and c2 waiting (in before.queued), and a comment is counted once
  await delivery.queue({ ...page, id: "page-before-withdrawal", items: [{ key: "withdrawn-1", text: "one" }, { key: "withdrawn-2", text: "two" }] }, null);
  ns.counters.markRated(await delivery.queue(rating("r-before-withdrawal", "c7"), null));
  // the participant withdraws, then agrees again to the same text: a new consent, which counts from then on
  assert.equal((await ask(ns.messages.consent(false, study.study_id), optionsPage)).ok, true);
  assert.equal((await ask(ns.messages.consent(true, study.study_id, study.consent_text), optionsPage)).ok, true);
  await ns.onDaemonMessage({ type: "hello_ok", id: "h-again", session_id: "s-again", server_version: "0", protocol: 1,
    study, detectors: [], variants_enabled: false });
  const frames = flushOnOpenSocket();
  assert.deepEqual(frames.filter((f) => f.id === "page-before-withdrawal" || f.id === "r-before-withdrawal"), [],
    "collected before the withdrawal, sent under the consent given after it");
  const dead = (await delivery.outbox.dead()).filter((d) => ["page-before-withdrawal", "r-before-withdrawal"].includes(d.id));
  assert.deepEqual(dead.map((d) => d.error.code).sort(), ["consent_withdrawn", "consent_withdrawn"]);
  const after = delivery.totals();
  // what waited of this study (earlier tests left some) and these two comments and a rating, counted once
  assert.equal(after.withdrawn_discarded, (before.withdrawn_discarded || 0) + before.queued + 3);
  assert.equal(after.queued, 0, "nothing of it still waits");
  assert.equal(ns.counters.ratingOf("youtube", "c7"), null, "a rating that will never be in the log is no rating");
});

test("a withdrawal says of an entry sent and waiting for its answer that it was sent, not that it was not", async () => {
  // sent before the withdrawal, its answer not yet come: the daemon may have stored it (the withdrawal
  // covers it there), so neither its dead letter nor its page may say it was never sent
  const { ask, optionsPage, study } = await consentedOnOptionsPage();
  const route = { tabId: 8, frameId: 0, platform: "youtube" };
  ns.counters.markRated(await delivery.queue(rating("r-sent-unanswered", "c8"), route));
  await delivery.queue({ ...page, id: "page-sent-unanswered", items: [{ key: "sent-1", text: "one" }] }, null);
  const frames = flushOnOpenSocket();
  assert.deepEqual(frames.map((f) => f.id).filter((id) => id.endsWith("sent-unanswered")).sort(), ["page-sent-unanswered", "r-sent-unanswered"]);
  delivery.newSocket(); // the socket closed before the answers came: sent all the same
  await delivery.queue(rating("r-never-sent", "c9"), route); // queued after the socket closed: never sent
  const told = broadcasts.length;
  assert.equal((await ask(ns.messages.consent(false, study.study_id), optionsPage)).ok, true);
  const dead = new Map((await delivery.outbox.dead()).map((d) => [d.id, d.error]));
  for (const id of ["r-sent-unanswered", "page-sent-unanswered"]) {
    assert.equal(dead.get(id).code, "consent_withdrawn");
    assert.match(dead.get(id).message, /sent before the participant withdrew consent to study s1, its answer not yet come/);
    assert.doesNotMatch(dead.get(id).message, /not sent$/);
  }
  assert.equal(dead.get("r-never-sent").code, "consent_withdrawn");
  assert.doesNotMatch(dead.get("r-never-sent").message, /sent before/);
  // nor that it was not delivered: a worker restarted since it was sent does not know it was (what it sent
  // and waits for is held in memory only), so the daemon may hold it too
  assert.match(dead.get("r-never-sent").message, /not known to have been sent; not sent again$/);
  assert.doesNotMatch(dead.get("r-never-sent").message, /not delivered/);
  // its page hears the same: not that the daemon refused a rating it may hold
  const refusal = broadcasts.slice(told).find((m) => m.type === ns.MSG.ratingRefused && m.comment.key === "c8");
  assert.match(refusal.message, /its answer not yet come/);
});
