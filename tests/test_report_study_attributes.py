"""The human section judges each rating on its own study's attributes.

A study log holds the study of every command that wrote to it: `modlens audit` registers its
(default) study before any rater comes, then `modlens serve --config study.toml` registers the
served study with the attributes it asks (here one the paper does not have, and toxicity on the
paper's scale). The report read the attributes of the log's first study only, so the served
study's own attribute was in no table, its ratings counted as "used" while used nowhere."""
from __future__ import annotations

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
