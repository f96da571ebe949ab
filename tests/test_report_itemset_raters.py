"""The item-set section's raters per attribute are the raters who gave that attribute a value.

A rating may answer some of the study's attributes only (the protocol asks for at least one,
`ratings.rating_problems`). The section counted, for each attribute, every rater of the comments
that attribute was rated on: a rater who answered toxicity alone was counted among formality's."""
from __future__ import annotations

from modlens.analysis.report import report_from_db
from modlens.chunks import ItemSource, register_items
from modlens.config import StudyConfig
from modlens.datasets.base import DatasetItem
from modlens.studylog.store import StudyLog

ITEMS = [f"y{i}" for i in range(4)]
TOXICITY = ["toxic", "not toxic", "hard to say", "toxic"]
FORMALITY = ["informal", "formal", "very informal", "informal"]
# a and b answer both attributes; c answers toxicity alone
ANSWERS = {"a": True, "b": True, "c": False}


def test_an_attribute_counts_only_the_raters_who_answered_it(tmp_path):
    path = tmp_path / "study.sqlite"
    study = StudyConfig(study_id="pilot", toxicity_mode="direct", anchors=[])
    n = 0
    with StudyLog(path) as log:
        log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        page = log.ensure_page("study", "pilot", None, study.title)
        (gold,) = register_items(log, ItemSource("study", page, "study-config"),
                                 [DatasetItem("gold-insult", "gold text", {"role": "gold", "expected.toxicity": "toxic"})])
        yt = log.ensure_page("youtube", "v1", None, None)
        with log.transaction():
            ids = [log.add_comment("youtube", key, yt, f"comment {key}") for key in ITEMS]
            for rater, both in ANSWERS.items():
                log.ensure_rater("pilot", rater, None)
                n += 1
                log.add_rating("pilot", rater, f"t:{n}", None, gold, {"toxicity": "toxic"}, None, "toxic", False, 1)
                for cid, tox, form in zip(ids, TOXICITY, FORMALITY):
                    n += 1
                    values = {"toxicity": tox, **({"formality": form} if both else {})}
                    log.add_rating("pilot", rater, f"t:{n}", None, cid, values, None, tox, False, 1)
        log.put_rater_reviews([{"study_id": "pilot", "rater_id": r, "task": "t01", "source": "protocol",
                                "decision": "accept", "reason": "test", "n_items": 5, "missed": 0,
                                "inconsistent_gold": 0, "wrong_gold": 0, "inconsistent": 0,
                                "comment_ids": [gold, *ids]} for r in ANSWERS])
    itemset = report_from_db(path)["sections"]["itemset"]
    by_name = {a["name"]: a for a in itemset["attributes"]}
    assert (by_name["toxicity"]["n_raters"], by_name["toxicity"]["n_ratings"]) == (3, 3 * len(ITEMS))
    assert (by_name["formality"]["n_raters"], by_name["formality"]["n_ratings"]) == (2, 2 * len(ITEMS))
