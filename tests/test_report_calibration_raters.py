"""Gold comments are never data, and raters reviewed by `modlens rate` are counted.

The log is what a study served with `--config STUDY/study.toml` left before the one loader: a study
configuration recorded without its gold comments (calibration.toml unread), the gold comments
registered as `modlens rate` registers them (platform `study`, labels `role` = gold and
`expected.toxicity`), and every rater's task reviewed (`rater_reviews`). Alpha is checked against
the `krippendorff` package on the ratings built here, never against modlens's own alpha."""
from __future__ import annotations

import numpy as np
import pytest

from modlens.analysis.report import render_html, report_from_db
from modlens.chunks import ItemSource, register_items
from modlens.config import StudyConfig
from modlens.datasets.base import DatasetItem
from modlens.studylog.store import StudyLog

import krippendorff  # noqa: E402

TOX = ["not toxic", "hard to say", "toxic"]
ITEMS = [f"y{i}" for i in range(8)]
# rater -> toxicity per item; a and b mostly agree, c is the unused worker
ANSWERS = {
    "a": ["toxic", "toxic", "not toxic", "hard to say", "not toxic", "toxic", "hard to say", "not toxic"],
    "b": ["toxic", "hard to say", "not toxic", "toxic", "not toxic", "hard to say", "hard to say", "hard to say"],
    "c": ["not toxic"] * 8,
}
GOLD = {"gold-insult": "toxic", "gold-thanks": "not toxic"}   # every rater answers both as expected
DECISION = {"a": "accept", "b": "accept", "c": "accept_unused"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("calibration") / "study.sqlite"
    study = StudyConfig(study_id="pilot", toxicity_mode="direct", anchors=[])  # served without calibration.toml
    n = 0
    with StudyLog(path) as log:
        log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        page = log.ensure_page("study", "pilot", None, study.title)
        gold_ids = register_items(log, ItemSource("study", page, "study-config"),
                                  [DatasetItem(k, f"gold text {k}", {"role": "gold", "expected.toxicity": v})
                                   for k, v in GOLD.items()])
        yt = log.ensure_page("youtube", "v1", None, None)
        with log.transaction():
            item_ids = [log.add_comment("youtube", key, yt, f"comment {key}") for key in ITEMS]
            for rater, answers in ANSWERS.items():
                log.ensure_rater("pilot", rater, None)
                for cid, value in [*zip(gold_ids, GOLD.values()), *zip(item_ids, answers)]:
                    n += 1
                    log.add_rating("pilot", rater, f"t01:{n}", None, cid, {"toxicity": value}, None, value, False, 1)
        log.put_rater_reviews([{"study_id": "pilot", "rater_id": r, "task": "t01", "source": "protocol",
                                "decision": d, "reason": "test", "n_items": 10, "missed": 0, "inconsistent_gold": 0,
                                "wrong_gold": 0, "inconsistent": 0, "comment_ids": [*gold_ids, *item_ids]}
                               for r, d in DECISION.items()])
    return report_from_db(path)


def _alpha(raters: list[str], with_gold: bool) -> float:
    columns = [*([[v] * len(raters) for v in GOLD.values()] if with_gold else []),
               *[[ANSWERS[r][i] for r in raters] for i in range(len(ITEMS))]]
    data = np.array([[TOX.index(v) for v in col] for col in columns], float).T
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2]))


def test_gold_comments_are_left_out_of_alpha_when_the_study_recorded_none(report):
    human = report["sections"]["human"]
    tox = next(a for a in human["attributes"] if a["name"] == "toxicity")
    expected = _alpha(["a", "b"], with_gold=False)
    assert _alpha(["a", "b"], with_gold=True) != pytest.approx(expected, abs=1e-3)  # the test sees gold counted
    assert tox["alpha"] == pytest.approx(expected, abs=1e-9)
    assert tox["n_comments"] == len(ITEMS)
    assert human["excluded"]["gold comment (attention check)"] == 3 * len(GOLD)
    item = next(a for a in report["sections"]["itemset"]["attributes"] if a["name"] == "toxicity")
    assert item["alpha"] == pytest.approx(expected, abs=1e-9) and item["n_comments"] == len(ITEMS)
    assert report["sections"]["itemset"]["n_items"] == len(ITEMS)


def test_raters_reviewed_by_modlens_rate_are_counted(report):
    human = report["sections"]["human"]
    assert human["n_ratings"] == 3 * (len(ITEMS) + len(GOLD))
    assert human["n_raters"] == 3 and human["n_raters_used"] == 2
    by_rater = {r["rater_id"]: r for r in human["raters"]}
    assert by_rater["a"]["tasks"] == ["approve, use"] and by_rater["c"]["tasks"] == ["approve, don't use (warn)"]
    assert by_rater["c"]["excluded_rating_ids"] == len(ITEMS) + len(GOLD) and by_rater["a"]["n_gold"] == len(GOLD)
    itemset = report["sections"]["itemset"]
    assert itemset["n_raters"] == 3 and itemset["n_raters_accepted"] == 2
    page = render_html(report)
    assert "30 ratings by 3 raters; 16 used, by 2 raters." in page and "2 of 3 raters accepted" in page
