"""What a marker says of a rating, against the real worker, content script and `modlens serve`: the
worker's reason when it did not take the rating, and the daemon's answer to it on a page that observes
no longer (its site switched off after the rating)."""
from __future__ import annotations

import pytest

from .closed_shadow import Marker
from .harness import own_daemon_and_browser, wait_for
from .pages import serve_youtube_page

pytestmark = [pytest.mark.browser]


def open_page_with_markers(browser, tmp_path, video_id: str, texts: list[str]) -> tuple[object, list[dict]]:
    url, items = serve_youtube_page(browser, tmp_path, video_id, texts)
    page = browser.context.new_page()
    page.goto(url)
    wait_for(lambda: page.locator("modlens-marker").count() >= len(texts), 30, "a marker on each comment")
    return page, items


def ratings_of(daemon, key: str) -> list[dict]:
    return [r for r in daemon.ratings() if r["comment_key"] == key]


def test_a_rating_refused_says_the_workers_reason(playwright_instance, tmp_path):
    """The panel said "the extension did not take this rating, or the page changed meanwhile" whatever
    the worker had answered: here it answered "consent needed" (consent withdrawn)."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, items = open_page_with_markers(browser, tmp_path, "Refused0001", ["a comment rated after a withdrawal"])
        options = browser.context.new_page()
        options.goto(browser.ext_url("options.html"))
        options.click("#withdraw-consent")
        options.locator("#accept-consent:not([disabled])").wait_for(timeout=10000)
        page.wait_for_timeout(1000)
        m = Marker(page, items[0]["key"])
        m.rate()
        wait_for(lambda: "consent needed" in (m.locator(".msg").inner_text() or ""), 10, "the panel to say why")
        assert "page changed" not in m.locator(".msg").inner_text()
        assert ratings_of(daemon, items[0]["key"]) == []


def test_a_marker_on_a_page_that_observes_no_longer_follows_rating_ok(playwright_instance, tmp_path):
    """The site switched off after a rating was queued: the page stopped observing, and its marker said
    "not saved yet" for good, though the daemon wrote the rating and said so (rating_ok)."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, items = open_page_with_markers(browser, tmp_path, "StoppedOk01", ["a comment rated with the daemon away"])
        key = items[0]["key"]
        m = Marker(page, key)
        daemon.stop()
        wait_for(lambda: browser.state()["conn"] != "ready", 15, "the worker to notice the daemon is gone")
        m.rate()
        m.locator(".pending").wait_for(timeout=10000)
        assert "not saved yet" in m.locator(".pending").inner_text()
        browser.set_settings({"sites": {"youtube": False}})
        wait_for(lambda: any(s.get("reason") == "site switched off" for s in browser.state()["pages"]), 15, "the page to stop observing")
        daemon.start()
        wait_for(lambda: ratings_of(daemon, key), 30, "the rating in the log")
        wait_for(lambda: m.locator(".pending").count() == 0, 10, "the marker to drop 'not saved yet'")
        assert "rated" in m.locator(".done").inner_text()
