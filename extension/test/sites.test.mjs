// The sites table (lib/sites.js) is the one list of sites: the checked-in manifest.json is what
// tools/extension_manifest.mjs builds from it (`node tools/extension_manifest.mjs --write` after a change),
// every row has its adapter file and every adapter file its row, and the worker's lists (switches,
// labels, image hosts, any-page frames) come from it. node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { MANIFEST, siteLists, tableFromSource, withSiteLists } from "../../tools/extension_manifest.mjs";

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
require("../lib/sites.js");
const EXT = new URL("..", import.meta.url);

test("the checked-in manifest's site lists are the ones the sites table gives", () => {
  const manifest = JSON.parse(readFileSync(MANIFEST, "utf8"));
  assert.deepEqual(manifest, withSiteLists(manifest, tableFromSource()),
    "manifest.json differs from the sites table: run `node tools/extension_manifest.mjs --write`");
});

test("one row per adapter file, and every file a content script names exists", () => {
  const files = readdirSync(new URL("content/adapters/", EXT)).filter((f) => f.endsWith(".js")).map((f) => f.slice(0, -3)).sort();
  assert.deepEqual([...ns.SITES].sort(), files);
  for (const cs of siteLists(ns.SITE_TABLE).content_scripts) for (const f of cs.js) assert.ok(existsSync(new URL(f, EXT)), f);
});

test("a new row reaches the manifest: a frame adapter gets a script of its own, its hosts and image hosts", () => {
  const row = { adapter: "newsite", label: "New", hosts: ["https://comments.example/embed/*"], frame: "any page", imageHosts: ["https://img.example/*"] };
  const lists = siteLists([...ns.SITE_TABLE, row]);
  const own = lists.content_scripts.find((cs) => cs.js.includes("content/adapters/newsite.js"));
  assert.deepEqual([own.matches, own.all_frames], [row.hosts, true]);
  assert.ok(lists.host_permissions.includes(row.hosts[0]) && lists.host_permissions.includes(row.imageHosts[0]));
  // a news-site row (no hosts) joins the page script and asks for nothing at install
  const news = siteLists([...ns.SITE_TABLE, { adapter: "newsweb", label: "N" }]);
  assert.ok(news.content_scripts[0].js.includes("content/adapters/newsweb.js"));
  assert.deepEqual(news.host_permissions, siteLists(ns.SITE_TABLE).host_permissions);
});

test("the worker's lists come from the table", () => {
  assert.deepEqual(Object.keys(ns.DEFAULT_SETTINGS.sites), ns.SITES);
  assert.ok(Object.values(ns.DEFAULT_SETTINGS.sites).every((on) => on === true));
  assert.deepEqual(ns.MEDIA_HOSTS, ["https://pbs.twimg.com/*", "https://*.disquscdn.com/*", "https://*.fbcdn.net/*"]);
  assert.deepEqual(ns.ANY_PAGE_FRAMES, ["disqus"]);
  for (const s of ns.SITES) assert.ok(ns.SITE_LABELS[s], s);
  // the Facebook frame's script needs no host permission: the worker never talks to facebook.com
  assert.ok(!siteLists(ns.SITE_TABLE).host_permissions.some((h) => h.includes("facebook.com")));
});

// The page row each adapter sends (CommentObserver.currentPage): the consent text promises that
// authors' handles and names are not in the log, and on X the address bar and the tab title name
// the opened post's author (`/<handle>/status/<id>`, `<name> on X: "…"`).
require("../content/dom.js");
require("../content/registry.js");
require("../content/observer.js");
require("../content/adapters/x.js");
require("../content/adapters/youtube.js");
const FIXTURES = new URL("../../tests/fixtures/sites/", import.meta.url);
const adapter = (name) => ns.adapters.find((a) => a.name === name);

function pageRow(name, href, title) {
  globalThis.location = new URL(href);
  try {
    return new ns.CommentObserver(adapter(name), {}, { document: { title } }).currentPage();
  } finally {
    delete globalThis.location;
  }
}

