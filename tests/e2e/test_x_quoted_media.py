"""A reply on X that quotes another post holds the quoted post's card (div[role="link"]) inside its
own article, photos included: the images logged as attached to the reply are its own, never the
quoted post's. Plain Chromium, no daemon: the content scripts' observer and the X adapter are
loaded into the x-thread fixture page, served at its own address, and read one laid-out reply."""
from __future__ import annotations

import pytest

from .harness import CHROMIUM, FIXTURES, REPO
from realtools import requires

pytestmark = [pytest.mark.browser]

EXT = REPO / "extension"
SCRIPTS = ["lib/ns.js", "lib/sampling.js", "lib/hash.js", "lib/media.js", "content/dom.js", "content/registry.js",
           "content/observer.js", "content/adapters/x.js"]
FIXTURE = FIXTURES / "x-thread"
URL = "https://x.com/orbitalnews/status/1890012345678901234"
OWN = "data:image/png;base64,T3duUGhvdG8="
QUOTED = "data:image/png;base64,UXVvdGVkUGhvdG8="
PHOTO = '<div data-testid="tweetPhoto"><img src="{}" style="display:block;width:200px;height:150px"></div>'
REPLY = (
    '<div data-testid="cellInnerDiv"><div><article data-testid="tweet" tabindex="0" role="article" id="quoting">'
    '<div class="body"><div data-testid="User-Name"><a href="/quoter" role="link"><span>Quoter</span></a>'
    '<a href="/quoter/status/1890016000000000003"><time datetime="2026-03-02T15:00:00.000Z">1h</time></a></div>'
    '<div data-testid="tweetText" lang="en" dir="auto"><span>Same soup, my photo.</span></div>' + PHOTO.format(OWN)
    + '<div role="link" tabindex="0"><div data-testid="User-Name"><span>Weekend Chef</span><span>@weekend_chef</span>'
    '<time datetime="2026-03-01T09:00:00.000Z">Mar 1</time></div>'
    '<div data-testid="tweetText" lang="en" dir="auto"><span>Soup.</span></div>' + PHOTO.format(QUOTED)
    + "</div></div></article></div></div>"
)

READ = """() => {
  const adapter = modlens.adapters.find((a) => a.name === "x");
  const obs = new modlens.CommentObserver(adapter, {});
  const rec = obs.extract(document.getElementById("quoting"), { page_key: adapter.pageKey(location) });
  return { key: rec.key, text: rec.text, media: rec.media, errors: obs.counts.errors, lastError: obs.lastError };
}"""


@requires("chromium")
def test_a_quoted_posts_photo_is_not_the_quoting_replys(playwright_instance):
    html = (FIXTURE / "page.html").read_text(encoding="utf-8")
    at = html.index('<div data-testid="cellInnerDiv"><div class="show-more">')
    html = html[:at] + REPLY + html[at:]
    browser = playwright_instance.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
    try:
        pg = browser.new_page()
        pg.route("**/*", lambda route: route.fulfill(body=html, content_type="text/html")
                 if route.request.url == URL else route.abort())
        pg.goto(URL, wait_until="load")
        for script in SCRIPTS:
            pg.add_script_tag(content=(EXT / script).read_text(encoding="utf-8"))
        got = pg.evaluate(READ)
    finally:
        browser.close()
    assert got["errors"] == 0, got["lastError"]
    assert (got["key"], got["text"]) == ("1890016000000000003", "Same soup, my photo.")
    assert got["media"] == [OWN]
