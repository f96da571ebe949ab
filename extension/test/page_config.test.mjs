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

test("every change of what a page is told moves the revision: settings, study, consent", async () => {
  const seen = [ns.config.revision];
  await ns.config.updateSettings({ paused: true });
  seen.push(ns.config.revision);
  await ns.config.setConsent(true, "s1");
  seen.push(ns.config.revision);
  await ns.config.setStudy(null, []);
  seen.push(ns.config.revision);
  assert.equal(new Set(seen).size, 4, seen.join(" "));
});
