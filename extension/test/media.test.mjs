// Comment images, the pure parts (lib/media.js) and the outbox's in-memory entries: node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { createHash } from "node:crypto";

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
require("../lib/outbox.js");
require("../lib/media.js");

const bytes = (...xs) => new Uint8Array(xs.flat());
const ascii = (s) => [...s].map((c) => c.charCodeAt(0));

test("image type from magic bytes, as the daemon reads them; anything else is refused", () => {
  assert.equal(ns.sniffImageMime(bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0])), "image/png");
  assert.equal(ns.sniffImageMime(bytes([0xff, 0xd8, 0xff, 0xe0])), "image/jpeg");
  assert.equal(ns.sniffImageMime(bytes(ascii("GIF89a..."))), "image/gif");
  assert.equal(ns.sniffImageMime(bytes(ascii("GIF87a..."))), "image/gif");
  assert.equal(ns.sniffImageMime(bytes(ascii("RIFF"), [1, 2, 3, 4], ascii("WEBPVP8 "))), "image/webp");
  assert.equal(ns.sniffImageMime(bytes(ascii("RIFF"), [1, 2, 3, 4], ascii("WAVEfmt "))), null); // audio: not an attachment
  assert.equal(ns.sniffImageMime(bytes(ascii("<!DOCTYPE html><html>"))), null);
  assert.equal(ns.sniffImageMime(bytes([0x89, 0x50])), null); // too short to tell
});

test("base64 of any bytes equals node's", () => {
  const data = new Uint8Array(100000).map((_, i) => (i * 7919) % 256);
  assert.equal(ns.bytesToBase64(data), Buffer.from(data).toString("base64"));
  assert.equal(ns.bytesToBase64(new Uint8Array(0)), "");
});

test("packing: no group over max bytes (one big image alone), at most maxItems per group, order kept", () => {
  const items = [3, 4, 9, 10, 1, 1, 1].map((n, i) => ({ n_bytes: n, position: i }));
  const groups = ns.packMedia(items, 10, 2);
  assert.deepEqual(groups.map((g) => g.map((i) => i.position)), [[0, 1], [2], [3], [4, 5], [6]]);
  for (const g of groups) assert.ok(g.reduce((s, i) => s + i.n_bytes, 0) <= 10);
  assert.deepEqual(ns.packMedia([], 10), []);
});

// fake DOM: an element with children that answer querySelectorAll by a predicate
function img(src, w, h, owner) {
  return { tagName: "IMG", currentSrc: src, src, owner, getBoundingClientRect: () => ({ width: w, height: h }), naturalWidth: 0, naturalHeight: 0 };
}

test("attached images: own subtree, big enough, http(s) or data: URLs, each once", () => {
  const comment = { id: "c" };
  const reply = { id: "r" };
  const imgs = [
    img("https://pbs.twimg.com/media/A.jpg", 500, 300, comment),
    img("https://pbs.twimg.com/profile_images/avatar.jpg", 40, 40, comment), // avatar
    img("https://abs-0.twimg.com/emoji/v2/svg/1f437.svg", 20, 20, comment), // emoji
    img("data:image/png;base64,iVBORw0KGgo=", 200, 120, comment),
    img("https://pbs.twimg.com/media/A.jpg", 500, 300, comment), // the same photo twice
    img("https://pbs.twimg.com/media/REPLY.jpg", 500, 300, reply), // a nested reply's photo
    img("blob:https://x.com/1234", 300, 300, comment), // not fetchable by the worker
    { ...img("https://pbs.twimg.com/media/B.jpg", 300, 300, comment), tagName: "DIV" },
  ];
  const el = { querySelectorAll: () => imgs };
  assert.deepEqual(ns.attachedImageUrls(el, "img", (n) => n.owner === comment),
    ["https://pbs.twimg.com/media/A.jpg", "data:image/png;base64,iVBORw0KGgo="]);
  assert.deepEqual(ns.attachedImageUrls(el, null, () => true), []);
  // not laid out yet: the image's own size decides
  const lazy = { ...img("https://pbs.twimg.com/media/C.jpg", 0, 0, comment), naturalWidth: 800, naturalHeight: 600 };
  assert.deepEqual(ns.attachedImageUrls({ querySelectorAll: () => [lazy] }, "img", () => true), ["https://pbs.twimg.com/media/C.jpg"]);
});

function memoryArea() {
  const data = {};
  return {
    data,
    async get(keys) { return keys === null ? { ...data } : Object.fromEntries([].concat(keys).filter((k) => k in data).map((k) => [k, data[k]])); },
    async set(obj) { Object.assign(data, obj); },
    async remove(keys) { for (const k of [].concat(keys)) delete data[k]; },
  };
}

test("outbox: image messages stay in memory, and a dead one keeps no bytes", async () => {
  const area = memoryArea();
  const box = new ns.Outbox(area);
  const data = Buffer.from("image bytes").toString("base64");
  const sha = createHash("sha256").update("image bytes").digest("hex");
  await box.add({ type: "comments", id: "c1", page: {}, items: [] }, null);
  await box.add({ type: "comment_media", id: "m1", platform: "x", comment_key: "1", items: [{ mime: "image/png", sha256: sha, data_b64: data, url: null, position: 0 }] }, null, { persist: false });
  assert.deepEqual(Object.keys(area.data), ["ob:c1"]);
  assert.deepEqual(box.pending().map((e) => e.id), ["c1", "m1"]); // sent after its comment
  await box.bury("m1", { code: "invalid_fields", message: "items.0.sha256" });
  const [dead] = await box.dead();
  assert.equal(dead.message.items[0].sha256, sha);
  assert.ok(!("data_b64" in dead.message.items[0]));
  assert.ok(ns.PERMANENT_ERRORS.has("media_not_collected"));
});
