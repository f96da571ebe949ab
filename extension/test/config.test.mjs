// When the worker applies seed.json (worker/config.js load()) against a fake `chrome.storage`: a seed the
// profile has not applied is applied, the same seed again keeps what the options changed, and a profile
// from before seedApplied was recorded keeps its daemon address and token (they may be set by hand).
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { clone, fakeStorage, loadExtension } from "./fakes.mjs";

const storage = fakeStorage();
const { stored } = storage;
let seed = null; // seed.json in this copy of the extension, as `modlens browse` wrote it
globalThis.chrome = { runtime: { getURL: (p) => `chrome-extension://x/${p}` }, storage: { local: storage } };
globalThis.fetch = async () => (seed ? { ok: true, json: async () => clone(seed) } : { ok: false });

const ns = loadExtension(["constants", "hash", "protocol"], ["worker/config"]);
const { config } = ns;

const FIRST = { daemonUrl: "ws://127.0.0.1:8765/ws", token: "first-token" };
const restart = async () => { await config.load(); return { ...config.settings }; };

test("a new profile takes its seed; the same seed again keeps what the options changed; a new seed is applied", async () => {
  stored.clear();
  seed = FIRST;
  assert.equal((await restart()).token, "first-token");
  await config.updateSettings({ daemonUrl: "ws://127.0.0.1:9999/ws", token: "set-by-hand" });
  const kept = await restart(); // `modlens browse` again, the same daemon: the same seed
  assert.deepEqual([kept.daemonUrl, kept.token], ["ws://127.0.0.1:9999/ws", "set-by-hand"]);
  seed = { daemonUrl: "ws://127.0.0.1:8770/ws", token: "rotated-token" }; // another port, a rotated token
  const moved = await restart();
  assert.deepEqual([moved.daemonUrl, moved.token], ["ws://127.0.0.1:8770/ws", "rotated-token"]);
  assert.equal(moved.raterId, kept.raterId, "a seed without a rater id keeps the profile's");
});

test("a profile from before seedApplied keeps a daemon address and token set by hand; the next new seed is applied", async () => {
  // an earlier version applied the seed on the first start only; the participant then paired by hand
  stored.clear();
  stored.set("settings", { ...ns.DEFAULT_SETTINGS, daemonUrl: "ws://127.0.0.1:9999/ws", token: "set-by-hand", raterId: "rater-old" });
  seed = FIRST;
  for (const start of ["the first start after the update", "the next start, the same seed"]) {
    const s = await restart();
    assert.deepEqual([s.daemonUrl, s.token, s.raterId], ["ws://127.0.0.1:9999/ws", "set-by-hand", "rater-old"], start);
  }
  seed = { ...FIRST, token: "rotated-token" }; // `modlens pair --rotate`, then browse
  assert.equal((await restart()).token, "rotated-token");
});

test("a withdrawal outlives a restart and goes with every hello to the study's daemon until a new consent", async () => {
  // the consent text promises a participant may withdraw at any time: the daemon must be told, even
  // when it is down at that moment (the next hello, after any restart of the worker, says it)
  stored.clear();
  seed = FIRST;
  await restart();
  const study = { study_id: "s1", title: "t", consent_text: "You may withdraw at any time." };
  await config.setStudy(study, []);
  const hello = () => ns.protocol.hello({ token: "t", raterId: "r", consent: config.consented() ? config.consent : null,
    withdrawal: config.withdrawalToSend() });
  await config.setConsent(true, "s1");
  assert.equal(hello().consent_withdrawn_at, undefined);
  await config.setConsent(false, "s1");
  await restart(); // the worker stopped before it could reach the daemon
  const told = hello();
  assert.deepEqual([told.study_id, told.consent_withdrawn_at, told.consent_at], ["s1", config.withdrawals.s1, undefined]);
  assert.ok(!Number.isNaN(Date.parse(told.consent_withdrawn_at)));
  assert.equal(hello().consent_withdrawn_at, told.consent_withdrawn_at, "said again, the same time, at the next hello");
  // the daemon now runs another study: its hello names that one, so the withdrawal waits for s1's daemon
  await config.setStudy({ ...study, study_id: "s2" }, []);
  assert.deepEqual([hello().study_id, hello().consent_withdrawn_at], [undefined, undefined]);
  await config.setStudy(study, []);
  assert.equal(hello().consent_withdrawn_at, told.consent_withdrawn_at);
  await config.setConsent(true, "s1"); // agreed again: a new consent, no withdrawal
  await restart();
  const again = hello();
  assert.deepEqual([again.consent_withdrawn_at, again.consent_at === config.consent.at], [undefined, true]);
});

test("a withdrawal from one study outlives a consent to another: its daemon is told when it runs that study again", async () => {
  // consent to A; withdrawn while A's daemon was down; the daemon came back running B and the
  // participant agreed to B: A's log must still hear of the withdrawal, or its bundles keep the rater
  stored.clear();
  seed = FIRST;
  await restart();
  const a = { study_id: "A", title: "a", consent_text: "A's text" };
  const b = { study_id: "B", title: "b", consent_text: "B's text" };
  await config.setStudy(a, []);
  await config.setConsent(true, "A");
  await config.setConsent(false, "A");
  const withdrawnAt = config.withdrawalToSend().at;
  await config.setStudy(b, []);
  assert.equal(config.withdrawalToSend(), null, "B's daemon is not told of A");
  await config.setConsent(true, "B");
  await restart();
  await config.setStudy(a, []); // the daemon runs A again
  assert.deepEqual(config.withdrawalToSend(), { study_id: "A", at: withdrawnAt });
  const hello = ns.protocol.hello({ token: "t", raterId: "r", consent: config.consented() ? config.consent : null,
    withdrawal: config.withdrawalToSend() });
  assert.deepEqual([hello.study_id, hello.consent_withdrawn_at, hello.consent_at], ["A", withdrawnAt, undefined]);
  await config.setStudy(b, []);
  assert.ok(config.consented(), "B's consent holds");
  await config.setConsent(false, "B"); // both withdrawn now: each daemon is told of its own
  assert.equal(config.withdrawalToSend().study_id, "B");
  await config.setStudy(a, []);
  assert.deepEqual(config.withdrawalToSend(), { study_id: "A", at: withdrawnAt });
  await config.setConsent(true, "A"); // agreeing to A again takes back A's withdrawal only
  await config.setStudy(b, []);
  assert.equal(config.withdrawalToSend().study_id, "B");
});
