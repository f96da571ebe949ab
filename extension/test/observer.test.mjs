// The observer's per-field strategies (content/observer.js) on tiny fake elements: order, the
// own-subtree scope of selector strategies, thrown strategies counted, parent provenance and the
// per-field "not found" counts. node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
require("../content/dom.js");
require("../content/registry.js");
require("../content/observer.js");

// A fake element: `sels` are the selector strings it matches (literally), `attrs` its attributes.
class El {
  constructor(sels = [], { attrs = {}, text = "", children = [] } = {}) {
    this.sels = new Set([].concat(sels));
    this.attrs = attrs;
    this.text = text;
    this.children = children;
    this.parentElement = null;
    this.nodeType = 1;
    for (const c of children) c.parentElement = this;
  }
  get childElementCount() { return this.children.length; }
  get textContent() { return [this.text, ...this.children.map((c) => c.textContent)].filter(Boolean).join(" "); }
  getAttribute(name) { return name in this.attrs ? this.attrs[name] : null; }
  matches(sel) { return sel.split(",").some((s) => this.sels.has(s.trim())); }
  closest(sel) { for (let n = this; n; n = n.parentElement) if (n.matches(sel)) return n; return null; }
  querySelectorAll(sel) {
    const out = [];
    const walk = (n) => { for (const c of n.children) { if (c.matches(sel)) out.push(c); walk(c); } };
    walk(this);
    return out;
  }
  querySelector(sel) { return this.querySelectorAll(sel)[0] || null; }
}

let defined = 0;
function observerFor(def) {
  const adapter = ns.defineAdapter({ name: `t${defined++}`, platform: "test", matches: () => false, pageKey: () => "p", comments: ".c", ...def });
  return new ns.CommentObserver(adapter, {}, { document: {} });
}
const PAGE = { page_key: "p" };

test("strategies are tried in order; a thrown one is counted and the next one answers", () => {
  const obs = observerFor({
    fields: {
      key: [() => { throw new Error("boom"); }, { via: "data-id", find: (el) => el.getAttribute("data-id") }],
      text: [".missing", ".body"],
      author: [".name", { via: "aria-label", find: (el) => ns.labelName(el) }],
      parent: [],
      time: [".when"],
    },
  });
  const el = new El(".c", { attrs: { "data-id": "k1", "aria-label": "Comment by Ada L." },
    children: [new El(".body", { text: "  hello \n world " })] });
  const rec = obs.extract(el, PAGE);
  assert.deepEqual({ key: rec.key, text: rec.text, author: rec.author, via: rec.parent_via }, { key: "k1", text: "hello world", author: "Ada L.", via: "none" });
  assert.deepEqual(rec.missing, ["time"]);
  assert.equal(obs.counts.errors, 1);
  assert.match(obs.lastError, /^key\/key: boom/);
});

test("selector strategies search the comment's own subtree, never a nested comment's", () => {
  const reply = new El(".c", { attrs: { id: "r" }, children: [new El(".name", { text: "Bo" }), new El(".body", { text: "reply" })] });
  const top = new El(".c", { attrs: { id: "t" }, children: [new El(".body", { text: "top" }), new El(".replies", { children: [reply] })] });
  const obs = observerFor({
    fields: { key: [(el) => el.getAttribute("id")], text: [".body"], author: [".name"],
      parent: [{ via: "structure", find: (el) => { const p = el.parentElement && el.parentElement.closest(".c"); return p ? p.getAttribute("id") : null; } }] },
  });
  const t = obs.extract(top, PAGE);
  assert.equal(t.author, null, "the reply's author is not the top comment's");
  assert.deepEqual(t.missing, ["author", "time"]);
  const r = obs.extract(reply, PAGE);
  assert.deepEqual([r.author, r.parent_key, r.parent_via], ["Bo", "t", "structure"]);
});

test("parent provenance: {key, via} answers, and a reply without a parent is counted, not guessed", () => {
  const obs = observerFor({
    fields: { key: [(el) => el.getAttribute("id")], text: [".body"],
      parent: [{ via: "connector", find: () => null }, { via: "label", find: (el) => (el.getAttribute("to") ? { key: el.getAttribute("to"), via: "in_reply_to_label" } : null) }] },
    isReply: (el) => el.getAttribute("reply") === "yes",
  });
  const withLabel = obs.extract(new El(".c", { attrs: { id: "a", to: "b", reply: "yes" }, children: [new El(".body", { text: "x" })] }), PAGE);
  assert.deepEqual([withLabel.parent_key, withLabel.parent_via], ["b", "in_reply_to_label"]);
  const lost = obs.extract(new El(".c", { attrs: { id: "c", reply: "yes" }, children: [new El(".body", { text: "y" })] }), PAGE);
  assert.deepEqual([lost.parent_key, lost.parent_via, lost.missing.includes("parent")], [undefined, "unknown", true]);
  const top = obs.extract(new El(".c", { attrs: { id: "d" }, children: [new El(".body", { text: "z" })] }), PAGE);
  assert.deepEqual([top.parent_via, top.missing.includes("parent")], ["none", false]);
});

