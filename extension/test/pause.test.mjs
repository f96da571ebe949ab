// "Pause everything" (popup, options) against the worker's real handlers and outbox, over a fake
// `chrome`: while paused nothing is collected or sent. A rating is refused with the reason, an entry
// already in the outbox waits there and goes once the participant goes on; every open extension
// page hears of the pause (the state broadcast), not only the page that set it.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { ORIGIN, fakeStorage, installWorkerChrome, loadWorker, startWorker } from "./fakes.mjs";

const storage = fakeStorage([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }],
  ["study", { study_id: "s1", title: "t", consent_text: "the text", sampling: { mode: "all", salt: "x" } }],
  ["consent", { study_id: "s1", at: "2026-01-01T00:00:00Z", media: false, text: "the text" }]]);
const { broadcasts } = installWorkerChrome(storage);
const ns = loadWorker();
await startWorker(ns);
const { delivery } = ns;

const optionsPage = { id: "modlens-id", url: `${ORIGIN}/options.html`, tab: { id: 9 }, frameId: 0 };
const contentScript = { id: "modlens-id", url: "https://www.youtube.com/watch?v=abc", tab: { id: 7, url: "https://www.youtube.com/watch?v=abc" }, frameId: 0 };
const ask = (msg, sender) => Promise.resolve().then(() => ns.onPageMessage(msg, sender)).catch((err) => ({ error: err.message }));
const rateMsg = (key) => ns.messages.rate({ platform: "youtube", key }, { values: { toxicity: "not toxic" }, time_spent_ms: 900 });

// a socket with a session, as after hello_ok: what goes on it is what the daemon would get
const frames = [];
function connect() {
  Object.assign(ns.connection, { ws: { readyState: 1, send: (f) => frames.push(JSON.parse(f)), close() {} }, sessionId: "sess" });
}

test("while paused an entry already in the outbox is not sent; it goes once the participant goes on", async () => {
  connect();
  const page = { type: "comments", id: "page-paused", page: { url: "https://www.youtube.com/watch?v=a", platform: "youtube", page_key: "a" },
    items: [{ key: "c1", text: "first" }] };
  assert.equal((await ask(ns.messages.setSettings({ paused: true }), optionsPage)).paused, true);
  await delivery.queue(page, null);
  delivery.flush(true);
  assert.deepEqual(frames.filter((f) => f.id === "page-paused"), [], "sent while paused");
  assert.ok(delivery.outbox.has("page-paused"));
  await ask(ns.messages.setSettings({ paused: false }), optionsPage);
  assert.equal(frames.filter((f) => f.id === "page-paused").length, 1, "not sent once the participant went on");
});

test("a rating is refused while paused, with the reason, and nothing of it is queued or counted", async () => {
  connect();
  await ask(ns.messages.setSettings({ paused: true }), optionsPage);
  const waiting = delivery.outbox.pending().length;
  const rated = ns.counters.totals.rated;
  const answer = await ask(rateMsg("k-paused"), contentScript);
  assert.equal(answer.queued, false);
  assert.match(answer.reason, /paused/);
  assert.equal(delivery.outbox.pending().length, waiting);
  assert.equal(ns.counters.ratingOf("youtube", "k-paused"), null);
  assert.equal(ns.counters.totals.rated, rated);
  await ask(ns.messages.setSettings({ paused: false }), optionsPage);
  assert.equal((await ask(rateMsg("k-paused"), contentScript)).queued, true);
});

test("a pause set from one page is broadcast to every open page, and so is going on", async () => {
  for (const paused of [true, false]) {
    broadcasts.length = 0;
    await ask(ns.messages.setSettings({ paused }), optionsPage);
    const states = broadcasts.filter((b) => b.type === ns.MSG.state);
    assert.ok(states.length >= 1, `no state broadcast after paused: ${paused}`);
    assert.equal(states.at(-1).state.paused, paused);
    assert.ok(!JSON.stringify(states).includes("T0KEN-0123456789"), "the token in a broadcast");
  }
});

test("a rating from a page of a site switched off is refused with the reason; the item-set page still rates", async () => {
  connect();
  await ask(ns.messages.setSettings({ sites: { youtube: false } }), optionsPage);
  const waiting = delivery.outbox.pending().length;
  const answer = await ask(rateMsg("k-site-off"), contentScript);
  assert.equal(answer.queued, false);
  assert.equal(answer.reason, ns.NOT_TAKING.siteOff);
  assert.equal(delivery.outbox.pending().length, waiting);
  assert.equal(ns.counters.ratingOf("youtube", "k-site-off"), null);
  // the extension's own pages rate the study's comments, on no site: the switch is about capture on YouTube
  const itemsetPage = { id: "modlens-id", url: `${ORIGIN}/itemset.html`, tab: { id: 10 }, frameId: 0 };
  assert.equal((await ask(rateMsg("k-itemset"), itemsetPage)).queued, true);
  await ask(ns.messages.setSettings({ sites: { youtube: true } }), optionsPage);
  assert.equal((await ask(rateMsg("k-site-off"), contentScript)).queued, true);
});

