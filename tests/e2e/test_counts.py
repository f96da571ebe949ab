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
