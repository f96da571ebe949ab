"""Every fixture in tests/fixtures/sites/ (and in MODLENS_EXTRA_FIXTURES folders) through the
real extension into the real daemon's study log: keys, texts, parents, page ids, author hashes;
then the lazy batch and, where given, the SPA navigation."""
from __future__ import annotations

import pytest

from .harness import load_fixtures, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]
FIXTURES = load_fixtures()


def _check(daemon, platform: str, expected: list[dict], page_key: str, timeout: float = 25) -> None:
    def arrived():
        got = daemon.comments(platform)
        return all(e["key"] in got for e in expected) and got

    try:
        got = wait_for(arrived, timeout, f"{len(expected)} comments of page {page_key}")
    except AssertionError:
        got = daemon.comments(platform)
        missing = [e["key"] for e in expected if e["key"] not in got]
        raise AssertionError(f"missing from the study log: {missing}") from None
    for e in expected:
        row = got[e["key"]]
        assert row["text"] == e["text"], e["key"]
        assert row["parent_key"] == e.get("parent_key"), e["key"]
        assert row["page_key"] == page_key, e["key"]
        assert (row["author_hash"] is not None) == bool(e.get("author")), e["key"]
        if row["author_hash"]:
            assert len(row["author_hash"]) == 64 and all(c in "0123456789abcdef" for c in row["author_hash"])


def _frame(page, prefix):
    if not prefix:
        return page.main_frame
    return wait_for(lambda: next((f for f in page.frames if f.url.startswith(prefix)), None), 10, f"frame {prefix}")


@pytest.mark.parametrize("folder,fixture,expected", FIXTURES, ids=[f[1]["name"] for f in FIXTURES])
def test_fixture_reaches_study_log(browser, daemon, folder, fixture, expected):
    browser.serve_fixture(folder, fixture)
    page = browser.context.new_page()
    try:
        page.goto(fixture["start_url"])
        _check(daemon, fixture["platform"], expected["before"], fixture["page_key"])
        # Nothing beyond the expected ones yet, except what the fixture keeps for later batches.
        lazy = fixture.get("lazy")
        if lazy and expected.get("after_lazy"):
            _frame(page, lazy.get("frame")).evaluate(lazy["call"])
            _check(daemon, fixture["platform"], expected["after_lazy"], fixture["page_key"])
        nav = fixture.get("navigate")
        if nav and expected.get("after_navigate"):
            _frame(page, nav.get("frame")).evaluate(nav["call"])
            _check(daemon, fixture["platform"], expected["after_navigate"], nav["page_key"])
        # the popup's view of this tab: the adapter claimed it and reports no errors
        st = browser.state()
        assert st["conn"] == "ready"
    finally:
        page.close()


def test_no_fixture_folder_is_empty():
    assert FIXTURES, "no fixtures found in tests/fixtures/sites"
    for folder, fixture, expected in FIXTURES:
        assert expected["before"], f"{folder.name}: expected.json lists no comments"
