// The keys the adapters make for comments whose site gives them no id (Viafoura, a site with
// custom selectors), on the sites' fixture pages (tests/fixtures/sites/): a key holds nothing of
// the author, so whoever holds the log cannot test guessed names against it (the consent text
// promises names are only in the salted author hash), and it stays the same across reloads, so
// the log still keeps one row per comment. node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { prepend, removeElement, replaceElement } from "domutils";
import { fixtureFile, fixtureRecords, fixtureSettings, parsedDocument, parsedElement } from "./fakes.mjs";

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
require("../lib/sampling.js");
require("../lib/hash.js");
require("../content/dom.js");
require("../content/registry.js");
require("../content/observer.js");
require("../content/adapters/viafoura.js");
require("../content/adapters/generic.js");

const fixture = (name) => JSON.parse(fixtureFile(name, "fixture.json"));
const pageHtml = (name) => fixtureFile(name, "page.html");
// the pages are read as parsed, not laid out (fakes.mjs): a comment's text is what textOf gives in a
// browser (line breaks between blocks), so the keys are made of the texts the extension logs; that
// these are the texts Chromium reads is dom_text.test.mjs's test of the fixtures' expected.json

const adapterNamed = (name) => ns.adapters.find((a) => a.name === name);

/** The records the adapter extracts from a fixture page's HTML (as loaded, before any lazy load). */
function extract(name, html, settings = {}) {
  const records = fixtureRecords(name, { html, settings });
  assert.ok(records.length >= 3 && records.every((r) => r.text), `${name}: every comment keyed`);
  return records;
}

const genericSettings = () => fixtureSettings("generic");
const CASES = [
  { name: "viafoura", settings: () => ({}) },
  { name: "viafoura-live", settings: () => ({}) },
  { name: "generic", settings: genericSettings },
];

// What a log holder could do with the keys this extension made before: the adapters' own hash of
// (author | time shown, text), computed with no secret at all.
const guessedViafouraKey = (author, time, text) => "vf-" + ns.unitHash("viafoura", author + "|" + time, text).toString(36).slice(2, 12);
const guessedGenericKey = (author, text) => "g-" + ns.unitHash("generic", author, text).toString(36).slice(2, 12);

// The same guess against today's rule: the name put anywhere among the parts the key is hashed from.
const withNameAnywhere = (prefix, platform, parts, name) =>
  Array.from({ length: parts.length + 1 }, (_, i) => ns.derivedCommentKey(prefix, platform, [...parts.slice(0, i), name, ...parts.slice(i)]));

test("a guessed author name, hashed without any salt, matches no key in the log", () => {
  const guesses = (author) => ["someone", "admin", author].filter(Boolean);
  for (const r of extract("viafoura", pageHtml("viafoura"))) {
    const time = r.el.querySelector("time[datetime]").getAttribute("datetime");
    const parts = [fixture("viafoura").page_key, r.time_shown, r.text];
    for (const name of guesses(r.author)) {
      assert.notEqual(r.key, guessedViafouraKey(name, time, r.text), `${r.author}'s key gives away their name`);
      assert.ok(!withNameAnywhere("vf", "viafoura", parts, name).includes(r.key), `${r.author}'s key gives away their name`);
    }
  }
  for (const r of extract("generic", pageHtml("generic"), genericSettings())) {
    const parts = [fixture("generic").page_key, r.text];
    assert.equal(r.key, ns.derivedCommentKey("g", "generic", parts), "a custom-selector key is its page key and text alone");
    for (const name of guesses(r.author)) {
      assert.notEqual(r.key, guessedGenericKey(name, r.text), `${r.author}'s key gives away their name`);
      assert.ok(!withNameAnywhere("g", "generic", parts, name).includes(r.key), `${r.author}'s key gives away their name`);
    }
  }
});

test("a comment's key is the same whoever wrote it: the author is no part of it", () => {
  for (const { name, settings } of CASES) {
    const html = pageHtml(name);
    const before = extract(name, html, settings());
    const authors = [...new Set(before.map((r) => r.author).filter(Boolean))];
    assert.ok(authors.length >= 2, `${name} names its authors`);
    // the same page with every author renamed (their names in the markup and in the labels)
    let renamed = html;
    authors.forEach((a, i) => { renamed = renamed.split(a).join(`Renamed Person ${i}`); });
    const after = extract(name, renamed, settings());
    assert.deepEqual(after.map((r) => r.author), before.map((r) => r.author && `Renamed Person ${authors.indexOf(r.author)}`));
    assert.deepEqual(after.map((r) => [r.key, r.parent_key]), before.map((r) => [r.key, r.parent_key]), `${name}: keys follow the author`);
  }
});

