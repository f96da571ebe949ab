// A withdrawal reaches the daemon of the study withdrawn from on the visit that finds it running
// that study again (worker/connection.js, worker/daemon_messages.js), against a fake `chrome` and
// fake sockets: the hello that finds the study out cannot carry it, so the worker says hello again.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeSocket, fakeStorage, installWorkerChrome, loadWorker, startWorker } from "./fakes.mjs";

const A = { study_id: "A", title: "a", consent_text: "A's text", sampling: { mode: "all", salt: "x" } };
const B = { study_id: "B", title: "b", consent_text: "B's text", sampling: { mode: "all", salt: "x" } };
installWorkerChrome(fakeStorage([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }],
  ["study", A]]));
const sockets = FakeSocket.opened;
const ns = loadWorker();
await startWorker(ns);
const { config, connection } = ns;

// the daemon, running `study`, answers the hello on the newest socket as the real one does
async function daemonRuns(study) {
  const hello = sockets.at(-1).open();
  if (hello.study_id && hello.study_id !== study.study_id) {
    await ns.onDaemonMessage({ type: "error", id: hello.id, code: "study_mismatch", message: "another study" });
    return [hello, ...(await daemonRuns(study))];
  }
  await ns.onDaemonMessage({ type: "hello_ok", id: hello.id, session_id: `sess-${sockets.length}`, server_version: "0",
    protocol: 1, study, detectors: [], variants_enabled: false });
  return [hello];
}
const restartDaemon = () => connection.reconnectNow(); // its socket closed; the worker connects again

test("a daemon that runs the withdrawn study again is told on the visit that finds it, after a consent to another", async () => {
  await config.setConsent(true, "A");
  await config.setConsent(false, "A"); // withdrawn while A's daemon is down
  const withdrawnAt = config.withdrawalToSend().at;
  connection.connect();
  let hellos = await daemonRuns(B); // it comes back running B
  assert.equal(config.study.study_id, "B");
  assert.equal(hellos.at(-1).consent_withdrawn_at, undefined, "B's daemon is not told of A");
  await config.setConsent(true, "B");
  restartDaemon();
  hellos = await daemonRuns(A); // it runs A again: the hello that learns so carried B's consent, then nothing
  assert.equal(config.study.study_id, "A");
  const last = sockets.at(-1);
  assert.equal(last.readyState, 0, "the worker did not say hello again, on a new socket");
  const told = last.open();
  assert.deepEqual([told.study_id, told.consent_withdrawn_at, told.consent_at], ["A", withdrawnAt, undefined]);
  await ns.onDaemonMessage({ type: "hello_ok", id: told.id, session_id: "sess-told", server_version: "0",
    protocol: 1, study: A, detectors: [], variants_enabled: false });
  assert.equal(sockets.at(-1), last, "the hello that carried it is not said again");
  assert.equal(connection.sessionId, "sess-told");
  clearInterval(connection.keepaliveTimer);
});
