"""Every fixture in tests/fixtures/sites/ (and in MODLENS_EXTRA_FIXTURES folders) through the
real extension into the real daemon's study log: keys, texts, parents, page ids, author hashes;
then the lazy batch and, where given, the SPA navigation. Format: docs/FIXTURES.md."""
from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from .harness import load_fixtures, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]
FIXTURES = load_fixtures()


def _find(got: dict[str, dict], entry: dict) -> dict | None:
    if entry.get("key"):
        return got.get(entry["key"])
    # key-less sites (Viafoura, generic): the adapter derives the key; match by text
    return next((r for r in got.values() if r["text"] == entry["text"]), None)


def _check(daemon, platform: str, expected: list[dict], page_key: str, timeout: float = 25) -> None:
    def arrived():
        got = daemon.comments(platform)
        return all(_find(got, e) for e in expected) and got

    try:
        got = wait_for(arrived, timeout, f"{len(expected)} comments of page {page_key}")
    except AssertionError:
        got = daemon.comments(platform)
        missing = [e.get("key") or e["text"] for e in expected if not _find(got, e)]
        raise AssertionError(f"missing from the study log: {missing}\nlogged: {sorted(got)}") from None
    for e in expected:
        row = _find(got, e)
        label = e.get("key") or e["text"][:40]
        assert row["text"] == e["text"], label
        if e.get("parent_text"):
            parent = next((r for r in got.values() if r["text"] == e["parent_text"]), None)
            assert parent is not None and row["parent_key"] == parent["comment_key"], label
        else:
            assert row["parent_key"] == e.get("parent_key"), label
        assert row["page_key"] == page_key, label
        assert (row["author_hash"] is not None) == bool(e.get("author")), label
        if row["author_hash"]:
            assert len(row["author_hash"]) == 64 and all(c in "0123456789abcdef" for c in row["author_hash"])


def _frame(page, prefix):
    if not prefix:
        return page.main_frame
    return wait_for(lambda: next((f for f in page.frames if f.url.startswith(prefix)), None), 10, f"frame {prefix}")


@pytest.mark.parametrize("folder,fixture,expected", FIXTURES, ids=[f[1]["name"] for f in FIXTURES])
def test_fixture_reaches_study_log(browser, daemon, folder, fixture, expected):
    browser.serve_fixture(folder, fixture)
    if fixture.get("generic_selector"):
        sel = fixture["generic_selector"]
        browser.set_settings({"customSelectors": [{"host": urlsplit(fixture["start_url"]).hostname, "comment": sel["comment"],
                                                   "text": sel.get("text", ""), "author": sel.get("author", ""), "key": ""}]})
    page = browser.context.new_page()
    try:
        page.goto(fixture["start_url"])
        if expected.get("expect_status"):
            def status():
                pages = browser.state()["pages"]
                return next((p for p in pages if p.get("page") and p["page"]["page_key"] == fixture["page_key"]
                             and p["state"] == expected["expect_status"]), None)
            st = wait_for(status, 20, f"status {expected['expect_status']!r}", interval=1)
            assert st["adapter"] == fixture["adapter"] and st["found"] == 0 and st["errors"] == 0
        if expected["before"]:
            _check(daemon, fixture["platform"], expected["before"], fixture["page_key"])
        lazy = fixture.get("lazy")
        if lazy and expected.get("after_lazy"):
            _frame(page, lazy.get("frame")).evaluate(lazy["call"])
            _check(daemon, fixture["platform"], expected["after_lazy"], fixture["page_key"])
        nav = fixture.get("navigate")
        if nav and expected.get("after_navigate"):
            _frame(page, nav.get("frame")).evaluate(nav["call"])
            _check(daemon, fixture["platform"], expected["after_navigate"], nav["page_key"])
        logged = {r["text"] for r in daemon.comments(fixture["platform"]).values()}
        for text in expected.get("absent", []):
            assert text not in logged, f"must not be logged: {text!r}"
    finally:
        page.close()


def test_fixtures_found():
    assert FIXTURES, "no fixtures found in tests/fixtures/sites"
