"""A withdrawal covers what the rater recorded before a consent they gave again (`sessions.withdrawn_row`):
what came before the withdrawal and what came while withdrawn. The client writes its times ending in "Z", the
daemon its own ending in "+00:00", and compared as strings the two disagree on which came first
("11:00:00.500+00:00" sorts before "11:00:00Z", half a second later). The rule compares instants; a report
reads ratings through it."""
from __future__ import annotations

from modlens.analysis.report import report_from_db
from modlens.config import StudyConfig
from modlens.studylog.store import StudyLog

AGREED, WITHDRAWN, AGAIN = "2026-03-01T09:00:00Z", "2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z"
# as the daemon stamps them (now_iso: milliseconds, "+00:00")
MADE = {"before": "2026-03-01T09:59:59.999+00:00", "at": "2026-03-01T10:00:00.000+00:00",
        "while withdrawn": "2026-03-01T10:00:00.500+00:00", "just before agreeing again": "2026-03-01T10:59:59.999+00:00",
        "as they agreed again": "2026-03-01T11:00:00.000+00:00",
        "half a second after agreeing again": "2026-03-01T11:00:00.500+00:00"}


def test_a_withdrawal_covers_what_came_before_a_consent_given_again_as_instants_not_strings(tmp_path):
    path = tmp_path / "study.sqlite"
    study = StudyConfig(study_id="pilot", toxicity_mode="direct", anchors=[])
    with StudyLog(path) as log:
        log.ensure_study(study.study_id, study.title, study.model_dump(mode="json"))
        page = log.ensure_page("youtube", "v1", None, None)
        with log.transaction():
            ids = [log.add_comment("youtube", f"c{i}", page, f"comment {i}") for i in range(len(MADE))]
        log.ensure_rater("pilot", "r1", AGREED, "You may withdraw at any time.")
        with log.transaction():
            for n, (cid, at) in enumerate(zip(ids, MADE.values())):
                rating_id, _ = log.add_rating("pilot", "r1", f"x{n}", None, cid, {"toxicity": "toxic"}, None,
                                              "toxic", False, 1)
                # the times the daemon would have stamped them with: this test cannot set its clock
                log.write("UPDATE ratings SET created_at = ? WHERE rating_id = ?", (at, rating_id))
        assert log.withdraw_consent("pilot", "r1", WITHDRAWN) == 1
        log.ensure_rater("pilot", "r1", AGAIN, "You may withdraw at any time.")
    # compared as strings, the rating half a second after agreeing again would be taken for one before it
    assert MADE["half a second after agreeing again"] < AGAIN
    report = report_from_db(path)
    # left out: the four made before agreeing again, the one made while withdrawn among them
    assert (report["withdrawn"]["ratings"], report["withdrawn"]["agreed_again"]) == (4, 1), report["withdrawn"]
    assert report["counts"]["ratings"] == 2
