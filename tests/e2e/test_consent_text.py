"""A consent is to a text, in the real extension against the real `modlens serve`: hello names the
text agreed to (its SHA-256), the log records which text each consent was for, and what was queued
under an earlier text of the same study is not delivered once the participant agrees to the new one;
the popup says how many were discarded, and why."""
from __future__ import annotations

import hashlib

import pytest

from .harness import own_daemon_and_browser, wait_for
from .pages import logged_keys, serve_youtube_page
from .test_counts import popup_line

pytestmark = [pytest.mark.browser]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_comments_queued_under_an_earlier_consent_text_are_not_delivered_under_the_new_one(playwright_instance, tmp_path):
    with own_daemon_and_browser(playwright_instance, tmp_path) as (daemon, b):
        first = b.state()["study"]["consent_text"]
        rater = wait_for(lambda: daemon.query("SELECT rater_id FROM consents"), 20, "the first consent in the log")[0][0]

        daemon.stop()
        wait_for(lambda: b.state()["conn"] != "ready", 15, "the worker to notice the daemon is gone")
        url, items = serve_youtube_page(b, tmp_path, "ConsentT001", ["queued under the first text", "and a second one"])
        page = b.context.new_page()
        page.goto(url)
        wait_for(lambda: b.state()["totals"]["queued"] == 2, 20, "the page's comments in the outbox")
        page.close()

        # the same study comes back with a changed consent text: comments now also go to a remote scorer
        daemon.config.write_text(daemon.config.read_text(encoding="utf-8") + (
            '\n[[detectors]]\nname = "http"\nid = "remote-scorer"\n'
            'options = { url = "https://scorer.example.com/v1/score", score_path = "score" }\n'), encoding="utf-8")
        daemon.start()
        changed = wait_for(lambda: (st := b.state()).get("study") and "scorer.example.com" in st["study"]["consent_text"]
                           and st, 30, "the worker to learn the study's new text")
        assert not changed["consented"]
        second = changed["study"]["consent_text"]
        b.consent()
        dead = wait_for(lambda: [d for d in b.ask_worker({"type": "dead_letters"})
                                 if d["error"]["code"] == "consent_changed"], 30, "the queued comments set aside")
        assert {it["key"] for d in dead for it in d["message"]["items"]} == {it["key"] for it in items}
        assert b.state()["totals"]["queued"] == 0 and b.state()["totals"]["consent_discarded"] == 2
        assert popup_line(b, url, "consent-discarded") == "2 discarded: collected under an earlier consent text"
        # the new consent is recorded, for the new text; nothing collected under the first entered the log
        wait_for(lambda: len(daemon.query("SELECT 1 FROM consents")) == 2, 20, "the second consent in the log")
        assert logged_keys(daemon, items) == []
        consents = {tuple(r) for r in daemon.query("SELECT rater_id, consent_sha256 FROM consents")}
        assert consents == {(rater, sha(first)), (rater, sha(second))}
        texts = {r[0]: r[1] for r in daemon.query("SELECT consent_sha256, text FROM consent_texts")}
        assert texts == {sha(first): first, sha(second): second}