test("a rating from a comment frame whose top page's site is not switched on is refused with the reason", async () => {
  connect();
  // an OpenWeb frame on a news site: the worker knows its top page from the sender's tab, and that
  // site's permission (switched on from the popup) decides, as for the frame's marker (content/main.js)
  const news = "https://news.example/*";
  const switchedOn = new Set([news]);
  const realContains = chrome.permissions.contains;
  chrome.permissions.contains = async ({ origins }) => origins.every((o) => switchedOn.has(o));
  const frame = { id: "modlens-id", url: "https://launcher.spot.im/frame", tab: { id: 11, url: "https://news.example/story" }, frameId: 4 };
  const rate = (platform, key, sender = frame) => ask(ns.messages.rate({ platform, key }, { values: { toxicity: "not toxic" }, time_spent_ms: 900 }), sender);
  try {
    switchedOn.delete(news); // switched off after the frame's markers appeared, before it heard
    const waiting = delivery.outbox.pending().length;
    const answer = await rate("openweb", "k-frame-off");
    assert.equal(answer.queued, false);
    assert.equal(answer.reason, ns.NOT_TAKING.frameOff);
    // a top page the extension cannot see (no access to its site: no tab.url) is not switched on either
    const unseen = { ...frame, tab: { id: 12 } };
    assert.equal((await rate("openweb", "k-frame-unseen", unseen)).reason, ns.NOT_TAKING.frameOff);
    // nor comments it found just before (the same check, as the frame's status says it)
    const pg = { url: "https://news.example/story", platform: "openweb", page_key: "news.example/story", title: "t" };
    const found = await ask(ns.messages.comments("openweb", pg, [{ key: "k-frame-c", text: "found just before" }]), frame);
    assert.deepEqual(found, { queued: false, reason: "frame of a page whose site is not switched on" });
    assert.equal(delivery.outbox.pending().length, waiting);
    assert.equal(ns.counters.ratingOf("openweb", "k-frame-off"), null);
    // Disqus's frame runs on any page (sites table): its ratings are taken there
    assert.equal((await rate("disqus", "k-disqus")).queued, true);
    switchedOn.add(news);
    assert.equal((await rate("openweb", "k-frame-off")).queued, true);
  } finally {
    chrome.permissions.contains = realContains;
  }
});

test("an image whose fetch ends after the pause started is not queued, and is counted as dropped", async () => {
  connect();
  ns.config.study = { ...ns.config.study, media: { collect: true, max_bytes: 100000, max_per_comment: 4 } };
  const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
  const realFetch = globalThis.fetch;
  let answer;
  const started = new Promise((fetchStarted) => {
    globalThis.fetch = () => new Promise((resolve) => { answer = () => resolve(new Response(png)); fetchStarted(); });
  });
  try {
    const waiting = delivery.outbox.pending().length;
    const notTaken = ns.counters.totals.media_not_taken || 0;
    const done = ns.commentMedia.queueCommentMedia("youtube", "k-img", ["https://pbs.twimg.com/a.png"], null);
    await started; // the image is being fetched when the participant pauses
    await ask(ns.messages.setSettings({ paused: true }), optionsPage);
    answer();
    await done;
    assert.equal(delivery.outbox.pending().length, waiting, "an image fetched after the pause entered the outbox");
    assert.equal(ns.counters.totals.media_not_taken, notTaken + 1);
  } finally {
    globalThis.fetch = realFetch;
    await ask(ns.messages.setSettings({ paused: false }), optionsPage);
  }
});

test("pausing while a comment's first of two images is fetched drops both, counted, and queues neither", async () => {
  connect();
  ns.config.study = { ...ns.config.study, media: { collect: true, max_bytes: 100000, max_per_comment: 4 } };
  const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
  const realFetch = globalThis.fetch;
  const asked = [];
  let answer;
  const started = new Promise((fetchStarted) => {
    globalThis.fetch = (url) => new Promise((resolve) => { asked.push(url); answer = () => resolve(new Response(png)); fetchStarted(); });
  });
  try {
    const waiting = delivery.outbox.pending().length;
    const notTaken = ns.counters.totals.media_not_taken || 0;
    const failed = ns.counters.totals.media_failed || 0;
    const done = ns.commentMedia.queueCommentMedia("youtube", "k-img2", ["https://pbs.twimg.com/a.png", "https://pbs.twimg.com/b.png"], null);
    await started; // the first image is being fetched when the participant pauses
    await ask(ns.messages.setSettings({ paused: true }), optionsPage);
    answer();
    await done;
    assert.deepEqual(asked, ["https://pbs.twimg.com/a.png"], "the second image was fetched after the pause");
    assert.equal(delivery.outbox.pending().length, waiting, "an image entered the outbox after the pause");
    assert.equal(ns.counters.totals.media_not_taken, notTaken + 2, "the fetched and the never-fetched image are both dropped");
    assert.equal(ns.counters.totals.media_failed || 0, failed);
  } finally {
    globalThis.fetch = realFetch;
    await ask(ns.messages.setSettings({ paused: false }), optionsPage);
  }
});