test("keys stay the same across reloads and keep every comment of a page apart", () => {
  for (const { name, settings } of CASES) {
    const first = extract(name, pageHtml(name), settings());
    // a reload some minutes later: the relative time shown has changed, the comment has not
    const later = pageHtml(name).replace(/>(\d+)(m|h) ago</g, (_, n, u) => `>${Number(n) + 1}${u} ago<`);
    const reloaded = extract(name, later, settings());
    assert.deepEqual(reloaded.map((r) => r.key), first.map((r) => r.key), `${name}: a reload gives other keys`);
    assert.equal(new Set(first.map((r) => r.key)).size, first.length, `${name}: two comments share a key`);
    // a reply names its parent by the key the parent is logged with
    for (const r of first.filter((x) => x.parent_key)) assert.ok(first.some((p) => p.key === r.parent_key), `${name}: parent of ${r.key}`);
  }
  // a release that shows only a relative time ("2h ago"): the key leaves the label out
  const undated = pageHtml("viafoura").replace(/ datetime="[^"]*"/g, "");
  const bumped = undated.replace(/>(\d+)(m|h) ago</g, (_, n, u) => `>${Number(n) + 1}${u} ago<`);
  assert.deepEqual(extract("viafoura", bumped).map((r) => r.key), extract("viafoura", undated).map((r) => r.key));
  // the same text on another page is another comment
  const a = ns.derivedCommentKey("vf", "viafoura", ["page-1", "2026-03-02T21:40:00Z", "Agreed."]);
  const b = ns.derivedCommentKey("vf", "viafoura", ["page-2", "2026-03-02T21:40:00Z", "Agreed."]);
  assert.notEqual(a, b);
  assert.equal(a, ns.derivedCommentKey("vf", "viafoura", ["page-1", "2026-03-02T21:40:00Z", "Agreed."]));
});

test("a Viafoura key holds the time the log holds: a dated tooltip after an undated time element", () => {
  // the observer logs the first time field that reads as an instant (time_shown); the key must be
  // made of that same instant, not of the first time element found when that one says only "2h ago"
  const tooltips = pageHtml("viafoura").replace(/<time class="([^"]*)" datetime="([^"]*)">([^<]*)<\/time>/g,
    (_, cls, when, ago) => `<time class="${cls}">${ago}</time><span class="vf-posted-time" title="${when}"></span>`);
  assert.notEqual(tooltips, pageHtml("viafoura"));
  const records = extract("viafoura", tooltips);
  assert.ok(records.every((r) => r.time_shown), "the observer logs the tooltip's time");
  for (const { name, html } of [{ name: "viafoura", html: tooltips }, { name: "viafoura", html: pageHtml("viafoura") },
    { name: "viafoura-live", html: pageHtml("viafoura-live") }]) {
    for (const r of extract(name, html)) {
      const fromLog = ns.derivedCommentKey("vf", "viafoura", [fixture(name).page_key, r.time_shown, r.text]);
      assert.equal(r.key, fromLog, `${name}: ${r.text.slice(0, 30)}: the key is not made of what the log holds`);
    }
  }
});

/** What the observer's scan of a fixture page sends, marks and counts (content/observer.js scan). */
function scanned(name, html, settings = {}, adapt = (a) => a) {
  const fx = fixture(name);
  const adapter = adapt(adapterNamed(fx.adapter));
  const doc = parsedDocument(html);
  const loc = new URL(fx.start_url);
  assert.ok(adapter.matches(loc, settings, doc));
  const sent = [];
  const marked = [];
  const obs = new ns.CommentObserver(adapter, { onComments: (page, items) => sent.push(...items),
    onElement: (el, key) => marked.push([el, key]) }, { document: doc });
  obs.roots.add(doc);
  obs.stopped = false;
  obs.currentPage = () => ({ url: fx.start_url, platform: adapter.platform, page_key: String(adapter.pageKey(loc, doc)), title: "" });
  obs.scan();
  return { sent, marked, found: obs.counts.found, obs };
}

