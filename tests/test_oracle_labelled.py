"""Labelled section, through the report: precision, recall, F1, accuracy, ROC-AUC, PR-AUC, Brier and the
best-F1 threshold on six items counted by hand below, and on 300 tied scores against scikit-learn
computed from the rows written here (not from `analysis/metrics.py`)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import (accuracy_score, average_precision_score, brier_score_loss, f1_score,
                             precision_recall_curve, precision_score, recall_score, roc_auc_score)

from modlens.analysis.report import report_from_db, to_json
from modlens.studylog.records.labels import add_gold_labels, ensure_label_set
from modlens.studylog.store import StudyLog


def _report(db, scores, golds, threshold=0.5):
    with StudyLog(db) as log:
        det = log.ensure_detector("det", "1", "toxicity", threshold, {})
        page = log.ensure_page("dataset:oracle", "o.csv", None, None)
        gold = ensure_label_set(log, "dataset:oracle", "toxic (oracle)")
        for i, (s, g) in enumerate(zip(scores, golds)):
            cid = log.add_comment("dataset:oracle", f"k{i}", page, f"text {i}")
            add_gold_labels(log, gold, [(cid, str(int(g)))])
            log.add_score(f"text {i}", det, {"toxicity": float(s)}, float(s), 1, None)
    (src,) = json.loads(to_json(report_from_db(db)))["sections"]["labelled"]["sources"]
    (d,) = src["detectors"]
    return d


def test_headline_metrics_equal_a_hand_count(tmp_path):
    d = _report(tmp_path / "hand.sqlite", [0.9, 0.8, 0.7, 0.6, 0.3, 0.2], [1, 0, 1, 1, 0, 0])
    m = {k: v["value"] for k, v in d["metrics"].items()}
    # at 0.5: flagged .9 .8 .7 .6 -> TP 3 (.9 .7 .6), FP 1 (.8), FN 0, TN 2 (.3 .2)
    # precision 3/4, recall 3/3, F1 = 2·3 / (2·3 + 1 + 0) = 6/7, accuracy (3 + 2) / 6
    assert (d["n"], d["positives"]) == (6, 3)
    assert m["precision"] == pytest.approx(3 / 4) and m["recall"] == pytest.approx(1.0)
    assert m["f1"] == pytest.approx(6 / 7) and m["accuracy"] == pytest.approx(5 / 6)
    # ROC-AUC: positive .9 outranks all 3 negatives, .7 and .6 outrank .3 and .2 -> (3 + 2 + 2) / 9
    assert m["roc_auc"] == pytest.approx(7 / 9)
    # PR-AUC (average precision): ranked + - + + - -, precision at each positive 1/1, 2/3, 3/4 -> 29/36
    assert m["pr_auc"] == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)
    # Brier: (.1² + .8² + .3² + .4² + .3² + .2²) / 6 = 1.03 / 6
    assert m["brier"] == pytest.approx(1.03 / 6)
    # best F1 over thresholds "score ≥ t": t=.9 2·1/(1+0+3) = .5; .8 2/5; .7 4/6; .6 6/7; .3 6/8; .2 6/9
    assert d["best_f1"] == {"threshold": 0.6, "f1": pytest.approx(6 / 7), "precision": pytest.approx(3 / 4),
                            "recall": pytest.approx(1.0)}
    assert not any("best-F1" in w for w in d["degenerate"])  # 4 of 6 flagged


@pytest.mark.parametrize("seed", [0, 1])
def test_section_equals_scikit_learn_on_tied_scores(tmp_path, seed):
    rng = np.random.default_rng(seed)
    y = (rng.random(300) < 0.35).astype(int)
    s = np.clip(np.round(rng.normal(0.35 + 0.3 * y, 0.2), 2), 0, 1)  # two decimals: many ties
    d = _report(tmp_path / "r.sqlite", s, y, threshold=0.45)
    m = {k: v["value"] for k, v in d["metrics"].items()}
    pred = s >= 0.45
    assert m["precision"] == pytest.approx(precision_score(y, pred), abs=1e-12)
    assert m["recall"] == pytest.approx(recall_score(y, pred), abs=1e-12)
    assert m["f1"] == pytest.approx(f1_score(y, pred), abs=1e-12)
    assert m["accuracy"] == pytest.approx(accuracy_score(y, pred), abs=1e-12)
    assert m["roc_auc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert m["pr_auc"] == pytest.approx(average_precision_score(y, s), abs=1e-12)
    assert m["brier"] == pytest.approx(brier_score_loss(y, s), abs=1e-12)
    # best F1: the highest F1 on scikit-learn's precision-recall curve, and the highest threshold reaching it
    p, r, t = precision_recall_curve(y, s)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.nan_to_num(2 * p[:-1] * r[:-1] / (p[:-1] + r[:-1]))
    best = f1.max()
    assert d["best_f1"]["f1"] == pytest.approx(best, abs=1e-12)
    assert d["best_f1"]["threshold"] == pytest.approx(t[np.isclose(f1, best, rtol=0, atol=1e-12)].max())
    at = s >= d["best_f1"]["threshold"]
    assert d["best_f1"]["precision"] == pytest.approx(precision_score(y, at), abs=1e-12)
    assert d["best_f1"]["recall"] == pytest.approx(recall_score(y, at), abs=1e-12)
