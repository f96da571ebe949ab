"""What the consent text says is recorded, against what a real run records: the x-thread fixture
through the real extension into a real `modlens serve` with the default consent text. The text
says authors' handles and names are not in the log; on X the address bar and the tab title name the
opened post's author (`/<handle>/status/<id>`, `<name> on X: "…"`), so the page row the X adapter
sends must not carry them, and no other cell of the log may either."""
from __future__ import annotations

import json
import re
import sqlite3
from html import unescape
from pathlib import Path

import pytest

from modlens.config import StudyConfig
from modlens.study import templates

from .harness import FIXTURES, own_daemon_and_browser, wait_for

pytestmark = [pytest.mark.browser]

FOLDER = FIXTURES / "x-thread"


def people() -> set[str]:
    """Every author handle and display name the fixture page shows: its posts' User-Name blocks and
    the posts its script adds ({handle, name})."""
    html = (FOLDER / "page.html").read_text(encoding="utf-8")
    found = re.findall(r'<a href="/([A-Za-z0-9_]+)" role="link"><span>([^<]+)</span>', html)
    found += re.findall(r'handle: "([A-Za-z0-9_]+)", name: "([^"]+)"', html)
    return {unescape(w) for pair in found for w in pair}


def log_cells(db: Path) -> list[tuple[str, str, str]]:
    """(table, column, value) of every non-empty cell of every table of the study log."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = []
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            cur = con.execute(f'SELECT * FROM "{table}"')
            cols = [d[0] for d in cur.description]
            for row in cur:
                for col, v in zip(cols, row):
                    if v is not None and v != "":
                        out.append((table, col, v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)))
        return out
    finally:
        con.close()


def test_authors_handles_and_names_are_nowhere_in_the_log_as_the_consent_text_says(playwright_instance, tmp_path):
    # the harness's study: no consent_text, so the default one
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        page, fixture = browser.open_fixture(FOLDER)
        expected = json.loads((FOLDER / "expected.json").read_text(encoding="utf-8"))
        keys = {e["key"] for e in expected["before"]}
        wait_for(lambda: keys <= set(daemon.comments("x")), 60, "the x-thread comments in the study log")
        shown = (page.url, page.title())  # what X's address bar and tab show
        # opening another post in place (pushState; the title follows the new conversation)
        page.evaluate(fixture["navigate"]["call"])
        keys = {e["key"] for e in expected["after_navigate"]}
        wait_for(lambda: keys <= set(daemon.comments("x")), 60, "the comments of the post opened in place")
        options = browser.context.new_page()
        options.goto(browser.ext_url("options.html"))
        options.locator("#accept-consent:not([disabled]), #withdraw-consent:visible").first.wait_for(timeout=30000)
        agreed = options.locator("#consent-text").inner_text()
        options.close()

    names = people()
    assert {"orbitalnews", "Orbital News", "nightshift_nadia", "Nadia", "sparrowdev", "Sparrow Dev"} <= names
    assert "/orbitalnews/status/" in shown[0] and shown[1].startswith("Orbital News on X"), shown
    # no handle or display name in any cell of any table (none of this page's texts mentions one)
    cells = log_cells(daemon.db)
    assert any(t == "pages" for t, _, _ in cells) and any(t == "texts" for t, _, _ in cells)
    hits = [(t, c, v, n) for t, c, v in cells for n in names
            if re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", v, re.IGNORECASE)]
    assert not hits, hits
    # each opened post's page row: X's handle-free address and the post's text
    rows = [dict(r) for r in daemon.query("SELECT page_key, url, title FROM pages WHERE platform = 'x' ORDER BY page_id")]
    assert rows == [{"page_key": k, "url": f"https://x.com/i/status/{k}", "title": t} for k, t in [
        (fixture["page_key"], "City confirms the night bus routes will be cut from May. Full story in the replies."),
        (fixture["navigate"]["page_key"], "Hot take: most flaky tests are slow tests in disguise.")]], rows
    assert {r["author_hash"] is not None for r in daemon.query("SELECT author_hash FROM comments")} == {True}
    # and the text the participant agreed to says so: the default text, as the study folder's template
    assert agreed.startswith(StudyConfig().consent_text)
    said = "Authors' handles and names are not in the log"
    assert said in agreed and "on X, a post's address without the handle" in agreed, agreed
    assert said in " ".join(templates.CONSENT_MD.split())


def test_a_consent_counts_for_the_text_agreed_to_not_for_a_changed_one(playwright_instance, tmp_path):
    """The participant agreed to a text saying every detector runs on this computer; the daemon comes
    back on the same study, whose text now says each comment is also sent to a remote scorer. The
    consent to the first text must not carry over: nothing is collected until the new one is agreed."""
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, browser):
        first = browser.state()
        assert first["consented"] and "no comment is sent anywhere else" in first["study"]["consent_text"]

        daemon.stop()
        daemon.config.write_text(daemon.config.read_text(encoding="utf-8") + (
            '\n[[detectors]]\nname = "http"\nid = "remote-scorer"\n'
            'options = { url = "https://scorer.example.com/v1/score", score_path = "score" }\n'), encoding="utf-8")
        daemon.start()
        changed = wait_for(lambda: (st := browser.state()).get("study") and "scorer.example.com" in
                           st["study"]["consent_text"] and st, 30, "the worker to learn the study's new text")
        assert changed["study"]["study_id"] == first["study"]["study_id"]
        assert not changed["consented"], "the consent to the first text counted for the second"
        # agreeing to the new text (the options page shows it) counts again
        browser.consent()
        assert browser.state()["consented"]


def test_what_is_recorded_before_the_participant_agrees(playwright_instance, tmp_path):
    """The options page said 'Nothing is recorded until you agree.' while the daemon records, at the
    extension's first hello, the rater's pseudonymous id and a session (times, client version): the
    page must say what is recorded, and no comment may be."""
    with own_daemon_and_browser(playwright_instance, tmp_path, consent=False) as (daemon, browser):
        wait_for(lambda: (browser.state().get("study") or {}).get("consent_text"), 30, "the study from the daemon")
        page, _ = browser.open_fixture(FOLDER)
        page.wait_for_timeout(3000)  # the content script finds the page's comments and may offer them
        options = browser.context.new_page()
        options.goto(browser.ext_url("options.html"))
        options.locator("#accept-consent:not([disabled])").wait_for(timeout=30000)
        said = options.locator("#consent-state").inner_text()
        tasks = browser.context.new_page()
        tasks.goto(browser.ext_url("tasks.html"))
        tasks.locator("#consent-needed:visible").wait_for(timeout=10000)
        said_tasks = tasks.locator("#consent-needed").inner_text()
        rater = browser.state()["settings"]["raterId"]
        sessions = daemon.query("SELECT rater_id FROM sessions")
        raters = daemon.query("SELECT rater_id, consent_at FROM raters")
        comments = daemon.query("SELECT count(*) AS n FROM comments")[0]["n"]

    assert comments == 0  # nothing of the pages before consent
    # the real event: the hello before consent is recorded, the rater without a consent time
    assert {r["rater_id"] for r in sessions} == {rater} and [tuple(r) for r in raters] == [(rater, None)]
    for text in (said, said_tasks):
        assert "Nothing is recorded" not in text, text
        assert "No comment" in text and "rater id" in text, text
