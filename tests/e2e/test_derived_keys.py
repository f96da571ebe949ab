"""Keys the extension makes for comments whose site gives them no id (Viafoura), in Chromium against
the real daemon: the key holds nothing of the author (docs/EXTENSION.md, "Keys for sites without
comment ids") and is the same after a reload, so the log keeps one row per comment. The key rule's
own cases run in extension/test/comment_keys.test.mjs."""
from __future__ import annotations

import pytest

from .conftest import make_browser
from .harness import wait_for
from .pages import viafoura_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def browser(playwright_instance, tmp_path_factory, daemon):
    b = make_browser(playwright_instance, tmp_path_factory, daemon, grant=["https://apnews.com/*"])
    yield b
    b.close()


def rows(daemon, run: str) -> list[dict]:
    """Every log row of this run's comments (not one per key: a second row of a comment counts)."""
    return [dict(r) for r in daemon.query(
        "SELECT c.comment_key, t.text FROM comments c JOIN texts t ON t.text_id = c.text_id "
        "WHERE c.platform = 'viafoura' AND t.text LIKE ?", (f"%({run})",))]


def test_a_reload_keeps_the_keys_and_the_key_holds_no_author(browser, daemon, tmp_path):
    texts = ["derived keys: first comment", "derived keys: second comment"]
    html, run = viafoura_page("derived-keys", texts)
    path = tmp_path / "article.html"
    path.write_text(html, encoding="utf-8")
    url = f"https://apnews.com/article/derived-keys-{run}"
    browser.routes[url] = path
    page = browser.context.new_page()
    page.goto(url)
    first = wait_for(lambda: (lambda r: r if len(r) == 2 else None)(rows(daemon, run)), 25, "the article's two comments")
    assert all(r["comment_key"].startswith("vf-") for r in first)

    # reloaded later: the relative label changed, both authors changed their display names (the
    # key is not made from them: still the same comments) and a new comment came; the new one in
    # the log is the sign the reloaded page's comments went through the worker and the daemon
    later, later_run = viafoura_page("derived-keys", [*texts, "derived keys: a later comment"])
    later = later.replace(later_run, run).replace(">1h<", ">2h<").replace(">reader", ">renamed reader")
    assert later.count("renamed reader") == 3
    path.write_text(later, encoding="utf-8")
    page.reload()
    after = wait_for(lambda: (lambda r: r if len(r) >= 3 else None)(rows(daemon, run)), 25, "the later comment")
    page.close()
    assert sorted((r["text"], r["comment_key"]) for r in after if "later" not in r["text"]) == \
        sorted((r["text"], r["comment_key"]) for r in first)
    assert len(after) == 3


def test_identical_comments_are_each_logged_and_marked(browser, daemon, tmp_path):
    # two readers post the same words in the same minute: one derived key for both, so the observer
    # numbers the second (docs/EXTENSION.md, "Keys for sites without comment ids"); each is a row
    # of its own and carries a marker of its own
    html, run = viafoura_page("derived-twins", ["twins: same words", "twins: same words", "twins: other words"])
    html = html.replace("2026-03-02T10:00:00Z", "2026-03-01T10:00:00Z")  # the second in the first's minute
    assert html.count("2026-03-01T10:00:00Z") == 2
    path = tmp_path / "twins.html"
    path.write_text(html, encoding="utf-8")
    url = f"https://apnews.com/article/derived-twins-{run}"
    browser.routes[url] = path
    page = browser.context.new_page()
    try:
        page.goto(url)
        got = wait_for(lambda: (lambda r: r if len(r) == 3 else None)(rows(daemon, run)), 25, "the article's three comments")
        same = sorted(r["comment_key"] for r in got if "same words" in r["text"])
        assert len(same) == 2 and same[1] == f"{same[0]}-2", same
        for key in same:
            page.locator(f'modlens-marker[data-modlens-key="{key}"]').wait_for(timeout=30000)
        assert page.locator("modlens-marker").count() == 3
    finally:
        page.close()
