// The popup's image counts (images: n sent · n logged · n failed · n over the limit, · n dropped)
// count distinct images, as saved/scored count distinct comments: a page observed again (a pause
// undone, its site switched back on, a reload) fetches and sends its comments' images again, and
// the daemon logs each once; a restarted worker reads the same numbers back from storage.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { fakeStorage, installWorkerChrome, loadWorker, startWorker } from "./fakes.mjs";

const study = { study_id: "s-media", title: "t", consent_text: "images too", sampling: { mode: "all", salt: "x" },
  media: { collect: true, max_per_comment: 2, max_bytes: 100000 } };
const storage = fakeStorage([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }],
  ["study", study]]);
installWorkerChrome(storage);
const ns = loadWorker();
await startWorker(ns);
await ns.config.setConsent(true, study.study_id);
const { counters, delivery } = ns;

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
globalThis.fetch = async (url) => (url.endsWith("/missing.png") ? { ok: false, status: 404 } : {
  ok: true, headers: { get: () => null },
  body: { getReader: () => { let done = false; return { read: async () => (done ? { done } : (done = true, { done: false, value: PNG })), cancel: async () => {} }; } },
});
const URLS = ["https://img.example/a.png", "https://img.example/missing.png", "https://img.example/over.png"];
const IMAGE_COUNTS = ["media_sent", "media_scored", "media_failed", "media_skipped"];
const imageCounts = () => Object.fromEntries(IMAGE_COUNTS.map((k) => [k, delivery.totals()[k] || 0]));

// the page is observed: the comment's images fetched, queued, sent, and answered by the daemon
async function observe(answerId) {
  await ns.commentMedia.queueCommentMedia("youtube", "c-img", URLS, null);
  const frames = [];
  Object.assign(ns.connection, { ws: { readyState: 1, send: (f) => frames.push(JSON.parse(f)), close() {} }, sessionId: "sess" });
  try {
    delivery.flush(true);
  } finally {
    Object.assign(ns.connection, { ws: null, sessionId: null });
  }
  const sent = frames.filter((f) => f.type === "comment_media");
  assert.equal(sent.length, 1);
  await sleep(20); // the count of what went on the socket is stored
  await ns.onDaemonMessage({ type: "comment_media_ok", id: sent[0].id, comment_id: 7, detectors: {},
    media: sent[0].items.map((it) => ({ position: it.position, sha256: it.sha256, media_id: answerId, kept: false })) });
}

test("a comment's images observed again count once each, and a restarted worker reads the same counts", async () => {
  await observe(41);
  const once = imageCounts();
  assert.deepEqual(once, { media_sent: 1, media_scored: 1, media_failed: 1, media_skipped: 1 });
  await observe(41); // its page observed again: the same images, fetched, sent and logged again
  assert.deepEqual(imageCounts(), once, "the same images counted again");
  await sleep(400); // past the totals' 300 ms write
  await counters.load(await storage.get(null), delivery.outbox); // the worker stopped and started again
  assert.deepEqual(imageCounts(), once, "a restarted worker says other numbers");
});
