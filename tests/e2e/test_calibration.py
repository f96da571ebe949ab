"""The calibration round against the real `modlens serve`: the popup shows "calibration: n/N
done" and opens calibration.html; the participant rates every gold comment with the same
keyboard-accessible panel as on web pages (Escape skips and the item comes back later); the
ratings go through the worker's outbox and land in the study log on the gold comments the
daemon logged at start (platform `study`)."""
from __future__ import annotations

import json

import pytest

from .conftest import make_browser
from .harness import Daemon, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]

STUDY = """
study_id = "e2e-cal"
title = "modlens calibration study"
display = "blind"

[[detectors]]
name = "profanity-check"

[perturbation]
enabled = false

[[gold]]
key = "gold-kind"
text = "Thank you, this explanation really helped me."
expected = { toxicity = "not toxic" }

[[gold]]
key = "gold-insult"
text = "You are a stupid worthless idiot."
expected = { toxicity = "toxic" }

[[gold]]
key = "gold-plain"
text = "The meeting moved to Thursday at noon."
expected = { toxicity = "not toxic" }
"""
# (vs the "hard to say" anchor, vs the extreme anchor) -> derived toxicity (Table 1)
ANSWERS = {"gold-kind": ("less", "less", "not toxic"), "gold-insult": ("more", "same", "toxic"),
           "gold-plain": ("less", "less", "not toxic")}


@pytest.fixture(scope="module")
def cal_daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("calibration-home"), STUDY)
    d.start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def cal_browser(playwright_instance, tmp_path_factory, cal_daemon):
    b = make_browser(playwright_instance, tmp_path_factory, cal_daemon)
    yield b
    b.close()


def popup_line(browser) -> str:
    page = browser.context.new_page()
    try:
        page.goto(browser.ext_url("popup.html"))
        line = page.locator("#calibration")
        line.wait_for(state="visible", timeout=10000)
        return line.inner_text()
    finally:
        page.close()


def test_participant_completes_calibration_and_ratings_land_in_the_log(cal_browser, cal_daemon):
    b, d = cal_browser, cal_daemon
    gold_rows = d.comments("study")
    assert {"gold-kind", "gold-insult", "gold-plain", "anchor-hard", "anchor-extreme"} <= set(gold_rows)
    assert {r["page_key"] for r in gold_rows.values()} == {"e2e-cal"}

    # the popup shows the progress and opens the calibration page
    popup = b.context.new_page()
    popup.goto(b.ext_url("popup.html"))
    popup.locator("#calibration").wait_for(state="visible", timeout=10000)
    assert popup.locator("#cal-progress").inner_text() == "calibration: 0/3 done"
    with b.context.expect_page() as opened:
        popup.click("#open-calibration")
    page = opened.value
    page.wait_for_load_state()
    assert page.url.endswith("/calibration.html")
    if not popup.is_closed():
        popup.close()

    title = page.locator("#item-title")
    title.wait_for(timeout=10000)
    assert title.inner_text() == "Comment 1 of 3"
    assert page.locator("#item-text").inner_text() == "Thank you, this explanation really helped me."
    # keyboard: focus starts in the panel's first radio group; Escape skips this comment for now
    assert page.evaluate("document.activeElement.shadowRoot.activeElement.name") == "formality"
    page.keyboard.press("Escape")
    wait_for(lambda: title.inner_text() == "Comment 2 of 3", 5, "the next comment after Escape")

    order = []
    for _ in range(3):
        key = next(k for k, t in [("gold-kind", "Thank you"), ("gold-insult", "stupid"), ("gold-plain", "meeting")]
                   if t in page.locator("#item-text").inner_text())
        order.append(key)
        form = page.locator("#panel form")
        assert page.evaluate("document.activeElement.shadowRoot.activeElement.name") == "formality"
        page.keyboard.press("ArrowRight")  # moves to and picks "formal"
        form.locator('input[name="respectfulness"][value="respectful"]').check()
        form.locator('input[name="stereotypes"][value="not present"]').check()
        vs_hard, vs_extreme, derived = ANSWERS[key]
        form.locator(f'input[name="vs_hard"][value="{vs_hard}"]').check()
        form.locator(f'input[name="vs_extreme"][value="{vs_extreme}"]').check()
        assert f"Derived toxicity: {derived}" in form.locator("output").inner_text()
        assert form.locator(".band").count() == 0  # gold is never shown with detector scores
        page.wait_for_timeout(150)
        form.locator('button[type="submit"]').focus()
        page.keyboard.press("Enter")
        wait_for(lambda: page.locator("#progress").inner_text() == f"calibration: {len(order)}/3 done", 10,
                 "progress after a calibration rating")
    assert order == ["gold-insult", "gold-plain", "gold-kind"]  # the skipped one came back last
    page.locator("#finished").wait_for(state="visible", timeout=5000)

    rater = b.state()["settings"]["raterId"]
    rows = wait_for(lambda: [r for r in d.ratings() if r["platform"] == "study"] if len(
        [r for r in d.ratings() if r["platform"] == "study"]) == 3 else None, 20, "3 calibration ratings in the log")
    assert {r["comment_key"]: r["derived_toxicity"] for r in rows} == {k: v[2] for k, v in ANSWERS.items()}
    for r in rows:
        assert r["rater_id"] == rater and r["inconsistent"] == 0 and r["time_spent_ms"] >= 150
        assert json.loads(r["values_json"]) == {"formality": "formal", "respectfulness": "respectful",
                                                "stereotypes": "not present"}
    wait_for(lambda: b.state()["totals"]["queued"] == 0, 10, "the outbox to drain")
    assert popup_line(b).startswith("calibration: 3/3 done")
    page.close()
