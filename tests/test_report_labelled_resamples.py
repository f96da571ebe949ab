"""The labelled section's bootstrap intervals say how many resamples they rest on.

A figure that some resamples leave undefined (precision when a resample holds no item the
detector calls toxic) was taken over the resamples that define it, while the page said "1000
resamples" for every bracket. Here one item of sixty scores above the threshold: a resample that
misses it (about a third do) has no precision."""
from __future__ import annotations

import json

from modlens.analysis import metrics
from modlens.analysis.report import render_html, report_from_db, to_json
from modlens.studylog.records.labels import add_gold_labels, ensure_label_set
from modlens.studylog.store import StudyLog

N, POSITIVES = 60, 30


def _log(db, scores):
    with StudyLog(db) as log:
        det = log.ensure_detector("det", "1", "toxicity", 0.5, {})
        page = log.ensure_page("dataset:few-flagged", "f.csv", None, None)
        gold = ensure_label_set(log, "dataset:few-flagged", "toxic (test)")
        for i, s in enumerate(scores):
            cid = log.add_comment("dataset:few-flagged", f"k{i}", page, f"text {i}")
            add_gold_labels(log, gold, [(cid, str(int(i < POSITIVES)))])
            log.add_score(f"text {i}", det, {"toxicity": s}, s, 1, None)
    return db


def _precision(report):
    (src,) = json.loads(to_json(report))["sections"]["labelled"]["sources"]
    return src["detectors"][0]["metrics"]["precision"]


def test_an_interval_over_fewer_resamples_says_over_how_many(tmp_path):
    # one positive flagged: precision is 1 where that item was drawn, undefined elsewhere
    report = report_from_db(_log(tmp_path / "one.sqlite", [0.9] + [0.1] * (N - 1)))
    p = _precision(report)
    drawn = metrics.resamples_for(N)
    assert p["value"] == 1.0 and p["resamples"] == drawn
    assert drawn // 2 <= p["ci_resamples"] < drawn and p["ci"] == [1.0, 1.0]
    page = render_html(report)
    assert f"1.000 [1.000,\u00a01.000] ({p['ci_resamples']} of {drawn} resamples)" in page
    recall = json.loads(to_json(report))["sections"]["labelled"]["sources"][0]["detectors"][0]["metrics"]["recall"]
    assert recall["ci_resamples"] == drawn  # stratified: every resample keeps the positives