test("identical comments on one page are each sent, counted and marked: the first gets its base key, the n-th in page order -n", () => {
  // two readers post the same words in the same minute (a "+1", a copied slogan): the hash of page
  // key, time and text is the same for both; the second must not be dropped as the first seen again
  const vf = pageHtml("viafoura");
  const first = vf.indexOf('<article class="vf3-comment" aria-label="Comment by Prairie Breather">');
  const next = vf.indexOf('<article class="vf3-comment" aria-label="Comment by TruthSeeker_42">');
  const thread = vf.slice(first, next); // a comment with its reply
  const twinned = vf.slice(0, next) + thread.split("Prairie Breather").join("Second Breather") + vf.slice(next);
  const gen = pageHtml("generic");
  const entry = gen.slice(gen.indexOf('<li class="comment-entry" id="comment-102">'), gen.indexOf('<li class="comment-entry" id="comment-103">'));
  const genTwinned = gen.replace(entry, entry + entry.replace("comment-102", "comment-102b") + entry.replace("comment-102", "comment-102c"));
  // viafoura: a comment and its reply twice; generic: one comment three times
  for (const { name, html, settings, twins, added } of [{ name: "viafoura", html: twinned, settings: {}, twins: 2, added: 2 },
    { name: "generic", html: genTwinned, settings: genericSettings(), twins: 3, added: 2 }]) {
    const once = scanned(name, pageHtml(name), settings);
    const { sent, marked, found, obs } = scanned(name, html, settings);
    assert.equal(sent.length, once.sent.length + added, `${name}: a twin was not sent`);
    assert.equal(found, once.found + added, `${name}: "found" counts twins once`);
    assert.equal(new Set(sent.map((r) => r.key)).size, sent.length, `${name}: two comments share a key`);
    assert.equal(new Set(marked.map(([, k]) => k)).size, marked.length, `${name}: two elements share a marker`);
    // the first keeps the key it had alone (nothing already logged changes), the others are numbered
    assert.deepEqual(once.sent.map((r) => r.key), sent.filter((r) => once.sent.some((o) => o.key === r.key)).map((r) => r.key));
    const base = once.sent.find((r) => r.text === sent.find((s) => s.key.endsWith("-2")).text).key;
    assert.deepEqual(sent.filter((r) => r.key.startsWith(base)).map((r) => r.key),
      [base, ...Array.from({ length: twins - 1 }, (_, i) => `${base}-${i + 2}`)]);
    for (const [el, key] of marked) assert.equal(obs.elements.get(key), el, `${name}: ${key} marks another element`);
    // a reply names its own parent: the twin's reply is a reply to the twin
    for (const r of sent.filter((x) => x.parent_key)) {
      assert.ok(sent.some((p) => p.key === r.parent_key), `${name}: parent of ${r.key}`);
      assert.equal(r.parent_key.endsWith("-2"), r.key.endsWith("-2"), `${name}: ${r.key} names ${r.parent_key}`);
    }
    // scanned again (a re-render): the same keys, nothing sent twice
    obs.scan();
    assert.equal(obs.counts.found, found);
  }
  // a site id is never numbered: the same id twice is one comment shown twice
  const withIds = twinned.split('<article class="vf3-comment"').map((part, i) => (i ? `<article data-id="same-${i % 2}" class="vf3-comment"${part}` : part)).join("");
  const ided = scanned("viafoura", withIds);
  assert.deepEqual(ided.sent.filter((r) => r.key.startsWith("same-")).map((r) => r.key), ["same-1", "same-0"], "a site's id got a number");
});

/** A fresh element made from `html` (a site rendering a comment again). */
const rendered = parsedElement;