/** A fixture's start URL, tab title, and the handles and display names its posts show. */
function fixture(folder) {
  const f = JSON.parse(readFileSync(new URL(`${folder}/fixture.json`, FIXTURES), "utf8"));
  const html = readFileSync(new URL(`${folder}/page.html`, FIXTURES), "utf8");
  const decode = (s) => s.replace(/&#(\d+);/g, (_, n) => String.fromCodePoint(+n)).replace(/&quot;/g, '"').replace(/&amp;/g, "&");
  const title = decode(html.match(/<title>([^<]*)<\/title>/)[1]);
  // static posts (`<a href="/handle" role="link"><span>Name</span>`) and scripted ones ({handle, name})
  const people = [...html.matchAll(/<a href="\/(\w+)" role="link"><span>([^<]+)<\/span>/g), ...html.matchAll(/handle: "(\w+)", name: "([^"]+)"/g)]
    .flatMap((m) => [m[1], decode(m[2])]);
  return { ...f, title, people };
}

test("X page rows: https://x.com/i/status/<id> and the post's text, no handle or display name", () => {
  for (const folder of ["x-thread", "x-chain", "x-media"]) {
    const f = fixture(folder);
    assert.ok(f.people.length >= 2 && f.title.includes(" on X: "), folder);
    const row = pageRow("x", f.start_url, f.title);
    assert.deepEqual([row.url, row.page_key], [`https://x.com/i/status/${f.page_key}`, f.page_key], folder);
    assert.equal(row.title, f.title.match(/ on X: "(.*)" \/ X$/)[1], folder);
    const opened = [new URL(f.start_url).pathname.split("/")[1], f.title.split(" on X: ")[0]];
    assert.ok(opened.every((who) => f.people.includes(who)), `${folder}: ${opened}`);
    const named = (who) => new RegExp(`(^|\\W)${who.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|\\W)`, "i").test(`${row.url} ${row.title}`);
    for (const who of f.people) assert.ok(!named(who), `${folder}: ${who} in ${row.url} ${row.title}`);
  }
  const post = "https://twitter.com/Some_One/status/123?s=20&t=abc";
  assert.deepEqual(pageRow("x", post, "(3) Some One on X: \"hi there\" / X"), { url: "https://x.com/i/status/123", platform: "x", page_key: "123", title: "hi there" });
  // a name holding the separator is dropped whole; a title of another shape gives a neutral one
  assert.equal(pageRow("x", post, 'Ann on X: "Bo" on X: "the text" / X').title, "the text");
  for (const t of ["X", "Some One auf X: „hallo“ / X", "Some One on X: / X", ""]) assert.equal(pageRow("x", post, t).title, "Post on X", t);
});

test("an adapter's page URL is never replaced by the address bar's", () => {
  const a = ns.defineAdapter({ name: "t-url", platform: "t", matches: () => false, pageKey: () => "k", comments: ".c", fields: { key: ".k", text: ".t" },
    pageUrl: () => { throw new Error("no address"); } });
  globalThis.location = new URL("https://example.com/people/jane-doe/post/1");
  try {
    assert.equal(new ns.CommentObserver(a, {}, { document: { title: "" } }).currentPage(), null);
  } finally {
    delete globalThis.location;
  }
});

test("YouTube page rows: the video's address only (a watch link's ab_channel names its channel)", () => {
  const f = fixture("youtube-watch");
  const row = pageRow("youtube", `${f.start_url}&ab_channel=Barn%20Synth%20Guy&list=PL1&t=42s`, f.title);
  assert.deepEqual([row.url, row.title], [`https://www.youtube.com/watch?v=${f.page_key}`, f.title.replace(/ - YouTube$/, "")]);
  assert.equal(pageRow("youtube", "https://m.youtube.com/shorts/abcdef123?feature=share&si=x", "t").url, "https://www.youtube.com/shorts/abcdef123");
  assert.equal(pageRow("youtube", "https://www.youtube.com/live/abcdef123?ab_channel=Name", "t").url, "https://www.youtube.com/live/abcdef123");
});

// The same pages through the engine's page rule (studylog/page_address.py, tests/test_page_address.py):
// the page rows the adapters send are the ones the daemon keeps for any sender.
test("the adapters' page rows are the engine's (tests/fixtures/page_addresses.json)", () => {
  const { cases } = JSON.parse(readFileSync(new URL("../../tests/fixtures/page_addresses.json", import.meta.url), "utf8"));
  for (const c of cases) {
    const row = pageRow(c.platform, c.address, c.tab_title);
    assert.deepEqual({ platform: row.platform, page_key: row.page_key, url: row.url, title: row.title },
      { platform: c.platform, page_key: c.page_key, url: c.url, title: c.title }, c.address);
  }
});
