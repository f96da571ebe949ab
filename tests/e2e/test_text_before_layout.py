"""A comment's text (extension/content/dom.js textOf) is the same whether or not Chromium has laid
the comment out when the extension reads it. innerText of an element with no layout box (inside a
display:none container or frame, detached) is its textContent, which puts nothing between blocks or
at <br>: the Facebook plugin's "rabbits.<br>September" was once logged as "rabbits.September".
Plain Chromium, no extension and no daemon: the content scripts' DOM helpers are loaded into the
fixture pages themselves; the same reads in Firefox ESR over WebDriver BiDi."""
from __future__ import annotations

import json
import uuid

import pytest

from .bidi import Firefox
from .harness import CHROMIUM, FIXTURES, REPO
from realtools import requires

pytestmark = [pytest.mark.browser]

HELPERS = [REPO / "extension" / "lib" / "ns.js", REPO / "extension" / "content" / "dom.js"]


@pytest.fixture(scope="module")
def page(playwright_instance):
    browser = playwright_instance.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
    pg = browser.new_page()
    # the fixture pages' images and scripts from other hosts: nothing leaves the machine
    pg.route("http*://**", lambda route: route.abort())
    yield pg
    browser.close()


def _open(pg, html: str) -> None:
    pg.set_content(html, wait_until="load")
    for script in HELPERS:
        pg.add_script_tag(content=script.read_text())


# The text of every `span._5mdd` (the adapter's text element) read four ways: laid out; with the
# comment list display:none; detached (no style at all); in a copy of the page in a display:none
# frame. Also innerText of the hidden one, to show the reads below are the ones that fell back.
READ_FOUR_WAYS = """() => {
  const texts = () => [...document.querySelectorAll("span._5mdd")];
  const rendered = texts().map((n) => modlens.textOf(n));
  const root = document.body.firstElementChild;
  root.style.display = "none";
  const hidden = texts().map((n) => modlens.textOf(n));
  const hiddenInnerText = texts().map((n) => n.innerText);
  root.style.display = "";
  const detached = texts().map((n) => modlens.textOf(n.cloneNode(true)));
  const frame = document.createElement("iframe");
  frame.style.display = "none";
  document.body.append(frame);
  frame.contentDocument.open();
  frame.contentDocument.write(document.documentElement.outerHTML);
  frame.contentDocument.close();
  const inFrame = [...frame.contentDocument.querySelectorAll("span._5mdd")].map((n) => modlens.textOf(n));
  frame.remove();
  return { rendered, hidden, hiddenInnerText, detached, inFrame };
}"""


FACEBOOK = FIXTURES / "facebook-plugin" / "frame.html"


def _check_four_ways(got: dict) -> None:
    expected = [e["text"] for e in json.loads((FIXTURES / "facebook-plugin" / "expected.json").read_text())["before"]]
    # the premise: hidden, innerText runs the two lines of Tom Hadley's reply together
    assert "Same with the rabbits.September will be kinder to them." in got["hiddenInnerText"]
    for way in ("rendered", "hidden", "detached", "inFrame"):
        assert got[way] == expected, way


def test_facebook_comment_text_read_before_layout_is_the_rendered_text(page):
    _open(page, FACEBOOK.read_text())
    _check_four_ways(page.evaluate(READ_FOUR_WAYS))


# Every element of every fixture page: textOf laid out, then with the whole document display:none
# (computed styles still answer, layout boxes are gone).
READ_HIDDEN = """() => {
  const els = [...document.body.querySelectorAll("*")].filter((el) => el.innerText !== undefined && el.textContent.trim());
  const rendered = els.map((el) => modlens.textOf(el));
  document.documentElement.style.display = "none";
  const wrong = [];
  els.forEach((el, i) => {
    const hidden = modlens.textOf(el);
    if (hidden !== rendered[i]) wrong.push(`${el.localName}.${el.className}: ${JSON.stringify(rendered[i])} laid out, ${JSON.stringify(hidden)} hidden`);
  });
  document.documentElement.style.display = "";
  return { count: els.length, wrong };
}"""


PAGES = sorted(FIXTURES.glob("*/*.html"))


def _check_hidden(read) -> None:
    """`read(html_file)`: READ_HIDDEN's answer on that page."""
    assert len(PAGES) >= 20
    wrong = []
    for html in PAGES:
        got = read(html)
        assert got["count"] > 0, html
        wrong += [f"{html.parent.name}/{html.name}: {w}" for w in got["wrong"]]
    assert not wrong, f"{len(wrong)} element(s) read otherwise when hidden:\n  " + "\n  ".join(wrong[:40])


def test_every_fixture_element_reads_the_same_hidden_as_laid_out(page):
    def read(html):
        _open(page, html.read_text())
        return page.evaluate(READ_HIDDEN)
    _check_hidden(read)


@requires("firefox-esr")
def test_firefox_reads_the_same_texts_before_layout(tmp_path):
    ff = Firefox(tmp_path / "ff-profile", str(uuid.uuid4()))
    helpers = "\n".join(script.read_text() for script in HELPERS)
    try:
        ff.send("session.new", {"capabilities": {}})
        ctx = ff.send("browsingContext.getTree", {})["contexts"][0]["context"]

        def read(html, js=READ_HIDDEN):
            # file:// pages: the fixtures' images on other hosts do not load (no network here)
            ff.send("browsingContext.navigate", {"context": ctx, "url": html.resolve().as_uri(), "wait": "complete"})
            ff.evaluate(ctx, helpers + "\n;0")
            return json.loads(ff.evaluate(ctx, f"JSON.stringify(({js})())"))

        _check_four_ways(read(FACEBOOK, READ_FOUR_WAYS))
        _check_hidden(read)
    finally:
        ff.close()
