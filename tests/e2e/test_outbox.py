"""Delivery guarantees with the real daemon: consent first, pause, and the persistent outbox
surviving a daemon restart and a stopped service worker with nothing lost or duplicated."""
from __future__ import annotations

import pytest

from .conftest import make_browser
from .closed_shadow import Marker
from .harness import wait_for
from .pages import logged_keys, serve_youtube_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def held_back(browser, reason: str) -> list[dict]:
    """The YouTube pages whose content script reported to the worker that it runs but holds its comments
    back (`reason`): the page got as far as it can before sending anything."""
    return [s for s in browser.state()["pages"]
            if s.get("adapter") == "youtube" and s.get("state") == "inactive" and s.get("reason") == reason]


def wait_held_back(browser, reason: str, timeout: float, what: str) -> list[dict]:
    """held_back, waited for; a timeout names every page status the worker holds (what the page did say)."""
    try:
        return wait_for(lambda: held_back(browser, reason), timeout, what)
    except AssertionError as err:
        pages = [{k: s.get(k) for k in ("adapter", "state", "reason", "active")} for s in browser.state()["pages"]]
        raise AssertionError(f"{err}; the worker holds these page statuses: {pages}") from None


def test_nothing_is_sent_before_consent_nor_while_paused(playwright_instance, tmp_path_factory, tmp_path, daemon):
    b = make_browser(playwright_instance, tmp_path_factory, daemon, consent=False)
    try:
        url, items = serve_youtube_page(b, tmp_path, "ConsentT001", ["first comment before consent", "second one, also before consent"])
        page = b.context.new_page()
        page.goto(url)
        # the page's own answer that it waits for consent, not a fixed wait: after it, nothing is on its way
        wait_held_back(b, "consent needed", 30, "the page to report that it waits for consent")
        st = b.state()
        assert st["conn"] == "ready" and not st["consented"]
        assert [s["active"] for s in held_back(b, "consent needed")] == [False]
        assert logged_keys(daemon, items) == [] and st["totals"]["saved"] == 0 and st["totals"]["queued"] == 0
        b.consent()  # the open page starts observing as soon as consent is given
        wait_for(lambda: len(logged_keys(daemon, items)) == 2, 20, "comments after consent")
        rater = b.state()["settings"]["raterId"]
        rows = daemon.query("SELECT consent_at FROM raters WHERE rater_id = ?", (rater,))
        assert rows and rows[0]["consent_at"]

        b.set_settings({"paused": True})
        url2, items2 = serve_youtube_page(b, tmp_path, "PauseTst002", ["said while paused"])
        page2 = b.context.new_page()
        page2.goto(url2)
        wait_held_back(b, "paused", 30, "the new page to report that it is paused")
        assert logged_keys(daemon, items2) == [] and b.state()["totals"]["queued"] == 0
        b.set_settings({"paused": False})
        wait_for(lambda: logged_keys(daemon, items2), 20, "comment after un-pausing")
    finally:
        b.close()


def test_a_page_opened_before_the_daemon_answers_reports_what_holds_it_back_once_it_does(
        playwright_instance, tmp_path_factory, tmp_path, daemon):
    """A page that asked for its config before the worker's session existed held "not connected to the
    daemon yet" for good (the popup said so while the daemon was up): hello_ok tells open pages again."""
    daemon.stop()
    b = make_browser(playwright_instance, tmp_path_factory, daemon, consent=False)
    try:
        url, _ = serve_youtube_page(b, tmp_path, "BeforeHello", ["a comment on a page opened while the daemon is down"])
        page = b.context.new_page()
        page.goto(url)
        wait_held_back(b, "not connected to the daemon yet", 30, "the page to report it has no daemon")
        daemon.start()
        wait_held_back(b, "consent needed", 30, "the page to report that it now waits for consent")
    finally:
        b.close()
        if daemon.proc is None:
            daemon.start()


def test_outbox_survives_daemon_restart_and_stopped_worker(browser, daemon, tmp_path):
    url1, items1 = serve_youtube_page(browser, tmp_path, "OutboxT0001", ["this one gets rated offline", "a second comment"])
    page = browser.context.new_page()
    page.goto(url1)
    rate_key = items1[0]["key"]
    page.locator(f'modlens-marker[data-modlens-key="{rate_key}"]').wait_for(timeout=30000)  # scored: in the log
    m = Marker(page, rate_key)  # its closed shadow root, clicked with trusted input

    daemon.stop()
    try:
        wait_for(lambda: browser.state()["conn"] != "ready", 15, "the worker to notice the daemon is gone")
        # a rating and a new page's comments, both created while the daemon is down
        m.rate()
        url2, items2 = serve_youtube_page(browser, tmp_path, "OutboxT0002", [f"offline comment number {i}" for i in range(5)])
        page2 = browser.context.new_page()
        page2.goto(url2)
        wait_for(lambda: browser.state()["totals"]["queued"] >= 2, 15, "rating and comments in the outbox")
        # the browser stops the idle worker: its memory is gone, the outbox is in storage
        browser.stop_service_worker()
    finally:
        daemon.start()

    # any extension event wakes the worker (here: the popup asking for its state)
    wait_for(lambda: browser.state()["totals"]["queued"] == 0, 40, "the outbox to drain", interval=1)
    assert sorted(logged_keys(daemon, items2)) == sorted(it["key"] for it in items2)
    ratings = [r for r in daemon.ratings() if r["comment_key"] == rate_key]
    assert len(ratings) == 1 and ratings[0]["derived_toxicity"] == "not toxic"
    # re-delivery used the same ids: one row per client rating id, one comment row per key
    assert len({r["client_rating_id"] for r in daemon.ratings()}) == len(daemon.ratings())
    page.close()
    page2.close()


def test_page_status_survives_a_stopped_worker(browser, daemon, tmp_path):
    """Chromium stops an idle service worker and its memory goes with it. The popup of a page
    that found its comments before that must still show them: the page reports its status only
    when it changes, so a status kept in memory alone would be gone until the next comment."""
    url, items = serve_youtube_page(browser, tmp_path, "StatusT0001", ["a comment found before the worker stopped", "and another"])
    page = browser.context.new_page()
    try:
        page.goto(url)

        def reported():
            return next((p for p in browser.state()["pages"]
                         if p.get("page") and p["page"]["page_key"] == "StatusT0001" and p.get("found") == 2), None)

        before = wait_for(reported, 20, "the page status with 2 comments found")
        wait_for(lambda: len(logged_keys(daemon, items)) == 2, 20, "both comments logged")
        browser.stop_service_worker()
        after = wait_for(reported, 10, "the same page status after the worker restarted")
        assert (after["adapter"], after["missing"], after["parents"]) == (before["adapter"], before["missing"], before["parents"])
        # a tab closed while the worker is stopped wakes it; the saved status goes with the tab
        browser.stop_service_worker()
    finally:
        page.close()
    wait_for(lambda: not any(p.get("page") and p["page"]["page_key"] == "StatusT0001" for p in browser.state()["pages"]),
             10, "the closed tab's status to be gone")
