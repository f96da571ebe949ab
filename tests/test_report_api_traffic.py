"""The API traffic section's mean score is 'each detector's toxicity score of the analysed comments':
over the analyze calls it scored, never a suggestscore call (whose text another call may have had
scored: scores are per text), and saying over how many when some analyze call has no score (the
daemon logs a call before its scores, and a detector may fail)."""
from __future__ import annotations

import pytest

from modlens.analysis.report import render_html, report_from_db
from modlens.studylog.store import StudyLog


def test_mean_score_is_over_the_scored_analyze_calls_and_says_how_many(tmp_path):
    db = tmp_path / "api.sqlite"
    with StudyLog(db) as lg:
        det = lg.ensure_detector("det", "1", "toxic", 0.5, {})
        page = lg.ensure_page("api", "forum-a", None, "forum-a")
        calls = [("a1", "analyze", "you idiot", 0.9), ("a2", "analyze", "hello", 0.1),
                 ("a3", "analyze", "not scored yet", None),  # the daemon died before its scores' commit
                 ("s1", "suggestscore", "hello", None)]       # its text scored by a2's call: not an analysed comment
        for key, endpoint, text, score in calls:
            cid = lg.add_comment("api", key, page, text)
            lg.add_label(cid, "api.endpoint", endpoint, "api")
            lg.add_label(cid, "api.community_id", "forum-a", "api")
            if score is not None:
                lg.add_score(text, det, {"toxic": score}, score, 1.0, None)
    report = report_from_db(db)
    api = report["sections"]["api"]
    forum = api["communities"]["forum-a"]
    assert (forum["analyze"], forum["suggestscore"]) == (3, 1)
    assert forum["mean_score"] == {"det@1": pytest.approx(0.5)}  # (0.9 + 0.1) / 2, not with s1's 0.1 again
    assert api["scored"] == {"forum-a": {"det@1": 2}}
    assert "0.500 (2 of 3 analysed)" in render_html(report)
