"""The inline experience on the YouTube fixture, against the real daemon: markers appear for
the sampled comments, blind mode renders no score before the rating, the keyboard-accessible
panel writes ratings (Table-1 derivation, inconsistency flag, time spent), Escape closes it,
and scores mode shows the colour band with detector names."""
from __future__ import annotations

import json

import pytest

from .closed_shadow import Marker, markers
from .harness import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]
FIRST = "UgzH4kR9tLm2pQx7VbN4AaABAg"       # benign
RUDE = "UgxPq2Lm8Nv4Kc9Rt1Wz4AaABAg"        # "... is an idiooot ..."
THIRD = "UgyR7tBn3Xc5Vm1Kq8Lp4AaABAg"


def marker(page, key):
    return Marker(page, key)  # closed shadow root: reached through DevTools, clicked with trusted input


def ratings_for(daemon, key):
    return [r for r in daemon.ratings() if r["comment_key"] == key]


def test_blind_mode_renders_no_score_before_rating(yt_page):
    html = [m.html() for m in markers(yt_page)]
    assert len(html) >= 7
    for h in html:
        assert "band" not in h.replace(".band", "") and "profanity" not in h and "score\"" not in h
    # the marker sits right after the comment text, outside it: the logged text is unchanged
    assert yt_page.evaluate(f"document.querySelector('modlens-marker[data-modlens-key=\"{FIRST}\"]').previousElementSibling.id") == "content-text"


def test_keyboard_rating_with_anchors_is_logged_and_reveals_scores(yt_page, daemon):
    m = marker(yt_page, RUDE)
    m.locator("button.rate").focus()
    yt_page.keyboard.press("Enter")
    form = m.locator("form")
    form.wait_for()
    # focus starts on the first option of the first attribute; Space picks it, arrows move
    yt_page.keyboard.press("ArrowRight")  # formality: "formal"
    yt_page.keyboard.press("ArrowRight")  # "informal"
    assert m.locator('input[name="formality"][value="informal"]').is_checked()
    m.locator('input[name="respectfulness"][value="disrespectful"]').check()
    m.locator('input[name="stereotypes"][value="not present"]').check()
    m.locator('input[name="vs_hard"][value="more"]').check()
    m.locator('input[name="vs_extreme"][value="same"]').check()
    assert "Derived toxicity: toxic" in m.locator("output").inner_text()
    yt_page.wait_for_timeout(300)  # time spent must be measurable
    m.locator('button[type="submit"]').click()
    rows = wait_for(lambda: ratings_for(daemon, RUDE), 15, "the rating in the study log")
    assert len(rows) == 1
    r = rows[0]
    assert r["derived_toxicity"] == "toxic" and r["inconsistent"] == 0
    assert json.loads(r["values_json"]) == {"formality": "informal", "respectfulness": "disrespectful", "stereotypes": "not present"}
    assert json.loads(r["anchors_json"])["vs_hard"] == "more"
    assert r["time_spent_ms"] >= 300
    # now rated: the band with the detector's name appears
    band = m.locator(".band")
    band.wait_for(timeout=5000)
    assert "profanity-check" in band.get_attribute("title")
    assert "rated" in m.locator(".done").inner_text()


def test_inconsistent_answers_are_flagged(yt_page, daemon):
    m = marker(yt_page, FIRST)
    m.locator("button.rate").click()
    m.locator('input[name="formality"][value="formal"]').check()
    m.locator('input[name="respectfulness"][value="respectful"]').check()
    m.locator('input[name="stereotypes"][value="not present"]').check()
    # less toxic than "hard to say" but more toxic than the extreme (toxic) anchor: contradictory
    m.locator('input[name="vs_hard"][value="less"]').check()
    m.locator('input[name="vs_extreme"][value="more"]').check()
    assert "contradict" in m.locator("output.warn").inner_text()
    m.locator('button[type="submit"]').click()
    rows = wait_for(lambda: ratings_for(daemon, FIRST), 15, "the inconsistent rating")
    assert rows[0]["inconsistent"] == 1 and rows[0]["derived_toxicity"] is None


def test_incomplete_panel_is_not_sent_and_escape_closes(yt_page, daemon):
    m = marker(yt_page, THIRD)
    m.locator("button.rate").click()
    m.locator('button[type="submit"]').click()
    assert "Please answer" in m.locator(".msg").inner_text()
    yt_page.keyboard.press("Escape")
    assert m.locator("form").count() == 0
    assert m.locator("button.rate").evaluate("b => b.getRootNode().activeElement === b")
    yt_page.wait_for_timeout(500)
    assert ratings_for(daemon, THIRD) == []


def test_scores_mode_shows_band_before_rating(yt_page, browser):
    browser.set_settings({"display": "scores"})
    try:
        band = marker(yt_page, THIRD).locator(".band")
        band.wait_for(timeout=10000)
        assert "profanity-check" in band.get_attribute("title")
    finally:
        browser.set_settings({"display": "study"})
    wait_for(lambda: marker(yt_page, THIRD).locator(".band").count() == 0, 10, "blind mode back")
