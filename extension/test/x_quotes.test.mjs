// A reply on X that quotes another post carries the quoted post inside its own article (X draws it as
// a card, div[role="link"], with that post's User-Name, time, text and "Replying to"): the reply's
// text, and the parent its "Replying to" names, are its own, never the quoted post's.
import test from "node:test";
import assert from "node:assert/strict";
import { fixtureFile, fixtureRecords } from "./fakes.mjs";

// the quoted post's card as X draws it inside the quoting reply's article (no links of its own)
const QUOTE = (text, replyingTo = "") => '<div role="link" tabindex="0"><div data-testid="User-Name"><span>Weekend Chef</span>'
  + '<span>@weekend_chef</span><time datetime="2026-03-01T09:00:00.000Z">Mar 1</time></div>'
  + (replyingTo ? `<div>Replying to <a href="/${replyingTo}">@${replyingTo}</a></div>` : "")
  + `<div data-testid="tweetText" lang="en" dir="auto"><span>${text}</span></div></div>`;
const REPLY = (handle, id, own, quote) => '<div data-testid="cellInnerDiv"><div><article data-testid="tweet" tabindex="0" role="article">'
  + `<div class="body"><div data-testid="User-Name"><a href="/${handle}" role="link"><span>${handle}</span></a>`
  + `<a href="/${handle}/status/${id}"><time datetime="2026-03-02T15:00:00.000Z">1h</time></a></div>`
  + (own ? `<div data-testid="tweetText" lang="en" dir="auto"><span>${own}</span></div>` : "")
  + quote + "</div></article></div></div>";

function withReplies(cells) {
  const html = fixtureFile("x-thread", "page.html");
  const at = html.indexOf('<div data-testid="cellInnerDiv"><div class="show-more">');
  return html.slice(0, at) + cells + html.slice(at);
}

test("a reply that only quotes another post is not logged with the quoted post's text", () => {
  const html = withReplies(REPLY("quote_only", "1890016000000000001", "", QUOTE("Ten minute tomato soup.")));
  const records = fixtureRecords("x-thread", { html });
  const texts = records.map((r) => r.text);
  assert.ok(!texts.includes("Ten minute tomato soup."), `the quoted post's text logged as the reply's: ${JSON.stringify(texts)}`);
  assert.ok(!records.some((r) => r.key === "1890016000000000001"), "a reply with no text of its own is skipped (counted), not given the quote's");
});

test("a reply's text is its own, its parent not the one a quoted post's 'Replying to' names", () => {
  const html = withReplies(REPLY("quoter", "1890016000000000002", "Look at this one.", QUOTE("Soup again.", "nightshift_nadia")));
  const rec = fixtureRecords("x-thread", { html }).find((r) => r.key === "1890016000000000002");
  assert.equal(rec.text, "Look at this one.");
  // the quoted post replies to @nightshift_nadia, the quoting reply does not
  assert.notEqual(rec.parent_via, "replying_to");
  assert.notEqual(rec.parent_key, "1890013001122334455");
});
