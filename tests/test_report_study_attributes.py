"""The human section judges each rating on its own study's attributes.

A study log holds the study of every command that wrote to it: `modlens audit` registers its
(default) study before any rater comes, then `modlens serve --config study.toml` registers the
served study with the attributes it asks (here one the paper does not have, and toxicity on the
paper's scale). The report read the attributes of the log's first study only, so the served
study's own attribute was in no table, its ratings counted as "used" while used nowhere."""
from __future__ import annotations

import html

from modlens.analysis.report import render_html, report_from_db
from modlens.config import DEFAULT_ATTRIBUTES, AttributeConfig, StudyConfig
from modlens.studylog.store import StudyLog

SARCASM = AttributeConfig(name="sarcasm", label="Sarcasm", definition="Says the opposite of what it means.",
                          levels=["not sarcastic", "somewhat sarcastic", "sarcastic"])
RATERS = {"a": ["sarcastic", "not sarcastic", "sarcastic", "somewhat sarcastic"],
          "b": ["sarcastic", "not sarcastic", "somewhat sarcastic", "somewhat sarcastic"]}
TOXIC = ["toxic", "not toxic", "hard to say", "not toxic"]


def _log(path):
    audit = StudyConfig()  # what `modlens audit` registers: the default study
    served = StudyConfig(study_id="pilot", toxicity_mode="direct", anchors=[],
                         attributes=[*(a for a in DEFAULT_ATTRIBUTES if a.name == "toxicity"), SARCASM])
    with StudyLog(path) as log:
        log.ensure_study(audit.study_id, audit.title, audit.model_dump(mode="json"))
        log.ensure_study(served.study_id, served.title, served.model_dump(mode="json"))
        page = log.ensure_page("youtube", "v1", None, None)
        n = 0
        with log.transaction():
            ids = [log.add_comment("youtube", f"c{i}", page, f"comment {i}") for i in range(len(TOXIC))]
            for rater, sarcasm in RATERS.items():
                log.ensure_rater("pilot", rater, None)
                for cid, tox, sar in zip(ids, TOXIC, sarcasm):
                    n += 1
                    log.add_rating("pilot", rater, f"r{n}", None, cid, {"toxicity": tox, "sarcasm": sar}, None, tox,
                                   False, 1)
    return path


def test_the_served_studys_own_attribute_is_reported(tmp_path):
    report = report_from_db(_log(tmp_path / "study.sqlite"))
    human = report["sections"]["human"]
    by_name = {a["name"]: a for a in human["attributes"]}
    assert set(by_name) == {"toxicity", "sarcasm"}  # the audit's default attributes were rated by no one
    sarcasm = by_name["sarcasm"]
    assert sarcasm["levels"] == SARCASM.levels
    assert sarcasm["n_comments"] == len(TOXIC) and sarcasm["n_ratings"] == 2 * len(TOXIC)
    assert sarcasm["distribution"] == {"not sarcastic": 2, "somewhat sarcastic": 3, "sarcastic": 3}
    assert "sarcasm" in render_html(report)


def test_ratings_of_two_studies_are_said_to_be_pooled(tmp_path):
    """A pilot and the main study served into one log: every figure pools their ratings, and the
    section says which studies and how many ratings each, where it said only 'N ratings by M raters'."""
    path = _log(tmp_path / "study.sqlite")
    main_study = StudyConfig(study_id="main", toxicity_mode="direct", anchors=[])
    with StudyLog(path) as log:
        log.ensure_study(main_study.study_id, main_study.title, main_study.model_dump(mode="json"))
        (cid,) = [r["comment_id"] for r in log.query("SELECT comment_id FROM comments WHERE comment_key = 'c0'")]
        log.ensure_rater("main", "c", None)
        log.add_rating("main", "c", "m1", None, cid, {"toxicity": "toxic"}, None, "toxic", False, 1)
    report = report_from_db(path)
    human = report["sections"]["human"]
    assert human["studies"] == {"main": 1, "pilot": 2 * len(TOXIC)}
    assert human["n_ratings"] == sum(human["studies"].values())
    page = render_html(report)
    assert "Ratings of 2 studies, pooled" in page and "main (1 ratings), pilot (8 ratings)" in page


def test_ratings_of_one_study_say_nothing_of_pooling(tmp_path):
    report = report_from_db(_log(tmp_path / "study.sqlite"))
    assert report["sections"]["human"]["studies"] == {"pilot": 2 * len(TOXIC)}
    assert "pooled" not in render_html(report)


def test_an_answer_on_another_studys_scale_is_counted_as_excluded(tmp_path):
    """Two rated studies ask sarcasm on different scales: the pilot's three levels are reported, and
    the main study's answers on its two were left out of every figure while the section said every
    rating 'used' and 'Excluded: none'. Each such answer is counted, by attribute and study."""
    path = _log(tmp_path / "study.sqlite")
    two_levels = AttributeConfig(name="sarcasm", label="Sarcasm", definition="Says the opposite of what it means.",
                                 levels=["not sarcastic", "sarcastic"])
    main_study = StudyConfig(study_id="main", toxicity_mode="direct", anchors=[],
                             attributes=[*(a for a in DEFAULT_ATTRIBUTES if a.name == "toxicity"), two_levels])
    with StudyLog(path) as log:
        log.ensure_study(main_study.study_id, main_study.title, main_study.model_dump(mode="json"))
        (cid,) = [r["comment_id"] for r in log.query("SELECT comment_id FROM comments WHERE comment_key = 'c1'")]
        log.ensure_rater("main", "c", None)
        log.add_rating("main", "c", "m1", None, cid, {"toxicity": "toxic", "sarcasm": "sarcastic"}, None, "toxic",
                       False, 1)
    report = report_from_db(path)
    human = report["sections"]["human"]
    by_name = {a["name"]: a for a in human["attributes"]}
    assert by_name["sarcasm"]["levels"] == SARCASM.levels
    # the pilot's 8 sarcasm answers only ("sarcastic" is on both scales, but not the same answer on each)
    assert by_name["sarcasm"]["n_ratings"] == 2 * len(TOXIC)
    assert by_name["toxicity"]["n_ratings"] == 2 * len(TOXIC) + 1  # the same scale in both: pooled
    reason = "sarcasm answered on study main's scale, not the reported one (that answer only)"
    assert human["excluded"] == {reason: 1}
    assert html.escape(reason) in render_html(report)
