"""Rating an item set in the extension, against the real `modlens serve`: the study's
folder (here the daemon's home, beside --config) holds itemset.json and assignment.json; the
daemon logs the set's comments at start and gives each rater one assignment slot at hello
(study/assignment.py). Two Chromium profiles (two raters) on the one daemon open itemset.html, get
the task's two distinct slots, and rate their comments, gold included, with the same panel as
inline rating; the ratings go through each worker's outbox into the one log. `modlens rate
--study` reviews both raters (Table 11: accepted), and the report's alpha per attribute equals the
`krippendorff` package's on what the two raters submitted."""
from __future__ import annotations

import json
import tomllib

import numpy as np
import pytest

from modlens.config import parse_study
from modlens.study.assignment import slot_of
from modlens.study import assignment, itemset

from .conftest import make_browser
from .harness import Daemon, modlens_in, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow]

STUDY = """
study_id = "e2e-itemset"
title = "modlens item-set study"
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
"""
ITEMS = [("youtube", "yt-1", "This video explains the tax rules better than my accountant."),
         ("youtube", "yt-2", "Nobody asked for your opinion, go away and stop posting."),
         ("x", "x-1", "What a clown, everything he says is a lie."),
         ("x", "x-2", "The train was late again this morning, third time this week.")]
ANCHORS = {"not toxic": ("less", "less"), "hard to say": ("same", "less"), "toxic": ("more", "same")}
TOX = ["not toxic", "hard to say", "toxic"]
RESPECT = ["respectful", "partially respectful", "slightly disrespectful", "disrespectful"]
GOLD = {"gold-kind": ("not toxic", "respectful"), "gold-insult": ("toxic", "disrespectful")}
# each rater's (toxicity, respectfulness) per item: they disagree on some, so alpha is informative
ANSWERS = [{"yt-1": ("not toxic", "respectful"), "yt-2": ("hard to say", "slightly disrespectful"),
            "x-1": ("toxic", "disrespectful"), "x-2": ("not toxic", "respectful")},
           {"yt-1": ("not toxic", "respectful"), "yt-2": ("toxic", "disrespectful"),
            "x-1": ("toxic", "slightly disrespectful"), "x-2": ("hard to say", "partially respectful")}]


def make_set() -> dict:
    items = [{"id": f"i{n:03d}", "platform": p, "comment_key": k, "text": t, "stratum": "all", "score": None}
             for n, (p, k, t) in enumerate(ITEMS, 1)]
    params = {"detector": None, "by": "label:e2e", "per_platform": 2, "platforms": ["x", "youtube"], "min_words": 3,
              "max_words": 60, "seed": 0, "log": "e2e", "counts": {}}
    return {"format": itemset.FORMAT, "format_version": itemset.FORMAT_VERSION, "sha256": itemset.checksum(params, items),
            "params": params, "items": items}


@pytest.fixture(scope="module")
def set_daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("itemset-home"), STUDY)
    data = make_set()
    itemset.write(data, d.home)
    plan = assignment.make(data, parse_study(tomllib.loads(STUDY)),
                           raters=2, items_per_task=4, gold_per_task=2, seed=0)
    assignment.write(plan, d.home)
    d.start()
    yield d
    d.stop()


def open_itemset(browser, expect_assignment: set[str]):
    """Open itemset.html from the task list; (the assignment id it shows, the page)."""
    page = browser.context.new_page()
    page.goto(browser.ext_url("tasks.html"))
    page.locator("#itemset").wait_for(state="visible", timeout=15000)
    assert page.locator("#itemset-progress").inner_text() == "The study's comments for you to rate: 0/6 done."
    page.click("#open-itemset")
    page.wait_for_url(browser.ext_url("itemset.html"))
    page.locator("#item-title").wait_for(timeout=10000)
    shown = page.locator("#assignment").inner_text()
    assigned = next(a for a in expect_assignment if f"Your assignment: {a} (task t01)" == shown)
    return assigned, page


def answer_page(page, answers: dict) -> list[str]:
    seen = []
    texts = {t: k for _, k, t in ITEMS} | {
        "Thank you, this explanation really helped me.": "gold-kind", "You are a stupid worthless idiot.": "gold-insult"}
    for n in range(6):
        assert page.locator("#item-title").inner_text() == f"Comment {n + 1} of 6"
        key = texts[page.locator("#item-text").inner_text()]
        seen.append(key)
        tox, respect = answers[key] if key in answers else GOLD[key]
        form = page.locator("#panel form")
        form.locator('input[name="formality"][value="formal"]').check()
        form.locator(f'input[name="respectfulness"][value="{respect}"]').check()
        form.locator('input[name="stereotypes"][value="not present"]').check()
        vs_hard, vs_extreme = ANCHORS[tox]
        form.locator(f'input[name="vs_hard"][value="{vs_hard}"]').check()
        form.locator(f'input[name="vs_extreme"][value="{vs_extreme}"]').check()
        assert f"Derived toxicity: {tox}" in form.locator("output").inner_text()
        assert form.locator(".band").count() == 0  # blind: no detector score on this page
        form.locator('button[type="submit"]').click()
        wait_for(lambda n=n: page.locator("#progress").inner_text() == f"item set: {n + 1}/6 done", 10,
                 "progress after an item-set rating")
    page.locator("#finished").wait_for(state="visible", timeout=5000)
    return seen


