"""What the popup's counts say, against what the real daemon did: a comment counts as saved once
the daemon acknowledged its row (comments_ok), not when the worker put it in its outbox; a
comment counts as scored only when a detector scored it; a rating the daemon refused for good
is not shown as rated."""
from __future__ import annotations

from urllib.parse import quote

import pytest

from .harness import wait_for
from .pages import youtube_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def serve_page(browser, tmp_path, video_id, texts):
    html, items = youtube_page(video_id, texts)
    path = tmp_path / f"{video_id}.html"
    path.write_text(html, encoding="utf-8")
    url = f"https://www.youtube.com/watch?v={video_id}"
    browser.routes[url] = path
    return url, items


def logged(daemon, items) -> list[str]:
    got = daemon.comments("youtube")
    return [it["key"] for it in items if it["key"] in got]


def popup_totals(browser, url) -> dict[str, str]:
    """The popup's "In total" table as it renders it: header -> number shown."""
    popup = browser.context.new_page()
    try:
        popup.goto(browser.ext_url(f"popup.html?page={quote(url, safe='')}"))
        table = popup.locator("section:has(h2:text-is('In total')) table")
        wait_for(lambda: all(c.strip() for c in table.locator("td").all_inner_texts()), 10, "the popup's totals")
        return dict(zip(table.locator("th").all_inner_texts(), table.locator("td").all_inner_texts()))
    finally:
        popup.close()


def test_comments_count_as_saved_when_the_daemon_acknowledged_them_not_when_queued(browser, daemon, tmp_path):
    before = browser.state()["totals"]
    daemon.stop()
    try:
        wait_for(lambda: browser.state()["conn"] != "ready", 15, "the worker to notice the daemon is gone")
        url, items = serve_page(browser, tmp_path, "CountsT0001", ["said while the daemon is down", "a second one", "a third"])
        page = browser.context.new_page()
        page.goto(url)
        # the page's comments are in the outbox: nothing of them reached the daemon
        wait_for(lambda: browser.state()["totals"]["queued"] > before["queued"], 20, "the page's comments in the outbox")
        shown = popup_totals(browser, url)
        assert logged(daemon, items) == []
        assert "sent" not in shown, f"the popup counts queued comments as sent: {shown}"
        assert int(shown["saved"]) == before.get("saved", 0), shown
        assert int(shown["queued"]) == before["queued"] + 3, shown
    finally:
        daemon.start()
    wait_for(lambda: browser.state()["totals"]["queued"] == before["queued"], 40, "the outbox to drain", interval=1)
    assert sorted(logged(daemon, items)) == sorted(it["key"] for it in items)
    after = browser.state()["totals"]
    assert after["saved"] - before.get("saved", 0) == 3
    assert int(popup_totals(browser, url)["saved"]) == after["saved"]
    page.close()


def page_counts(browser, video_id) -> dict | None:
    for p in browser.state()["pages"]:
        if p.get("page") and p["page"]["page_key"] == video_id:
            return p.get("counts")
    return None


def test_a_comment_no_detector_scored_is_not_counted_as_scored(browser, daemon, tmp_path):
    """A zero-width space is a text to the page and blank to the daemon (`not_scored`): it is logged,
    answered in `scores` with no detector's score, and must not be counted as scored."""
    before = browser.state()["totals"]
    url, items = serve_page(browser, tmp_path, "CountsT0002", ["a comment with words", "\u200b", "another comment with words"])
    page = browser.context.new_page()
    try:
        page.goto(url)
        wait_for(lambda: len(logged(daemon, items)) == 3, 20, "the page's 3 comments in the log")
        blank = daemon.comments("youtube")[items[1]["key"]]
        assert blank["text"] == "\u200b"
        # one `scores` message answers the page: once it counted anything, it counted everything
        counts = wait_for(lambda: (c := page_counts(browser, "CountsT0002")) and c["scored"] and c, 20, "the page's scores")
        assert counts["scored"] == 2, counts
        assert browser.state()["totals"]["scored"] - before["scored"] == 2
    finally:
        page.close()
