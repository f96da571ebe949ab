"""Fixtures for the browser tests: one real daemon for the session, one Chromium per module."""
from __future__ import annotations

import pytest
from realtools import need

from .harness import FIXTURES, Browser, Daemon, fixture_grants, paired_browser, wait_for

BROWSERS_BEFORE = pytest.StashKey[int]()  # how many browsers had been opened when a test's body began

# Every test that uses `playwright_instance` (all the browser fixtures do) is marked `browser` by
# tests/conftest.py's collection hook: a `pytestmark` in a conftest marks nothing.


# Package scope: the sync Playwright loop must be gone before the asyncio tests outside e2e run.
@pytest.fixture(scope="package")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("daemon-home"))
    d.start()
    yield d
    d.stop()


@pytest.fixture(scope="package")
def playwright_instance():
    need("chromium")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        yield p


def make_browser(playwright_instance, tmp_path_factory, daemon, consent: bool = True, grant=None, timings=None) -> Browser:
    """A Chromium with the extension, paired; `grant` (default: the news-site fixtures' sites) are
    switched on as if the participant had enabled them from the popup; `timings`: shorter waits
    (harness.prepare_extension)."""
    return paired_browser(playwright_instance, tmp_path_factory.mktemp("browser"), daemon,
                          fixture_grants() if grant is None else grant, consent, timings)


@pytest.fixture(scope="module")
def browser(playwright_instance, tmp_path_factory, daemon):
    b = make_browser(playwright_instance, tmp_path_factory, daemon)
    yield b
    b.close()


@pytest.fixture(scope="module")
def yt_page(browser):
    """The YouTube watch fixture open in the module's browser, a marker on each of its 7 comments."""
    page, _ = browser.open_fixture(FIXTURES / "youtube-watch")
    page.locator("modlens-marker").first.wait_for(timeout=30000)
    wait_for(lambda: page.locator("modlens-marker").count() >= 7, 20, "a marker on each of the 7 comments")
    yield page
    page.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test carries the console of the module's browser and of each browser the
    test made itself (make_browser): what the worker and the pages logged."""
    outcome = yield
    rep = outcome.get_result()
    if call.when == "setup":  # reported after the fixtures were made: what opens from here is the test's own
        item.stash[BROWSERS_BEFORE] = len(Browser.opened)
    if not rep.failed:
        return
    own = Browser.opened[item.stash.get(BROWSERS_BEFORE, len(Browser.opened)):]
    for name, b in ([("browser", item.funcargs["browser"])] if "browser" in item.funcargs else []) + \
            [(f"browser {i + 1} the test made", b) for i, b in enumerate(own)]:
        rep.sections.append((f"{name}: console", "\n".join(b.console[-40:])))
