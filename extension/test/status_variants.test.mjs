// The popup's "variants (whole daemon)" line is the answer of the connected daemon's last status
// (worker/daemon_messages.js): a daemon connected anew (another one, or the same restarted) has not
// answered one yet, so the previous daemon's counts are not said as its own.
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeSocket, fakeStorage, installWorkerChrome, loadWorker, startWorker } from "./fakes.mjs";

const A = { study_id: "A", title: "a", consent_text: "A's text", sampling: { mode: "all", salt: "x" } };
installWorkerChrome(fakeStorage([["settings", { daemonUrl: "ws://127.0.0.1:8765/ws", token: "T0KEN-0123456789", raterId: "rater-1" }],
  ["study", A]]));
const sockets = FakeSocket.opened;
const ns = loadWorker();
await startWorker(ns);
const { connection } = ns;

async function daemonAnswersHello() {
  const hello = sockets.at(-1).open();
  await ns.onDaemonMessage({ type: "hello_ok", id: hello.id, session_id: `sess-${sockets.length}`, server_version: "0",
    protocol: 1, study: A, detectors: [], variants_enabled: true });
}

test("a daemon connected anew has no variant counts until its own status answer", async () => {
  connection.connect();
  await daemonAnswersHello();
  connection.askStatus(); // an open popup asks
  await ns.onDaemonMessage({ type: "status_ok", queue: { variants: { done: 40, queued: 3, deferred: 7, failed: 0 } } });
  assert.deepEqual(connection.variants, { made: 40, waiting: 3, deferred: 7, failed: 0 });
  connection.reconnectNow(); // the daemon went away; another answers on the new socket
  await daemonAnswersHello();
  assert.equal(connection.variants, null, "the previous daemon's counts are not this one's");
  connection.askStatus(); // the open popup's next state request, within 5 s of the last ask
  assert.ok(sockets.at(-1).sent.some((m) => m.type === "status"), "the new daemon is asked its status at once");
  await ns.onDaemonMessage({ type: "status_ok", queue: { variants: { done: 2, queued: 0, deferred: 0, failed: 0 } } });
  assert.deepEqual(connection.variants, { made: 2, waiting: 0, deferred: 0, failed: 0 });
});
