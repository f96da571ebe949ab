// A comment's text (content/dom.js textOf) is the same whether or not the browser had laid the
// comment out when it was read. innerText of an element with no layout box (inside a display:none
// container or frame, detached, in a parsed document) is its textContent, which puts nothing
// between block elements or at <br>: "rabbits.<br>September" was logged as "rabbits.September".
// Node lays nothing out, so here every element is such an unrendered one (innerText is its
// textContent, as browsers answer): the texts must still be the ones Chromium's rendered innerText
// gives (the fixtures' expected.json, checked in Chromium by tests/e2e/test_sites.py and
// tests/e2e/test_text_before_layout.py). node --test extension/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { parsedDocument } from "./fakes.mjs";

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
require("../content/dom.js");
require("../content/registry.js");
require("../content/observer.js");
require("../content/adapters/facebook.js");

const SITES = new URL("../../tests/fixtures/sites/", import.meta.url);
const read = (name, file) => readFileSync(new URL(`${name}/${file}`, SITES), "utf8");

// the page as parsed, not laid out (fakes.mjs): every element is an unrendered one
const body = (html) => parsedDocument(html).querySelector("body");

/** The records the Facebook adapter extracts from a fixture's frame, as loaded (before the lazy batch). */
function facebookRecords(name) {
  const fx = JSON.parse(read(name, "fixture.json"));
  const frameRoute = Object.entries(fx.routes).find(([, file]) => file === "frame.html")[0];
  const loc = new URL(`${frameRoute.replace(/\*$/, "")}?href=${encodeURIComponent(fx.start_url)}`);
  const adapter = ns.adapters.find((a) => a.name === fx.adapter);
  const doc = parsedDocument(read(name, "frame.html"));
  globalThis.location = loc;
  try {
    assert.ok(adapter.matches(loc, {}, doc), `${name}: the adapter takes the frame`);
    const page = { page_key: String(adapter.pageKey(loc, doc)) };
    const obs = new ns.CommentObserver(adapter, {}, { document: doc });
    return doc.querySelectorAll(adapter.comments).map((el) => obs.extract(el, page)).filter((r) => r && r.key);
  } finally {
    delete globalThis.location;
  }
}

test("Facebook plugin comments read before layout are the texts Chromium renders ('rabbits. September')", () => {
  for (const name of ["facebook-plugin", "facebook-plugin-legacy", "facebook-plugin-wrapped"]) {
    const want = JSON.parse(read(name, "expected.json")).before;
    const got = facebookRecords(name);
    assert.deepEqual(got.map((r) => [r.key, r.text]), want.map((e) => [e.key, e.text]), name);
  }
});

test("line breaks between blocks, at <br>, between table cells and rows; none inside a line", () => {
  const cases = [
    ["<span>Same with the rabbits.</span><br><span>September</span>", "Same with the rabbits. September"],
    ["<div>a</div><div>b</div>c<p>d</p>e", "a b c d e"],
    ["<ul><li>one</li><li>two</li></ul><blockquote>q</blockquote><h3>h</h3>x<hr>y", "one two q h x y"],
    ["<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "a b c"],
    ["a<b>b</b><i>c</i><a href='#'>d</a><button>e</button><span>f</span><wbr>g", "abcdefg"],
    ["<details><summary>s</summary>shut</details><details open><summary>t</summary>open</details>", "s t open"],
    ["<select><option>o1</option><option>o2</option></select>", "o1 o2"],
  ];
  for (const [html, want] of cases) assert.equal(ns.textOf(body(`<body><div id=t>${html}</div></body>`).querySelector("#t")), want, html);
});

test("what innerText leaves out stays out: hidden elements, scripts, styles, replaced elements' fallback", () => {
  const html = "a<span hidden>hidden</span><script>var s</script><style>p{}</style><noscript>ns</noscript>" +
    "<template>tpl</template><img alt='alt'><textarea>ta</textarea><video>v</video><iframe>f</iframe><canvas>c</canvas>" +
    "<audio>au</audio><ruby>漢<rp>(</rp><rt>kan</rt><rp>)</rp></ruby><dialog>d</dialog>" +
    "<svg><title>icon</title><text>S</text></svg>b";
  assert.equal(ns.textOf(body(`<body><div id=t>${html}</div></body>`).querySelector("#t")), "a漢kan S b");
});

test("a string, a node without innerText (not an HTML element) and no node keep their old answers", () => {
  assert.equal(ns.textOf("  a \n b "), "a b");
  assert.equal(ns.textOf({ nodeType: 1, textContent: " x  y " }), "x y");
  assert.equal(ns.textOf(null), "");
});
