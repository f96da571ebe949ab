// A page's config against the worker's (worker/page_messages.js, worker/config.js), with a fake
// `chrome`: a change the page was not told of (it asked before the change, and reported its status
// only after the worker told the pages it knew of) is found out by its status report.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { fakeStorage, installWorkerChrome, loadWorker, startWorker } from "./fakes.mjs";

const study = { study_id: "s1", title: "t", consent_text: "the text", sampling: { mode: "all", salt: "x" } };
const { broadcasts } = installWorkerChrome(fakeStorage([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }]]));
const ns = loadWorker();
await startWorker(ns);
const youtubeTab = { id: "modlens-id", url: "https://www.youtube.com/watch?v=ConsentT001", tab: { id: 7, url: "https://www.youtube.com/watch?v=ConsentT001" }, frameId: 0 };
const ask = (msg) => ns.onPageMessage(msg, youtubeTab);

test("a page that asked for its config before hello_ok and reported after it is told its config is stale", async () => {
  const cfg = await ask(ns.messages.contentHello());
  assert.equal(cfg.study, null, "no session yet: the page holds no study");
  // hello_ok lands between the page's config and its first status: the tab is not known yet
  await ns.onDaemonMessage({ type: "hello_ok", id: "h1", session_id: "sess-1", server_version: "0", protocol: 1,
    study, detectors: [], variants_enabled: false });
  assert.equal(broadcasts.filter((m) => m.type === ns.MSG.configChanged).length, 0, "no tab had reported: none was told");
  const answer = await ask(ns.messages.pageStatus({ adapter: "youtube", state: "inactive", reason: "not connected to the daemon yet" }, cfg.revision));
  assert.equal(answer.stale, true, "the status of a page holding an old config is answered with stale: it asks again");
  const fresh = await ask(ns.messages.contentHello());
  assert.equal(fresh.study.study_id, "s1");
  const again = await ask(ns.messages.pageStatus({ adapter: "youtube", state: "inactive", reason: "consent needed" }, fresh.revision));
  assert.equal(again.stale, false, "a page holding the current config is not sent round again");
});

test("every change of what a page is told changes the revision; the same config gives the same revision, across a worker restart", async () => {
  const revision = async () => (await ask(ns.messages.contentHello())).revision;
  const stale = async (rev) => (await ask(ns.messages.pageStatus({ adapter: "youtube", state: "inactive" }, rev))).stale;
  const seen = [await revision()];
  await ns.config.updateSettings({ paused: true });
  seen.push(await revision());
  await ns.config.setConsent(true, "s1");
  seen.push(await revision());
  await ns.config.setStudy(null, []);
  seen.push(await revision());
  assert.equal(new Set(seen).size, 4, seen.join(" "));
  // a change made without the mutators changes it too
  ns.config.settings = { ...ns.config.settings, paused: false };
  assert.ok(!seen.includes(await revision()));
  // the daemon answers every hello with the same study: nothing a page is told changed, nor does its revision
  const hello = { type: "hello_ok", id: "h2", session_id: "sess-2", server_version: "0", protocol: 1, study, detectors: [], variants_enabled: false };
  await ns.onDaemonMessage(hello);
  const held = await revision();
  await ns.onDaemonMessage({ ...hello, id: "h3", session_id: "sess-3" });
  assert.equal(await revision(), held);
  assert.equal(await stale(held), false, "the same config is answered stale after a hello_ok of the same study");
  // the browser stops the worker and starts it again: the page's config is the one it holds
  await ns.config.updateSettings({ paused: true });
  const beforeRestart = await revision();
  clearInterval(ns.connection.keepaliveTimer);
  loadWorker();
  await startWorker(ns);
  assert.equal(await revision(), beforeRestart);
  assert.equal(await stale(beforeRestart), false, "a page is sent round again after every worker restart");
  assert.equal(await stale(held), true, "a page holding an older config is told so after a restart");
});
