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
import { createRequire } from "node:module";
import { fixtureFile, fixtureRecords, parsedDocument } from "./fakes.mjs";

const require = createRequire(import.meta.url);
const ns = require("../lib/ns.js");
require("../content/dom.js");

// the page as parsed, not laid out (fakes.mjs): every element is an unrendered one
const body = (html) => parsedDocument(html).querySelector("body");

const FIXTURES = [["viafoura", {}], ["viafoura-live", {}], ["generic", {}],
  ...["facebook-plugin", "facebook-plugin-legacy", "facebook-plugin-wrapped"].map((name) => [name, { file: "frame.html" }])];

test("comments read before layout are the texts Chromium renders ('rabbits. September', 'hardest. Nobody'), keyed as expected", () => {
  // expected.json: checked in Chromium; a key it leaves null is derived from the text (comment_keys.test.mjs)
  for (const [name, opts] of FIXTURES) {
    const want = JSON.parse(fixtureFile(name, "expected.json")).before;
    const got = fixtureRecords(name, opts);
    assert.deepEqual(got.map((r, i) => [want[i] && want[i].key === null ? null : r.key, r.text]), want.map((e) => [e.key, e.text]), name);
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
