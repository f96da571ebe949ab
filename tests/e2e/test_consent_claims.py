"""What the consent text says is recorded, against what a real run records: the x-thread fixture
through the real extension into a real `modlens serve` with the default consent text. Comment
authors reach the log as salted hashes only, but the page row keeps the address and the title the
site shows, which on X name the opened post's author (its handle and display name): the consent
text the participant agreed to must say so."""
from __future__ import annotations

import json
import re

import pytest

from modlens.config import StudyConfig
from modlens.study import templates

from .harness import FIXTURES, Browser, Daemon, load_fixtures, prepare_extension, wait_for

pytestmark = [pytest.mark.browser]

FOLDER = FIXTURES / "x-thread"


def handles() -> set[str]:
    """Every author handle the fixture page shows (the links of its posts' User-Name blocks)."""
    return set(re.findall(r'href="/([A-Za-z0-9_]+)"', (FOLDER / "page.html").read_text(encoding="utf-8")))


def test_the_consent_text_says_what_the_log_keeps_of_authors_and_pages(playwright_instance, tmp_path):
    daemon = Daemon(tmp_path / "home")  # the harness's study: no consent_text, so the default one
    daemon.start()
    browser = None
    try:
        browser = Browser(playwright_instance, tmp_path / "profile", prepare_extension(tmp_path / "ext", daemon))
        browser.consent()
        fixture = next(f for folder, f, _ in load_fixtures() if folder == FOLDER)
        browser.serve_fixture(FOLDER, fixture)
        page = browser.context.new_page()
        page.goto(fixture["start_url"])
        keys = {e["key"] for e in json.loads((FOLDER / "expected.json").read_text(encoding="utf-8"))["before"]}
        wait_for(lambda: keys <= set(daemon.comments("x")), 60, "the x-thread comments in the study log")
        options = browser.context.new_page()
        options.goto(browser.ext_url("options.html"))
        options.locator("#accept-consent:not([disabled]), #withdraw-consent:visible").first.wait_for(timeout=30000)
        agreed = options.locator("#consent-text").inner_text()
        options.close()
    finally:
        if browser:
            browser.close()
        daemon.stop()

    names = handles()
    assert "orbitalnews" in names
    # authors: hashed; no handle in any column of the comments or their labels (texts may quote @someone)
    cells = [str(v) for r in daemon.query("SELECT comment_key, parent_key, author_hash, time_shown FROM comments")
             for v in tuple(r) if v is not None]
    cells += [str(r["value"]) for r in daemon.query("SELECT value FROM labels")]
    assert not [c for c in cells for h in names if h.lower() in c.lower()]
    assert {r["author_hash"] is not None for r in daemon.query("SELECT author_hash FROM comments")} == {True}
    # pages: kept as the site shows them, the opened post's author with them
    [row] = daemon.query("SELECT url, title FROM pages WHERE platform = 'x'")
    assert "orbitalnews" in row["url"] and row["title"].startswith("Orbital News on X")
    # and the text the participant agreed to says both
    assert "address and title of each" in agreed and "may name the author" in agreed, agreed
    assert "Author names are hashed before" not in agreed, agreed
    # the default text is what this run showed; a study folder's consent.md says the same
    assert agreed.startswith(StudyConfig().consent_text)
    template = " ".join(templates.CONSENT_MD.split())
    assert "address and title of each" in template and "may name the author" in template, template


def test_a_consent_counts_for_the_text_agreed_to_not_for_a_changed_one(playwright_instance, tmp_path):
    """The participant agreed to a text saying every detector runs on this computer; the daemon comes
    back on the same study, whose text now says each comment is also sent to a remote scorer. The
    consent to the first text must not carry over: nothing is collected until the new one is agreed."""
    daemon = Daemon(tmp_path / "home")
    daemon.start()
    browser = None
    try:
        browser = Browser(playwright_instance, tmp_path / "profile", prepare_extension(tmp_path / "ext", daemon))
        browser.consent()
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
    finally:
        if browser:
            browser.close()
        daemon.stop()


def test_what_is_recorded_before_the_participant_agrees(playwright_instance, tmp_path):
    """The options page said 'Nothing is recorded until you agree.' while the daemon records, at the
    extension's first hello, the rater's pseudonymous id and a session (times, client version): the
    page must say what is recorded, and no comment may be."""
    daemon = Daemon(tmp_path / "home")
    daemon.start()
    browser = None
    try:
        browser = Browser(playwright_instance, tmp_path / "profile", prepare_extension(tmp_path / "ext", daemon))
        wait_for(lambda: (browser.state().get("study") or {}).get("consent_text"), 30, "the study from the daemon")
        fixture = next(f for folder, f, _ in load_fixtures() if folder == FOLDER)
        browser.serve_fixture(FOLDER, fixture)
        page = browser.context.new_page()
        page.goto(fixture["start_url"])
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
    finally:
        if browser:
            browser.close()
        daemon.stop()

    assert comments == 0  # nothing of the pages before consent
    # the real event: the hello before consent is recorded, the rater without a consent time
    assert {r["rater_id"] for r in sessions} == {rater} and [tuple(r) for r in raters] == [(rater, None)]
    for text in (said, said_tasks):
        assert "Nothing is recorded" not in text, text
        assert "No comment" in text and "rater id" in text, text
