"""A page script on an enabled site must not rate in the participant's name:
it cannot reach the marker's controls or read its scores (closed shadow root), and even with the
controls in hand, its click(), requestSubmit() and `.checked` record nothing (trusted-event
checks). Only the participant's own input (Playwright's mouse and keyboard: trusted events)
opens the panel, picks answers and saves."""
from __future__ import annotations

import json

import pytest

from .closed_shadow import Marker
from .harness import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ATTACKED = "UgwJ9sDf6Gh2Kl4Zx8Cv4AaABAg"   # "Only a st*pid person ..."
PROBE = "UgzA1sD3fG5hJ7kL9qW2e4AaABAg"      # rated by the participant after the attack
FORGED = "UgzH4kR9tLm2pQx7VbN4AaABAg.A0xK3nB7pQe4rT9wZ1"  # a reply: controls driven by script
SCRIPT_PICKS = [("formality", "formal"), ("respectfulness", "disrespectful"), ("stereotypes", "present"),
                ("vs_hard", "more"), ("vs_extreme", "more")]
OWN_PICKS = [("formality", "informal"), ("respectfulness", "respectful"), ("stereotypes", "not present"),
             ("vs_hard", "less"), ("vs_extreme", "less")]

# What a hostile page can do: look for the marker's root, click and key at the marker, and, if it
# gets the root, open the panel, tick answers every way a script can and submit; read what it sees.
PAGE_SCRIPT = """async ([key, picks]) => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const m = document.querySelector(`modlens-marker[data-modlens-key="${key}"]`);
  const seen = [];
  const look = () => { const r = m.shadowRoot; seen.push(r ? r.innerHTML : "", m.innerHTML, m.textContent, document.body.innerText); };
  look();
  m.click();
  m.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, composed: true }));
  const root = m.shadowRoot;
  if (root) {
    for (const b of root.querySelectorAll("button")) b.click();
    await sleep(300);
    const form = root.querySelector("form");
    if (form) {
      for (const [name, value] of picks) {
        const input = form.querySelector(`input[name="${name}"][value="${value}"]`);
        input.click();
        input.checked = true;
        input.dispatchEvent(new Event("change", { bubbles: true }));
      }
      form.requestSubmit();
      form.querySelector('button[type="submit"]').click();
    }
  }
  await sleep(500);
  look();
  return seen;
}"""


def ratings_for(daemon, key):
    return [r for r in daemon.ratings() if r["comment_key"] == key]


def test_page_script_reads_no_score_and_records_no_rating(yt_page, browser, daemon):
    browser.set_settings({"display": "scores"})
    try:
        # scores mode: the marker shows the detector's score (to the participant)
        band = Marker(yt_page, ATTACKED).locator(".band")
        band.wait_for(timeout=10000)
        assert "profanity-check" in band.get_attribute("title")
        seen = yt_page.evaluate(PAGE_SCRIPT, [ATTACKED, SCRIPT_PICKS])
    finally:
        browser.set_settings({"display": "study"})
    leaks = [s for s in seen if "profanity-check" in s or 'class="score"' in s or "detector scores" in s]
    assert leaks == [], "a page script read the detector's scores"
    # the participant rates another comment afterwards over the same socket: once that rating is in
    # the log, anything the script had sent before it would be there too
    Marker(yt_page, PROBE).rate(OWN_PICKS)
    wait_for(lambda: ratings_for(daemon, PROBE), 15, "the participant's own rating in the study log")
    assert ratings_for(daemon, ATTACKED) == [], "a page script's rating was recorded"


def test_untrusted_events_on_the_controls_record_nothing(yt_page, daemon):
    """Even holding the controls (here through DevTools, standing in for any way a script could get
    them), synthetic events neither open the panel, nor pick answers, nor save."""
    m = Marker(yt_page, FORGED)
    m.locator("button.rate").evaluate("b => b.click()")
    yt_page.wait_for_timeout(300)
    assert m.locator("form").count() == 0, "a script's click opened the rating panel"

    m.locator("button.rate").click()  # the participant opens it
    m.locator("form").wait_for()
    for name, value in SCRIPT_PICKS:
        radio = m.locator(f'input[name="{name}"][value="{value}"]')
        assert radio.evaluate("i => { i.click(); return i.checked; }") is False, "a script's click ticked an answer"
        radio.evaluate("i => { i.checked = true; i.dispatchEvent(new Event('change', { bubbles: true })); }")
    m.locator("form").evaluate("f => f.requestSubmit()")
    m.locator('button[type="submit"]').evaluate("b => b.click()")
    yt_page.wait_for_timeout(300)
    assert m.locator("form").count() == 1, "a script submitted the panel"

    # the participant presses Save: the ticks a script set are not her answers
    m.locator('button[type="submit"]').click()
    assert "Please answer" in m.locator(".msg").inner_text()
    for name, value in OWN_PICKS:
        m.locator(f'input[name="{name}"][value="{value}"]').check()
    m.locator('button[type="submit"]').click()
    rows = wait_for(lambda: ratings_for(daemon, FORGED), 15, "the participant's rating in the study log")
    assert len(rows) == 1
    assert json.loads(rows[0]["values_json"]) == {"formality": "informal", "respectfulness": "respectful",
                                                  "stereotypes": "not present"}
    assert json.loads(rows[0]["anchors_json"]) == {"vs_hard": "less", "vs_extreme": "less"}
