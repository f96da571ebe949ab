"""`modlens report --study ID`: one study's report from a log that holds several.

A pilot and the main study served into one log had every rating figure pooled (said on the page, with
no way to have one study's figures), and an attribute the two ask on different scales reported on the
first study's scale, the other's answers left out. With --study, only that study's ratings, task
reviews and imports are read: its figures, on its own scale, and the page says which study and how
many ratings of the others it leaves out."""
from __future__ import annotations

import json

from modlens.analysis.report import render_html, report_from_db
from modlens.cli import main
from modlens.config import DEFAULT_ATTRIBUTES, AttributeConfig, StudyConfig
from modlens.studylog.store import StudyLog

THREE = AttributeConfig(name="sarcasm", label="Sarcasm", definition="Says the opposite of what it means.",
                        levels=["not sarcastic", "somewhat sarcastic", "sarcastic"])
TWO = THREE.model_copy(update={"levels": ["not sarcastic", "sarcastic"]})
TOXICITY = [a for a in DEFAULT_ATTRIBUTES if a.name == "toxicity"]


def _log(path):
    """The pilot (sarcasm on three levels): raters a and b, 4 comments each; the main study (two
    levels): rater c, 2 comments; c also withdrew from the pilot, where they rated once."""
    with StudyLog(path) as log:
        for sid, sarcasm in (("pilot", THREE), ("main", TWO)):
            study = StudyConfig(study_id=sid, toxicity_mode="direct", anchors=[], attributes=[*TOXICITY, sarcasm])
            log.ensure_study(sid, study.title, study.model_dump(mode="json"))
        page = log.ensure_page("youtube", "v1", None, None)
        n = 0
        with log.transaction():
            ids = [log.add_comment("youtube", f"c{i}", page, f"comment {i}") for i in range(4)]
            for sid, rater, answers in (("pilot", "a", ["sarcastic", "not sarcastic", "somewhat sarcastic", "sarcastic"]),
                                        ("pilot", "b", ["sarcastic", "not sarcastic", "sarcastic", "sarcastic"]),
                                        ("pilot", "c", ["sarcastic"]),
                                        ("main", "c", ["sarcastic", "not sarcastic"])):
                log.ensure_rater(sid, rater, "2026-01-01T00:00:00Z", "I agree to take part.")
                for cid, sar in zip(ids, answers):
                    n += 1
                    log.add_rating(sid, rater, f"r{n}", None, cid, {"toxicity": "toxic", "sarcasm": sar}, None,
                                   "toxic", False, 1)
        log.withdraw_consent("pilot", "c", "2026-01-02T00:00:00Z")
    return path


def test_one_studys_report_reads_its_ratings_only_on_its_own_scale(tmp_path):
    path = _log(tmp_path / "study.sqlite")
    pooled = report_from_db(path)
    assert pooled["study"] is None and pooled["sections"]["human"]["studies"] == {"main": 2, "pilot": 8}
    assert pooled["withdrawn"]["ratings"] == 1

    main_only = report_from_db(path, study="main")
    human = main_only["sections"]["human"]
    assert human["studies"] == {"main": 2} and main_only["counts"]["ratings"] == 2
    sarcasm = {a["name"]: a for a in human["attributes"]}["sarcasm"]
    assert sarcasm["levels"] == TWO.levels and sarcasm["n_ratings"] == 2 and human["excluded"] == {}
    # the pilot's 9 rating rows, c's withdrawn one included: none is in this report
    assert main_only["study"] == {"study_id": "main", "other_studies_ratings": 9}
    assert main_only["withdrawn"] == {"raters": 0, "studies": 0, "ratings": 0, "agreed_again": 0, "still_withdrawn": 0}  # c withdrew from the pilot only
    page = render_html(main_only)
    assert "Study main only (--study): the 9 ratings of the log's other studies are in no count or figure" in page
    assert "pooled" not in page and "withdrew" not in page

    pilot = report_from_db(path, study="pilot")
    assert pilot["sections"]["human"]["studies"] == {"pilot": 8} and pilot["withdrawn"]["ratings"] == 1


def test_a_study_the_log_does_not_hold_is_refused_naming_those_it_does(tmp_path, capsys):
    path = _log(tmp_path / "study.sqlite")
    out = tmp_path / "r.json"
    assert main(["report", "--db", str(path), "--study", "nope", "--format", "json", "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "--study 'nope'" in err and "main" in err and "pilot" in err and not out.exists()
    assert main(["report", "--db", str(path), "--study", "main", "--format", "json", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["sections"]["human"]["studies"] == {"main": 2}


def test_a_study_without_ratings_is_not_said_to_be_a_log_without_ratings(tmp_path):
    path = _log(tmp_path / "study.sqlite")
    with StudyLog(path) as log:
        log.ensure_study("later", "a study not yet rated", StudyConfig(study_id="later").model_dump(mode="json"))
    report = report_from_db(path, study="later")
    assert report["counts"]["ratings"] == 0 and report["study"]["other_studies_ratings"] == 11
    reason = report["skipped"]["human"]
    assert reason.startswith("study later has no ratings in the log (its other studies have 11)")
    assert "no ratings in the log:" not in reason


def test_a_study_whose_raters_all_withdrew_is_not_said_to_be_the_whole_log(tmp_path):
    """Its every rating is of a rater who withdrew: the reason names the study and the ratings the
    log's other studies hold, never 'every rating in the log' (the log holds 11 more)."""
    path = _log(tmp_path / "study.sqlite")
    with StudyLog(path) as log:
        log.ensure_study("later", "a study", StudyConfig(study_id="later").model_dump(mode="json"))
        log.ensure_rater("later", "d", "2026-01-01T00:00:00Z", "I agree to take part.")
        (cid,) = [r["comment_id"] for r in log.query("SELECT comment_id FROM comments WHERE comment_key = 'c0'")]
        with log.transaction():
            log.add_rating("later", "d", "r-later", None, cid, {"toxicity": "toxic"}, None, "toxic", False, 1)
        log.withdraw_consent("later", "d", "2026-01-02T00:00:00Z")
    report = report_from_db(path, study="later")
    assert report["withdrawn"] == {"raters": 1, "studies": 1, "ratings": 1, "agreed_again": 0, "still_withdrawn": 1}
    assert report["study"]["other_studies_ratings"] == 11
    for key in ("human", "overlap", "people"):
        reason = report["skipped"][key]
        assert "every rating in the log" not in reason, (key, reason)
        assert reason.startswith("every rating of study later (1 rating; its other studies have 11) is of a rater "
                                 "who withdrew consent"), (key, reason)