test("a twin keeps its key wherever twins come and go: a newer one above it, one leaving the page, a re-render", () => {
  // a list sorted newest first shows a newer identical comment above one already logged: the logged
  // one keeps its key (its marker, its rating), the newer one takes the next number and is sent
  const gen = pageHtml("generic");
  const entry = gen.slice(gen.indexOf('<li class="comment-entry" id="comment-102">'), gen.indexOf('<li class="comment-entry" id="comment-103">')).trim();
  const { sent, marked, obs } = scanned("generic", gen, genericSettings());
  const first = marked.find(([el]) => el.getAttribute("id") === "comment-102")[0];
  const K = marked.find(([el]) => el === first)[1];
  assert.ok(sent.some((r) => r.key === K) && !K.match(/-\d+$/));
  const keyOf = (el) => marked.filter(([e]) => e === el).at(-1)[1];
  const newer = rendered(entry.replace("comment-102", "comment-102-newer"));
  prepend(first.n, newer.n);
  sent.length = 0;
  obs.scan();
  assert.deepEqual(sent.map((r) => r.key), [`${K}-2`], "the newer twin is sent under the next number");
  assert.equal(keyOf(first), K, "the logged twin lost its key");
  assert.equal(keyOf(newer), `${K}-2`);
  assert.equal(obs.elements.get(K), first);
  const found = obs.counts.found;
  // the logged one leaves the page (a virtualized list, a collapsed thread): the other keeps its key
  removeElement(first.n);
  assert.equal(first.isConnected, false);
  obs.scan();
  assert.equal(keyOf(newer), `${K}-2`, "a twin took the key of one that left the page");
  assert.deepEqual(sent.map((r) => r.key), [`${K}-2`], "nothing is sent again");
  // it comes back rendered anew: a new element, the key of the one that left, not sent again
  const back = rendered(entry);
  prepend(newer.n.next || newer.n, back.n);
  obs.scan();
  assert.equal(keyOf(back), K);
  assert.equal(keyOf(newer), `${K}-2`);
  // the newer one rendered again in place: its key stays too
  const again = rendered(entry.replace("comment-102", "comment-102-newer"));
  replaceElement(newer.n, again.n);
  obs.scan();
  assert.equal(keyOf(again), `${K}-2`, "a re-rendered twin took another key");
  assert.equal(keyOf(back), K);
  assert.deepEqual(sent.map((r) => r.key), [`${K}-2`], "nothing is sent again");
  assert.equal(obs.counts.found, found);
  assert.equal(obs.elements.get(K), back);
  assert.equal(obs.elements.get(`${K}-2`), again);
});

test("a twin that comes back after a new twin took its number is numbered anew: no two elements share a key", () => {
  // A is logged as K and B as K-2; A leaves the page, a new identical C takes K (it may be A
  // rendered again, twins cannot be told apart); then A itself comes back: it must not keep K
  const gen = pageHtml("generic");
  const entry = gen.slice(gen.indexOf('<li class="comment-entry" id="comment-102">'), gen.indexOf('<li class="comment-entry" id="comment-103">')).trim();
  const { sent, marked, obs } = scanned("generic", gen, genericSettings());
  const a = marked.find(([el]) => el.getAttribute("id") === "comment-102")[0];
  const K = marked.find(([el]) => el === a)[1];
  const keyOf = (el) => marked.filter(([e]) => e === el).at(-1)[1];
  const b = rendered(entry.replace("comment-102", "comment-102-b"));
  prepend(a.n, b.n);
  obs.scan();
  assert.equal(keyOf(b), `${K}-2`);
  removeElement(a.n);
  const c = rendered(entry.replace("comment-102", "comment-102-c"));
  prepend(b.n, c.n);
  obs.scan();
  assert.equal(keyOf(c), K, "the new twin takes the number of the one that left");
  sent.length = 0;
  prepend(b.n, a.n); // A is back
  assert.equal(a.isConnected, true);
  obs.scan();
  const shown = [a, b, c].map(keyOf);
  assert.equal(new Set(shown).size, 3, `two elements share a key: ${shown.join(", ")}`);
  assert.deepEqual(shown, [`${K}-3`, `${K}-2`, K]);
  assert.deepEqual(sent.map((r) => r.key), [`${K}-3`], "the re-attached twin is sent under its new number");
  assert.equal(obs.elements.get(K), c, "K's marker and rating go to another element");
  assert.equal(obs.elements.get(`${K}-3`), a);
});

test("a reply to a twin the scan skips names that twin's own number, not the first twin's key", () => {
  const vf = pageHtml("viafoura");
  const first = vf.indexOf('<article class="vf3-comment" aria-label="Comment by Prairie Breather">');
  const next = vf.indexOf('<article class="vf3-comment" aria-label="Comment by TruthSeeker_42">');
  const thread = vf.slice(first, next);
  const twinned = vf.slice(0, next) + thread.split("Prairie Breather").join("Second Breather") + vf.slice(next);
  // the adapter skips the second twin (say, a comment the site greys out): its reply is still logged
  const skipSecond = (a) => ({ ...a, skip: (el) => el.getAttribute("aria-label") === "Comment by Second Breather" });
  const { sent } = scanned("viafoura", twinned, {}, skipSecond);
  const once = scanned("viafoura", vf).sent;
  const base = once.find((r) => r.author === "Prairie Breather").key;
  assert.ok(sent.some((r) => r.key === base) && !sent.some((r) => r.key === `${base}-2`), "the skipped twin is not sent");
  const replies = sent.filter((r) => r.parent_key && r.parent_key.startsWith(base));
  assert.equal(replies.length, 2);
  assert.deepEqual(replies.map((r) => r.parent_key), [base, `${base}-2`], "the skipped twin's reply names the first twin");
});
