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
