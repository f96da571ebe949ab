// The popup's delivery lines (popup.js show) as the popup renders them from the worker's totals:
// what it says of the dead letters must hold for those set aside at a withdrawal, some of which were
// sent before it (their answer not yet come, or sent by a worker since restarted) and may be in the
// daemon's log, where the withdrawal covers them (test/delivery.test.mjs: their dead letters).
// node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadExtension } from "./fakes.mjs";

const elements = new Map();
const element = () => ({ textContent: "", hidden: false, className: "", checked: false, dataset: {},
  addEventListener() {}, replaceChildren() {} });
globalThis.document = { getElementById: (id) => elements.get(id) || elements.set(id, element()).get(id) };
globalThis.location = { search: "?page=https%3A%2F%2Fnews.example%2Fa" };
const totals = { saved: 5, scored: 5, rated: 0, queued: 0, not_delivered: 3, withdrawn_discarded: 2 };
globalThis.chrome = {
  runtime: { sendMessage: async () => ({ conn: "ready", consented: false, totals }), onMessage: { addListener() {} },
    getManifest: () => ({ content_scripts: [] }) },
  permissions: { contains: async () => false },
};
loadExtension(["constants", "sites", "messages", "protocol", "site_access", "tasks", "task_list"], ["popup"]);
const line = async (id) => { await new Promise((r) => setTimeout(r, 10)); return document.getElementById(id).textContent; };

test("not delivered, with entries set aside at a withdrawal: said not sent again, not never sent", async () => {
  const notDelivered = await line("not-delivered");
  assert.ok(notDelivered.startsWith("not delivered: 3 "), notDelivered);
  assert.match(notDelivered, /not sent again; any set aside at your withdrawal that the daemon received are covered by the withdrawal\)$/);
  assert.doesNotMatch(notDelivered, /not sent\)|never sent/);
  assert.equal(await line("withdrawn-discarded"),
    "2 discarded when you withdrew consent (not sent again; any the daemon received are covered by the withdrawal)");
});
