"""Regenerate docs/screenshots/*.png (marker and rating panel on the YouTube and a news fixture)
against a real daemon: `python -m tests.e2e.screenshots`. Not a test: look at the images."""
from __future__ import annotations

import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from .closed_shadow import Marker
from .harness import FIXTURES, REPO, Browser, fixture_grants, own_daemon_and_browser

OUT = REPO / "docs" / "screenshots"


def open_fixture(b: Browser, name: str):
    page, _ = b.open_fixture(FIXTURES / name)
    page.set_viewport_size({"width": 1000, "height": 900})
    page.locator("modlens-marker").first.wait_for(timeout=30000)
    page.wait_for_timeout(800)
    return page


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp())
    # the news fixture's site switched on, as the participant would from the popup
    with sync_playwright() as p, own_daemon_and_browser(p, root, grant=fixture_grants()) as (_, b):
        page = open_fixture(b, "youtube-watch")
        comments = page.locator("ytd-comments")
        comments.scroll_into_view_if_needed()
        page.screenshot(path=str(OUT / "youtube-blind-markers.png"), clip=_clip(comments, 560))
        panel = Marker(page, nth=3)  # closed shadow root: reached through DevTools
        panel.locator("button.rate").click()
        panel.locator('input[name="vs_hard"][value="more"]').check()
        panel.locator('input[name="vs_extreme"][value="less"]').check()
        page.locator("modlens-marker").nth(3).scroll_into_view_if_needed()
        thread = page.locator("ytd-comment-thread-renderer").nth(1)
        page.screenshot(path=str(OUT / "youtube-rating-panel.png"), clip=_clip(thread, 620))
        page.close()
        b.set_settings({"display": "scores"})
        page = open_fixture(b, "coral")
        host = page.locator("#coral-shadow-container")
        host.scroll_into_view_if_needed()
        page.screenshot(path=str(OUT / "news-coral-scores.png"), clip=_clip(host, 600))
        marker = page.locator("modlens-marker").first
        Marker(page).locator("button.rate").click()
        marker.scroll_into_view_if_needed()
        page.screenshot(path=str(OUT / "news-coral-rating-panel.png"), clip=_clip(marker.locator("xpath=..").locator("xpath=.."), 680))
    print("\n".join(str(p) for p in sorted(OUT.glob("*.png"))))


def _clip(locator, height):
    box = locator.bounding_box()
    return {"x": max(0, box["x"] - 10), "y": max(0, box["y"] - 10), "width": min(980, box["width"] + 20), "height": height}


if __name__ == "__main__":
    main()
