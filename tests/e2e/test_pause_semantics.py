""""Pause everything" against the real worker, content script and `modlens serve`: while paused nothing
new is collected or sent. The markers already on a page say paused and take no rating; what waits in the
outbox stays there until the participant goes on, then reaches the log. And a marker follows the daemon's
answer to its rating on a page that observes no longer (its site switched off after the rating)."""
from __future__ import annotations

import pytest

from .closed_shadow import Marker, said
from .harness import own_daemon_and_browser, wait_for
from .pages import logged_keys, open_page_with_markers, ratings_of, serve_youtube_page

pytestmark = [pytest.mark.browser]


def test_while_paused_the_markers_on_a_page_take_no_rating(playwright_instance, tmp_path):
    """Paused after its markers appeared, the page's Rate buttons stayed live and a rating saved there
    reached the log: "Pause everything" stopped only the collection of comments."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, items = open_page_with_markers(browser, tmp_path, "PauseMark01", ["a comment seen before the pause"])
        key = items[0]["key"]
        m = Marker(page, key)
        browser.set_settings({"paused": True})
        wait_for(lambda: "paused" in (said(lambda: m.locator(".pending").inner_text(timeout=500)) or ""), 10, "the marker to say paused")
        assert m.locator("button.rate").evaluate("el => el.disabled") is True
        # the participant's own click on it opens nothing. Its release reached the marker (counted by a
        # listener of the page's own): a click handler would have run in that same input event, and
        # Playwright's click returns once the page handled it, so no form now means none opens
        page.evaluate("""window.releasedOnMarker = 0; addEventListener('pointerup', (e) => {
            if (e.composedPath().some((n) => n.localName === 'modlens-marker')) window.releasedOnMarker += 1; }, true)""")
        m.locator("button.rate").click()
        wait_for(lambda: page.evaluate("window.releasedOnMarker") >= 1, 5, "the click to reach the marker")
        assert m.locator("form").count() == 0
        assert ratings_of(daemon, key) == []
        browser.set_settings({"paused": False})
        wait_for(lambda: said(lambda: m.locator("button.rate").evaluate("el => el.disabled", timeout=500)) is False, 15, "Rate again")
        page.wait_for_timeout(1000)  # the page observes again: its comments' scores come back first
        m.rate()
        wait_for(lambda: ratings_of(daemon, key), 20, "the rating in the log once the participant goes on")
        assert len(ratings_of(daemon, key)) == 1


def test_with_the_daemon_down_going_on_gives_the_markers_back_their_rate(playwright_instance, tmp_path):
    """Un-paused with the daemon down, every marker still said 'paused' with Rate disabled: the page's
    observer, started again, took the page it had been on for a new one and forgot every comment's
    scores, so nothing redrew the markers until those scores came back (never, with the daemon down)."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, items = open_page_with_markers(browser, tmp_path, "PauseDown01", ["a comment seen before the pause"])
        key = items[0]["key"]
        m = Marker(page, key)
        wait_for(lambda: said(lambda: m.locator("button.rate").evaluate("el => el.disabled", timeout=500)) is False, 15, "Rate live")
        browser.set_settings({"paused": True})
        wait_for(lambda: "paused" in (said(lambda: m.locator(".pending").inner_text(timeout=500)) or ""), 10, "the marker to say paused")
        daemon.stop()
        wait_for(lambda: browser.state()["conn"] != "ready", 30, "the worker to lose the daemon")
        browser.set_settings({"paused": False})
        wait_for(lambda: said(lambda: m.locator("button.rate").evaluate("el => el.disabled", timeout=500)) is False, 15, "Rate again")
        assert "paused" not in (said(lambda: m.locator(".pending").inner_text(timeout=500)) or "")


def test_an_entry_in_the_outbox_waits_while_paused_and_goes_once_the_participant_goes_on(playwright_instance, tmp_path):
    """Comments queued while the daemon was away went to the log as soon as it came back, pause or not."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        daemon.stop()
        wait_for(lambda: browser.state()["conn"] != "ready", 15, "the worker to notice the daemon is gone")
        url, items = serve_youtube_page(browser, tmp_path, "PauseQueue1", ["queued before the pause", "also queued before it"])
        page = browser.context.new_page()
        page.goto(url)
        wait_for(lambda: browser.state()["totals"]["queued"] >= 2, 20, "the comments in the outbox")
        browser.set_settings({"paused": True})
        # every frame the worker sends from now on, seen in the worker itself: its outbox is flushed in
        # the same step as it turns ready after hello_ok, so once the state says ready the frames it
        # would have sent while paused are among these, and this socket's hello proves the spy saw it
        worker = next(w for w in browser.context.service_workers if w.url.endswith("/background.js"))
        worker.evaluate("""() => { globalThis.framesSent = []; const send = WebSocket.prototype.send;
            WebSocket.prototype.send = function (data) { globalThis.framesSent.push(JSON.parse(data).type); return send.call(this, data); }; }""")
        daemon.start()
        wait_for(lambda: browser.state()["conn"] == "ready", 30, "the worker back on the daemon")
        sent = worker.evaluate("globalThis.framesSent")
        assert "hello" in sent and "comments" not in sent, sent
        assert browser.state()["totals"]["queued"] >= 2
        assert logged_keys(daemon, items) == []
        browser.set_settings({"paused": False})
        wait_for(lambda: sorted(logged_keys(daemon, items)) == sorted(it["key"] for it in items), 20, "the comments once un-paused")


def test_a_rating_refused_says_the_workers_reason(playwright_instance, tmp_path):
    """The panel said "the extension did not take this rating, or the page changed meanwhile" whatever
    the worker had answered: here it answered "consent needed" (consent withdrawn)."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, items = open_page_with_markers(browser, tmp_path, "Refused0001", ["a comment rated after a withdrawal"])
        browser.withdraw()
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
