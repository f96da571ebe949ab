"""The item-set section and the attacks' human check leave out answers given on another study's scale.

Two rated studies in one log may ask an attribute on different scales; the human section reports it
on the first study's levels and leaves the other study's answers out, counted. The item-set section
and the attacks' human check took any answer whose level's name is on the reported scale, so a "toxic"
on a two-level scale (toxic or not) was counted with the three-level study's "toxic"."""
from __future__ import annotations

import html

from modlens.analysis.report import render_html, report_from_db
from modlens.chunks import ItemSource, register_items
from modlens.config import DEFAULT_ATTRIBUTES, AttributeConfig, StudyConfig
from modlens.datasets.base import DatasetItem
from modlens.studylog.store import StudyLog

TWO_LEVELS = AttributeConfig(name="toxicity", label="Toxicity", definition="Rude or disrespectful.",
                             levels=["not toxic", "toxic"])
PILOT = StudyConfig(study_id="pilot", toxicity_mode="direct", anchors=[])
MAIN = StudyConfig(study_id="main", toxicity_mode="direct", anchors=[],
                   attributes=[TWO_LEVELS, *(a for a in DEFAULT_ATTRIBUTES if a.name != "toxicity")])
REASON = "toxicity answered on study main's scale, not the reported one (that answer only)"
ITEMS = [f"y{i}" for i in range(4)]
# the pilot's raters a and b split on y2 (toxic, not toxic): Table 13's tie rule makes it "hard to say",
# and a third "toxic" would make it toxic
TOXICITY = {"a": ["toxic", "not toxic", "toxic", "toxic"], "b": ["toxic", "not toxic", "not toxic", "toxic"]}


def _itemset_log(path):
    """Raters a and b of the pilot (three levels) and c of the main study (two) rate the same items,
    every task accepted."""
    with StudyLog(path) as log:
        for study in (PILOT, MAIN):
            log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        page = log.ensure_page("study", "pilot", None, PILOT.title)
        (gold,) = register_items(log, ItemSource("study", page, "study-config"),
                                 [DatasetItem("gold-insult", "gold text", {"role": "gold", "expected.toxicity": "toxic"})])
        yt = log.ensure_page("youtube", "v1", None, None)
        n, reviews = 0, []
        with log.transaction():
            ids = [log.add_comment("youtube", key, yt, f"comment {key}") for key in ITEMS]
            for study, rater in (("pilot", "a"), ("pilot", "b"), ("main", "c")):
                log.ensure_rater(study, rater, None)
                n += 1
                log.add_rating(study, rater, f"t:{n}", None, gold, {"toxicity": "toxic"}, None, "toxic", False, 1)
                for cid, tox in zip(ids, TOXICITY.get(rater, ["toxic"] * len(ITEMS))):
                    n += 1
                    log.add_rating(study, rater, f"t:{n}", None, cid, {"toxicity": tox, "formality": "informal"},
                                   None, tox, False, 1)
                reviews.append({"study_id": study, "rater_id": rater, "task": "t01", "source": "protocol",
                                "decision": "accept", "reason": "test", "n_items": 5, "missed": 0,
                                "inconsistent_gold": 0, "wrong_gold": 0, "inconsistent": 0,
                                "comment_ids": [gold, *ids]})
        log.put_rater_reviews(reviews)
    return path


def test_the_item_set_section_leaves_out_answers_on_another_scale_and_counts_them(tmp_path):
    report = report_from_db(_itemset_log(tmp_path / "study.sqlite"))
    assert report["sections"]["human"]["excluded"][REASON] == len(ITEMS)  # the human section already did
    itemset = report["sections"]["itemset"]
    by_name = {a["name"]: a for a in itemset["attributes"]}
    # the pilot's two raters only: c's "toxic" on a two-level scale is not the pilot's "toxic"
    assert (by_name["toxicity"]["n_raters"], by_name["toxicity"]["n_ratings"]) == (2, 2 * len(ITEMS))
    assert (by_name["formality"]["n_raters"], by_name["formality"]["n_ratings"]) == (3, 3 * len(ITEMS))  # one scale
    assert itemset["excluded"] == {REASON: len(ITEMS)}
    majority = {i["key"]: i["majority"]["toxicity"] for i in itemset["items"]}
    # a and b split on y2, decided by the tie rule; counted, c's "toxic" would have made it toxic
    assert majority["y2"] == "hard to say"
    y2 = next(i for i in itemset["items"] if i["key"] == "y2")
    assert (y2["used_ratings"], y2["accepted_raters"]) == (3, 3)  # c's rating is there, its toxicity answer not
    assert html.escape(f"{REASON}: {len(ITEMS)}") in render_html(report)


def _attack_log(path):
    """Two attack texts under review, rated by a pilot rater (three levels) and a main-study rater
    (two levels)."""
    with StudyLog(path) as log:
        for study in (PILOT, MAIN):
            log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        page = log.ensure_page("study", "review", None, None)
        with log.transaction():
            ids = [log.add_comment("study", f"attack-{i}", page, f"attack text {i}") for i in range(2)]
            for cid in ids:
                for name, value in (("role", "review"), ("attack.recipe", "textbugger"), ("attack.target", "det")):
                    log.add_label(cid, name, value, "study add-attacks")
            n = 0
            for study, rater, answers in (("pilot", "a", ["hard to say", "not toxic"]), ("main", "c", ["toxic", "toxic"])):
                log.ensure_rater(study, rater, None)
                for cid, tox in zip(ids, answers):
                    n += 1
                    log.add_rating(study, rater, f"r{n}", None, cid, {"toxicity": tox}, None, tox, False, 1)
    return path


def test_the_attacks_human_check_leaves_out_answers_on_another_scale_and_counts_them(tmp_path):
    report = report_from_db(_attack_log(tmp_path / "study.sqlite"))
    human = report["sections"]["attacks"]["human"]
    (row,) = human["rows"]
    assert (row["items"], row["rated"], row["ratings"]) == (2, 2, 2)  # the pilot's answers only
    assert row["share_ratings_toxic"] == 0.0 and row["share_ratings_hard_to_say"] == 0.5
    assert row["items_majority_toxic"] == 0
    assert human["excluded"] == {REASON: 2}
    assert html.escape(f"{REASON}: 2") in render_html(report)
