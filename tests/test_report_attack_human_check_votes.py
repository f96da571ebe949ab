"""The attacks' human check counts one vote per rater and attack text, as the human section does.

It counted every rating row: a rater who rated an attack text twice (a reload, a second session; a
merged log keeps both) counted twice in "ratings", in the shares and in "items most raters call toxic",
and a rating with an inconsistent anchor pair (Table 1), which every other figure drops, counted too.
"""
from __future__ import annotations

import html

from modlens.analysis.report import render_html, report_from_db
from modlens.config import StudyConfig
from modlens.studylog.store import StudyLog


def _log(path):
    study = StudyConfig(study_id="pilot", toxicity_mode="direct", anchors=[])
    with StudyLog(path) as log:
        log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        page = log.ensure_page("study", "review", None, None)
        cid = log.add_comment("study", "attack-0", page, "attack text 0")
        for name, value in (("role", "review"), ("attack.recipe", "textbugger"), ("attack.target", "det")):
            log.add_label(cid, name, value, "study add-attacks")
        for rater in "abc":
            log.ensure_rater("pilot", rater, None)
        # a says toxic, then (a second session) not toxic; b not toxic; c toxic with inconsistent anchors
        for n, (rater, tox, inconsistent) in enumerate([("a", "toxic", False), ("a", "not toxic", False),
                                                        ("b", "not toxic", False), ("c", "toxic", True)]):
            log.add_rating("pilot", rater, f"r{n}", None, cid, {"toxicity": tox}, None, tox, inconsistent, 1)
    return path


def test_one_vote_per_rater_and_no_inconsistent_rating(tmp_path):
    report = report_from_db(_log(tmp_path / "study.sqlite"))
    human = report["sections"]["attacks"]["human"]
    (row,) = human["rows"]
    assert (row["items"], row["rated"], row["ratings"]) == (1, 1, 2)  # a's latest and b's
    assert row["share_ratings_toxic"] == 0.0 and row["items_majority_toxic"] == 0
    assert human["excluded"] == {"earlier rating of the same comment by the same rater": 1,
                                 "inconsistent anchor answers (Table 1)": 1}
    page = render_html(report)
    assert html.escape("earlier rating of the same comment by the same rater: 1") in page