def test_two_profiles_rate_one_item_set_and_alpha_covers_both(playwright_instance, tmp_path_factory, set_daemon):
    d = set_daemon
    logged = d.comments("youtube") | d.comments("x")
    assert {k: r["text"] for k, r in logged.items()} == {k: t for _, k, t in ITEMS}  # registered at start
    plan_file = json.loads((d.home / "assignment.json").read_text())
    slots = {a["id"]: a["order"] for a in plan_file["assignments"]}
    assert set(slots) == {"t01-r1", "t01-r2"}

    raters, orders = [], []
    for who in range(2):
        b = make_browser(playwright_instance, tmp_path_factory, d, grant=[])
        try:
            raters.append(b.state()["settings"]["raterId"])
            assigned, page = open_itemset(b, set(slots) - {a for a, _ in orders})
            seen = answer_page(page, ANSWERS[who])
            # the page follows its slot's order (item refs -> keys)
            refs = {i["id"]: i["comment_key"] for i in make_set()["items"]}
            assert seen == [refs.get(r, r.removeprefix("gold:")) for r in slots[assigned]]
            orders.append((assigned, seen))
            wait_for(lambda b=b: b.state()["totals"]["queued"] == 0, 20, "the outbox to drain")
        finally:
            b.close()
    assert orders[0][0] != orders[1][0]  # one daemon: two raters, two distinct slots
    # the slot rule of study/assignment.py, from the log's raters in order of their first session
    plan = assignment.Plan.load(d.home, parse_study(tomllib.loads(STUDY)))
    ids = [a["id"] for a in plan_file["assignments"]]
    assert [ids[slot_of(raters, r, plan)] for r in raters] == [a for a, _ in orders]

    rows = wait_for(lambda: (lambda rs: rs if len(rs) == 12 else None)(d.ratings()), 20, "12 ratings in the log")
    assert {r["rater_id"] for r in rows} == set(raters)
    d.stop()
    out = modlens_in(d.home, "rate", "--db", str(d.db), "--study", str(d.home))
    assert "reviewed 2 rater tasks: 2 accept" in out, out
    report = json.loads(modlens_in(d.home, "report", "--db", str(d.db), "--format", "json"))
    section = report["sections"]["itemset"]
    assert {(r["rater_id"], r["decision"]) for r in section["acceptance"]} == {(r, "accept") for r in raters}
    assert all(i["ratings"] == 2 and i["accepted_raters"] == 2 for i in section["items"])

    import krippendorff

    keys = [k for _, k, _ in ITEMS]
    for attr, index, levels in (("toxicity", 0, TOX), ("respectfulness", 1, RESPECT)):
        data = np.array([[levels.index(ANSWERS[who][k][index]) for k in keys] for who in range(2)], dtype=float)
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
        got = next(x for x in section["attributes"] if x["name"] == attr)
        assert got["alpha"] == pytest.approx(expected, abs=1e-9), attr


def test_a_rater_who_rated_only_the_gold_comments_is_reviewed_on_their_task(playwright_instance, tmp_path_factory,
                                                                              set_daemon):
    """A participant who rates the item set's gold comments on itemset.html and skips every item
    worked on their task: the review ties their ratings to their slot (the rating ids name it, as a
    survey row's do) and judges the task, its items missed (Table 11: reject). Without the slot in
    the ids their gold ratings named no task and they were never reviewed."""
    d = set_daemon
    if d.proc is None or d.proc.poll() is not None:
        d.start()
    gold_texts = {"Thank you, this explanation really helped me.": "gold-kind",
                  "You are a stupid worthless idiot.": "gold-insult"}
    b = make_browser(playwright_instance, tmp_path_factory, d, grant=[])
    try:
        rater = b.state()["settings"]["raterId"]
        page = b.context.new_page()
        page.goto(b.ext_url("itemset.html"))
        page.locator("#item-title").wait_for(timeout=15000)
        assigned = page.locator("#assignment").inner_text().removeprefix("Your assignment: ").split(" ")[0]
        rated = 0
        for _ in range(20):  # items are skipped (Cancel) and come back after the others
            text = page.locator("#item-text").inner_text()
            form = page.locator("#panel form")
            if text not in gold_texts:
                form.locator('button:text-is("Cancel")').click()
                continue
            tox, respect = GOLD[gold_texts[text]]
            form.locator('input[name="formality"][value="formal"]').check()
            form.locator(f'input[name="respectfulness"][value="{respect}"]').check()
            form.locator('input[name="stereotypes"][value="not present"]').check()
            for name, value in zip(("vs_hard", "vs_extreme"), ANCHORS[tox]):
                form.locator(f'input[name="{name}"][value="{value}"]').check()
            form.locator('button[type="submit"]').click()
            rated += 1
            wait_for(lambda n=rated: page.locator("#progress").inner_text() == f"item set: {n}/6 done", 10, "progress")
            if rated == 2:
                break
        assert rated == 2
        wait_for(lambda: b.state()["totals"]["queued"] == 0, 20, "the outbox to drain")
    finally:
        b.close()
    mine = [r for r in d.ratings() if r["rater_id"] == rater]
    assert sorted(r["comment_key"] for r in mine) == ["gold-insult", "gold-kind"]
    assert all(r["client_rating_id"].startswith(f"{assigned}:") for r in mine), mine
    d.stop()
    modlens_in(d.home, "rate", "--db", str(d.db), "--study", str(d.home))
    review = d.query("SELECT task, source, decision, missed, wrong_gold FROM rater_reviews WHERE rater_id = ?", (rater,))
    assert [tuple(r) for r in review] == [("t01", "protocol", "reject", 4, 0)]
