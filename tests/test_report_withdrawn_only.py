"""A log whose every rating is of a rater who withdrew consent: the sections that read ratings say
so when they are left out, never that the log holds no ratings (it does, and the researcher must not
go looking for a lost merge or a broken extension)."""
from __future__ import annotations

from modlens.analysis.report import render_html, report_from_db
from modlens.config import StudyConfig
from modlens.studylog.store import StudyLog

AGREED, WITHDRAWN = "2025-03-01T10:00:00.000Z", "2025-03-02T10:00:00.000Z"


def _log(path, withdraw: tuple[str, ...]):
    study = StudyConfig(study_id="pilot", toxicity_mode="direct", anchors=[])
    with StudyLog(path) as log:
        log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        page = log.ensure_page("youtube", "v1", None, None)
        n = 0
        with log.transaction():
            ids = [log.add_comment("youtube", f"c{i}", page, f"comment {i}") for i in range(3)]
        for rater in ("r1", "r2"):
            log.ensure_rater("pilot", rater, AGREED, "You may withdraw at any time.")
            with log.transaction():
                for cid in ids:
                    n += 1
                    log.add_rating("pilot", rater, f"x{n}", None, cid, {"toxicity": "toxic"}, None, "toxic", False, 1)
        for rater in withdraw:
            assert log.withdraw_consent("pilot", rater, WITHDRAWN) == 1
    return path


def test_every_rater_withdrew_is_said_not_no_ratings(tmp_path):
    report = report_from_db(_log(tmp_path / "study.sqlite", ("r1", "r2")))
    assert report["withdrawn"] == {"raters": 2, "studies": 1, "ratings": 6, "agreed_again": 0, "still_withdrawn": 2} and report["counts"]["ratings"] == 0
    for key in ("human", "overlap", "people"):
        reason = report["skipped"][key]
        assert "no ratings in the log" not in reason, (key, reason)
        assert "(6 ratings) is of a rater who withdrew consent" in reason and "2 raters withdrew" in reason, (key, reason)
    assert "no ratings in the log" not in render_html(report)


def test_a_log_without_ratings_still_says_it_has_none(tmp_path):
    path = tmp_path / "empty.sqlite"
    with StudyLog(path) as log:
        log.ensure_page("youtube", "v1", None, None)
    report = report_from_db(path)
    assert report["skipped"]["human"].startswith("no ratings in the log")


def test_some_raters_withdrew_the_others_are_reported(tmp_path):
    report = report_from_db(_log(tmp_path / "study.sqlite", ("r1",)))
    human = report["sections"]["human"]
    assert human["n_ratings"] == 3 and human["n_raters"] == 1


def test_a_rater_who_withdrew_from_two_studies_is_one_rater(tmp_path):
    """The line counts raters, as it says: the same rater withdrawing from two studies of the log is one
    rater (two withdrawals), and they are left out of those studies alone, not of one they still consent to."""
    path = tmp_path / "study.sqlite"
    with StudyLog(path) as log:
        page = log.ensure_page("youtube", "v1", None, None)
        with log.transaction():
            cid = log.add_comment("youtube", "c0", page, "comment 0")
        for n, study_id in enumerate(("pilot", "second", "third")):
            study = StudyConfig(study_id=study_id, toxicity_mode="direct", anchors=[])
            log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
            log.ensure_rater(study_id, "r1", AGREED, "You may withdraw at any time.")
            with log.transaction():
                log.add_rating(study_id, "r1", f"x{n}", None, cid, {"toxicity": "toxic"}, None, "toxic", False, 1)
        for study_id in ("pilot", "second"):
            assert log.withdraw_consent(study_id, "r1", WITHDRAWN) == 1
    report = report_from_db(path)
    assert report["withdrawn"] == {"raters": 1, "studies": 2, "ratings": 2, "agreed_again": 0, "still_withdrawn": 1}
    assert report["counts"]["ratings"] == 1  # their rating in the study they still consent to
    assert ("1 rater who withdrew consent is left out of the 2 studies they withdrew from: their 2 ratings there "
            "are in no count or figure of this report") in render_html(report)


def test_a_rater_still_withdrawn_from_one_study_and_agreed_again_in_another_is_not_said_to_have_agreed_again(tmp_path):
    """One rater id spans the studies of an install: r1 withdrew from A and stays withdrawn there, and
    withdrew from B and agreed again there. The page must not say they agreed again (A's ratings are
    left out for good), nor that they are left out of B entirely (what they rated since counts)."""
    path = tmp_path / "s.sqlite"
    text = "You may withdraw at any time."
    with StudyLog(path) as log:
        for sid in ("A", "B"):
            s = StudyConfig(study_id=sid, toxicity_mode="direct", anchors=[])
            log.ensure_study(s.study_id, s.title, s.model_dump(mode="json"))
        page = log.ensure_page("youtube", "v1", None, None)
        with log.transaction():
            ids = [log.add_comment("youtube", f"c{i}", page, f"comment {i}") for i in range(2)]
        for sid in ("A", "B"):
            log.ensure_rater(sid, "r1", AGREED, text)
            with log.transaction():
                rid, _ = log.add_rating(sid, "r1", f"{sid}0", None, ids[0], {"toxicity": "toxic"}, None, "toxic",
                                        False, 1)
                log.write("UPDATE ratings SET created_at = ? WHERE rating_id = ?", ("2025-03-01T11:00:00.000Z", rid))
            assert log.withdraw_consent(sid, "r1", WITHDRAWN) == 1
        log.ensure_rater("B", "r1", "2025-03-03T10:00:00.000Z", text)  # agrees again, to B only
        with log.transaction():
            log.add_rating("B", "r1", "B1", None, ids[1], {"toxicity": "toxic"}, None, "toxic", False, 1)
    report = report_from_db(path)
    assert report["withdrawn"] == {"raters": 1, "studies": 2, "ratings": 2, "agreed_again": 1, "still_withdrawn": 1}
    page = render_html(report)
    # not "left out of the 2 studies they withdrew from": in B, what they rated since counts
    assert "agreed again since:" not in page and "is left out of" not in page
    assert ("<p class=note>1 rater withdrew from 2 studies: 1 rater is still "
            "withdrawn from a study (all they recorded there is left out), 1 agreed again in a study since (there, "
            "what they recorded before agreeing again is left out and what they rated since counts); the 2 ratings "
            "left out are in no count or figure of this report (the log still holds them).") in page, page