test("a comment without key or text is reported as such, times only as ISO instants", () => {
  const obs = observerFor({ fields: { key: [(el) => el.getAttribute("id")], text: [".body"], time: [".when", { via: "title", sel: ".ago", value: (n) => n.getAttribute("title") }] } });
  assert.deepEqual(obs.extract(new El(".c", { children: [new El(".body", { text: "x" })] }), PAGE), { missing: "key" });
  assert.deepEqual(obs.extract(new El(".c", { attrs: { id: "k" }, children: [new El(".other", { text: "x" })] }), PAGE), { missing: "text" });
  const rec = obs.extract(new El(".c", { attrs: { id: "k" }, children: [new El(".body", { text: "x" }), new El(".when", { text: "2 days ago" }),
    new El(".ago", { attrs: { title: "2026-03-02T10:00:00Z" } })] }), PAGE);
  assert.equal(rec.time_shown, "2026-03-02T10:00:00.000Z");
});

test("one adapter dialect: the old one-hook form is refused with a pointer to fields", () => {
  assert.throws(() => ns.defineAdapter({ name: "old", platform: "t", matches: () => false, pageKey: () => "p", comments: ".c",
    key: (el) => el.getAttribute("id"), text: ".body", fields: { key: [(el) => el.getAttribute("id")], text: [".body"] } }),
  /adapter old: key, text belong in fields/);
  assert.throws(() => observerFor({ fields: { key: [(el) => el.id], text: [".body"], body: [".x"] } }), /unknown field\(s\) body/);
  assert.throws(() => observerFor({ fields: { text: [".body"] } }), /has no key strategy/);
});

test("a wrapper the comment selector matches around a comment is not a comment missing its key", () => {
  // two generations' markers on one comment: a labelled wrapper (.c) around the block (.c) that
  // holds the key link and the text; and a comment whose key really is missing
  const block = (id, text) => new El(".c", { children: [new El("a.permalink", { attrs: { href: `?cid=${id}` } }), new El(".body", { text })] });
  const wrapper = new El(".c", { children: [block("1", "first")] });
  const keyless = new El(".c", { children: [new El(".body", { text: "no key here" })] });
  const list = new El(".list", { children: [wrapper, keyless] });
  const obs = observerFor({ fields: { key: [{ via: "permalink", sel: "a.permalink", value: (a) => a.getAttribute("href").slice(5) }], text: [".body"] } });
  assert.deepEqual(obs.extract(wrapper, PAGE), { container: true });
  assert.equal(obs.extract(wrapper.children[0], PAGE).key, "1");
  assert.deepEqual(obs.extract(keyless, PAGE), { missing: "key" });
  // the page status: one comment, one element without a key (the keyless one), not two
  obs.roots.add(list);
  obs.stopped = false;
  obs.currentPage = () => PAGE;
  obs.scan();
  assert.deepEqual([obs.counts.found, obs.counts.missing.key, obs.counts.skipped], [1, 1, 1]);
});

test("ctx.keyOf: a parent's key is found by the same key strategies as the parent's own", () => {
  const parent = new El(".c", { attrs: { "data-id": "p1" }, children: [new El(".body", { text: "parent" })] });
  const reply = new El(".c", { attrs: { "data-id": "r1" }, children: [new El(".body", { text: "reply" })] });
  parent.children.push(new El(".replies", { children: [reply] }));
  reply.parentElement.parentElement = parent;
  const obs = observerFor({ fields: { key: [{ via: "data-id", find: (el) => el.getAttribute("data-id") }], text: [".body"],
    parent: [{ via: "structure", find: (el, ctx) => ctx.keyOf(el.parentElement && el.parentElement.closest(".c")) }] } });
  const r = obs.extract(reply, PAGE);
  assert.deepEqual([r.key, r.parent_key, r.parent_via], ["r1", "p1", "structure"]);
  assert.equal(obs.extract(parent, PAGE).parent_via, "none");
});

test("accessible labels: 'Comment by NAME', 'Reply from NAME'; anything else is no name", () => {
  const label = (s) => ns.labelName(new El([], { attrs: { "aria-label": s } }));
  assert.equal(label("Comment by  Prairie Breather "), "Prairie Breather");
  assert.equal(label("Reply from river_otter"), "river_otter");
  assert.equal(label("Like this comment"), null);
  assert.equal(ns.labelName(null), null);
});
