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


def _mismatches(got: dict[str, dict], expected: list[dict], page_key: str) -> list[str]:
    """Every wrong field of every expected comment (not only the first), one line each."""
    wrong = []
    for e in expected:
        row = _find(got, e)
        label = e.get("key") or repr(e["text"][:40])
        if row is None:
            wrong.append(f"{label}: missing from the study log")
            continue
        if row["text"] != e["text"]:
            wrong.append(f"{label}: text {row['text']!r}, expected {e['text']!r}")
        if e.get("parent_text"):
            parent = next((r for r in got.values() if r["text"] == e["parent_text"]), None)
            want = parent["comment_key"] if parent else f"<the key of {e['parent_text'][:30]!r}, not logged>"
            if parent is None or row["parent_key"] != want:
                wrong.append(f"{label}: parent_key {row['parent_key']!r}, expected {want!r}")
        elif row["parent_key"] != e.get("parent_key"):
            wrong.append(f"{label}: parent_key {row['parent_key']!r}, expected {e.get('parent_key')!r}")
        if "parent_via" in e and row.get("parent_via") != e["parent_via"]:
            wrong.append(f"{label}: parent_via {row.get('parent_via')!r}, expected {e['parent_via']!r}")
        if row["page_key"] != page_key:
            wrong.append(f"{label}: page_key {row['page_key']!r}, expected {page_key!r}")
        if (row["author_hash"] is not None) != bool(e.get("author")):
            wrong.append(f"{label}: author hash {'logged' if row['author_hash'] else 'missing'}, expected "
                         f"{'one' if e.get('author') else 'none'}")
        elif row["author_hash"] and not (len(row["author_hash"]) == 64 and all(c in "0123456789abcdef" for c in row["author_hash"])):
            wrong.append(f"{label}: author hash {row['author_hash']!r} is not a SHA-256 hex digest")
    return wrong


def _check(daemon, platform: str, expected: list[dict], page_key: str, timeout: float = 25) -> None:
    """Wait until every expected comment is logged, then fail once with the full list of wrong fields."""
    def arrived():
        got = daemon.comments(platform)
        return all(_find(got, e) for e in expected) and got

    try:
        wait_for(arrived, timeout, f"{len(expected)} comments of page {page_key}")
    except AssertionError:
        pass  # reported below, with every other wrong field
    got = daemon.comments(platform)
    wrong = _mismatches(got, expected, page_key)
    if wrong:
        raise AssertionError(f"{len(wrong)} wrong field(s) on page {page_key}:\n  " + "\n  ".join(wrong)
                             + f"\nlogged keys: {sorted(got)}")


def _check_field_counts(browser, fixture, entries: list[dict]) -> None:
    """The page status counts every field no strategy of the adapter found (content/observer.js
    `missing`): here exactly the comments expected without an author, and no key, text or parent."""
    want = {"key": 0, "text": 0, "author": sum(not e["author"] for e in entries), "parent": 0}

    def status():
        for p in browser.state()["pages"]:
            if p.get("page") and p["page"]["page_key"] == fixture["page_key"] and p.get("found") == len(entries):
                return p
        return None

    st = wait_for(status, 15, f"the page status of {fixture['page_key']} with {len(entries)} comments found", interval=0.5)
    got = {k: (st.get("missing") or {}).get(k) for k in want}
    assert got == want, f"per-field not-found counts {got}, expected {want} (status: {st})"
    assert sum(st.get("parents", {}).values()) == len(entries), st
    # the popup shows the same counts (all observed frames: only this fixture's page is open)
    popup = browser.context.new_page()
    try:
        popup.goto(browser.ext_url("popup.html") + "?page=" + fixture["start_url"])
        line = popup.locator("#fields")
        text = wait_for(lambda: line.is_visible() and line.inner_text(), 10, "the per-field line in the popup")
        assert (f"author {want['author']}" in text) == bool(want["author"]) and "parent of a reply" not in text, text
        assert "parents by:" in popup.locator("#parents").inner_text()
    finally:
        popup.close()


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
        if expected["before"]:
            _check_field_counts(browser, fixture, expected["before"] + expected.get("after_lazy", []))
        nav = fixture.get("navigate")
        if nav and expected.get("after_navigate"):
            _frame(page, nav.get("frame")).evaluate(nav["call"])
            _check(daemon, fixture["platform"], expected["after_navigate"], nav["page_key"])
        logged = {r["text"] for r in daemon.comments(fixture["platform"]).values()}
        wrongly = [t for t in expected.get("absent", []) if t in logged]
        assert not wrongly, f"must not be logged: {wrongly}"
    finally:
        page.close()


def test_fixtures_found():
    assert FIXTURES, "no fixtures found in tests/fixtures/sites"


def test_mismatches_lists_every_wrong_field():
    """The report is complete: three wrong fields of two comments, plus a missing one, all named."""
    got = {"k1": {"comment_key": "k1", "text": "one", "parent_key": "k9", "author_hash": None, "page_key": "p"},
           "k2": {"comment_key": "k2", "text": "two!", "parent_key": None, "author_hash": "a" * 64, "page_key": "q"}}
    expected = [{"key": "k1", "text": "one", "parent_key": None, "author": True},
                {"key": "k2", "text": "two", "parent_key": None, "author": True},
                {"key": "k3", "text": "three", "parent_key": None, "author": False}]
    wrong = _mismatches(got, expected, "p")
    assert wrong == ["k1: parent_key 'k9', expected None", "k1: author hash missing, expected one",
                     "k2: text 'two!', expected 'two'", "k2: page_key 'q', expected 'p'", "k3: missing from the study log"]
