"""Least-privilege host access in Chromium: the built-in platforms run with no grant; a news site
runs the content scripts only while its origin is granted, and the worker keeps its registered
content script in step with the grants (permissions.getAll at start, onAdded / onRemoved after).

Headless Chromium cannot show the permission prompt of the popup's "Enable modlens on this site",
so the site is granted at install (harness `grant`), then withheld and granted again through
chrome://extensions' own site-access controls (developerPrivate), which fire the same permission
events as the popup. The popup's whole enable/disable flow runs for real in test_firefox.py."""
from __future__ import annotations

from urllib.parse import quote

import pytest

from .conftest import make_browser
from .harness import wait_for
from .pages import viafoura_page, youtube_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]
NEWS = "https://apnews.com/*"


@pytest.fixture(scope="module")
def browser(playwright_instance, tmp_path_factory, daemon):
    b = make_browser(playwright_instance, tmp_path_factory, daemon, grant=[NEWS])
    yield b
    b.close()


def registered_sites(browser) -> list[str]:
    page = browser.context.new_page()
    try:
        page.goto(browser.ext_url("popup.html"))
        return page.evaluate("chrome.scripting.getRegisteredContentScripts().then(s => s.flatMap(c => c.matches))")
    finally:
        page.close()


def site_access(browser, pattern: str, granted: bool) -> None:
    """What a participant does in chrome://extensions → modlens → Site access."""
    page = browser.context.new_page()
    try:
        page.goto("chrome://extensions")
        page.evaluate("([fn, id, p]) => chrome.developerPrivate[fn](id, p)",
                      ["addHostPermission" if granted else "removeHostPermission", browser.extension_id, pattern])
    finally:
        page.close()
    wait_for(lambda: registered_sites(browser) == ([pattern] if granted else []), 10,
             f"the registered content script to follow the {'grant' if granted else 'removal'}")


def open_article(browser, tmp_path, name: str):
    """A Viafoura article on apnews.com with comments never logged before; returns (page, texts)."""
    html, run = viafoura_page(f"access-{name}", [f"{name}: first comment", f"{name}: second comment"])
    path = tmp_path / f"{name}.html"
    path.write_text(html, encoding="utf-8")
    url = f"https://apnews.com/article/{name}-{run}"
    browser.routes[url] = path
    page = browser.context.new_page()
    page.goto(url)
    return page, [f"{name}: first comment ({run})", f"{name}: second comment ({run})"]


def logged(daemon, texts) -> list[str]:
    got = {r["text"] for r in daemon.comments("viafoura").values()}
    return [t for t in texts if t in got]


def viafoura_tabs(browser) -> set[int]:
    """The tabs whose Viafoura content script reported to the worker (one does as it starts)."""
    return {s["tabId"] for s in browser.state()["pages"] if s.get("adapter") == "viafoura"}


def youtube_logged(browser, daemon, tmp_path, video_id: str):
    """A YouTube page opened now, once its comment is in the log: a later page that went all the way
    through the content script, the worker and the daemon (the positive event the checks that a news page
    sent nothing wait for, instead of a fixed time)."""
    html, items = youtube_page(video_id, [f"youtube comment {video_id}"])
    (tmp_path / f"{video_id}.html").write_text(html, encoding="utf-8")
    browser.routes[f"https://www.youtube.com/watch?v={video_id}"] = tmp_path / f"{video_id}.html"
    page = browser.context.new_page()
    page.goto(f"https://www.youtube.com/watch?v={video_id}")
    wait_for(lambda: items[0]["key"] in daemon.comments("youtube"), 30, f"the YouTube comment of {video_id}")
    return page


def popup_for(browser, url: str):
    page = browser.context.new_page()
    page.goto(browser.ext_url(f"popup.html?page={quote(url, safe='')}"))
    page.locator("#site:not([hidden])").wait_for(timeout=5000)
    return page


def test_popup_offers_the_switch_only_where_it_applies(browser):
    yt = popup_for(browser, "https://www.youtube.com/watch?v=abc")
    assert "built in" in yt.locator("#site-note").inner_text() and yt.locator("#site-toggle").is_hidden()
    yt.close()
    granted = popup_for(browser, "https://apnews.com/article/x")
    assert granted.locator("#site-toggle").inner_text() == "Disable on this site"
    assert "runs on apnews.com" in granted.locator("#site-note").inner_text()
    granted.close()
    ext_page = browser.context.new_page()
    ext_page.goto(browser.ext_url("popup.html"))  # its own tab is an extension page: no switch
    # the popup shows the worker's state after it has decided on the site section (both wait on the same tab)
    wait_for(lambda: ext_page.locator("#conn").inner_text() != "…", 20, "the popup's connection state")
    assert ext_page.locator("#site").is_hidden()
    ext_page.close()

    other = popup_for(browser, "https://nypost.com/2026/03/02/news/story/")
    toggle = other.locator("#site-toggle")
    assert toggle.inner_text() == "Enable modlens on this site"
    assert "does not run on nypost.com" in other.locator("#site-note").inner_text()
    # Chromium opens its prompt (invisible when headless) and waits; a request made outside the
    # click's user gesture would be refused at once and the note would say so
    toggle.click()
    # later calls to the same permissions API, answered one after the other: a refusal of the request, made in
    # the click or after a few awaited calls there, would have come back before the last of them
    assert other.evaluate("""async () => {
        for (let i = 0; i < 5; i++) await chrome.permissions.contains({origins: ['https://nypost.com/*']});
        return chrome.permissions.contains({origins: ['https://nypost.com/*']});
    }""") is False
    assert other.locator("#site-note").inner_text() == "Asking the browser for access to nypost.com…"
    other.close()
    assert "https://nypost.com/*" not in registered_sites(browser)


def test_news_site_is_captured_only_while_granted(browser, daemon, tmp_path):
    # granted at install: found by the worker's start-up sync
    assert registered_sites(browser) == [NEWS]
    site_access(browser, NEWS, granted=False)
    before = viafoura_tabs(browser)
    news, texts = open_article(browser, tmp_path, "withheld")
    # meanwhile a built-in platform works with no grant at all; its page, opened after the article had
    # loaded, got all the way to the log: a content script on the article would have reported and sent by now
    yt = youtube_logged(browser, daemon, tmp_path, "AccessYt001")
    assert logged(daemon, texts) == [] and news.locator("modlens-marker").count() == 0
    assert viafoura_tabs(browser) <= before  # no script ran on the article
    yt.close()

    # switched on: the open article is picked up without a reload, a new one by the registered script
    site_access(browser, NEWS, granted=True)
    wait_for(lambda: logged(daemon, texts) == texts, 20, "the open article's comments after the grant")
    news.close()
    news, texts = open_article(browser, tmp_path, "granted")
    wait_for(lambda: logged(daemon, texts) == texts, 20, "a new article's comments")
    news.close()

    # switched off again: the next page load runs nothing
    site_access(browser, NEWS, granted=False)
    before = viafoura_tabs(browser)
    news, texts = open_article(browser, tmp_path, "revoked")
    youtube_logged(browser, daemon, tmp_path, "AccessYt002").close()
    assert logged(daemon, texts) == [] and news.locator("modlens-marker").count() == 0
    assert viafoura_tabs(browser) <= before
    news.close()
