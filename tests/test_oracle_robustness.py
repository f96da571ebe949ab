"""Robustness section (NoisyHate, the paper's Table 4) against routes other than `analysis/robustness.py`:
a log of four pairs whose accuracy, ΔAUC, ROC-AUC and flip rate are counted by hand below, and the
shipped NoisyHate dev half audited with its recorded Perspective scores, checked per perturbation
type against the paper's printed accuracy (0.816 → 0.639) and against numpy on the CSV's own columns."""
from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from modlens.analysis.report import report_from_db, to_json
from oracle_helpers import audit_noisyhate_recorded
from modlens.rows import Variant
from modlens.studylog.records.labels import add_gold_labels, ensure_label_set
from modlens.studylog.store import StudyLog

# (key, gold toxic or None, clean score, perturbed score, type). Every score sits half-way between two
# points of the 0.01 threshold grid, so no score equals a grid threshold (no float ties).
PAIRS = [
    ("c1", 1, 0.805, 0.305, "X"),
    ("c2", 1, 0.605, 0.555, "X"),
    ("c3", 0, 0.205, 0.705, "Y"),
    ("c4", 0, 0.405, 0.105, "Y"),
    ("c5", None, 0.905, 0.105, "Y"),  # no gold label: counts only towards the flip rate
]


def _hand_log(db):
    with StudyLog(db) as log:
        det = log.ensure_detector("det", "1", "toxicity", 0.5, {})
        page = log.ensure_page("dataset:hand", "hand.csv", None, None)
        gold = ensure_label_set(log, "dataset:hand", "toxic (hand)")
        for key, toxic, clean, pert, kind in PAIRS:
            text, variant = f"clean {key}", f"perturbed {key}"
            cid = log.add_comment("dataset:hand", key, page, text)
            if toxic is not None:
                add_gold_labels(log, gold, [(cid, str(toxic))])
            log.add_variant(cid, Variant(variant, "human:test", {"types": kind}, 0, source_text=text))
            log.add_score(text, det, {"toxicity": clean}, clean, 1, None)
            log.add_score(variant, det, {"toxicity": pert}, pert, 1, None)
        # an attack variant of c1 that fools the detector: the attacks section's, never a robustness pair
        cid = log.comment_id("dataset:hand", "c1")
        log.add_variant(cid, Variant("attacked c1", "attack-tae", {}, 0, source_text="clean c1", target_detector="det",
                                     attack={"goal": "TAE", "status": "success", "queries": 3}))
        log.add_score("attacked c1", det, {"toxicity": 0.015}, 0.015, 1, None)
        # c1's perturbed text normalized back to something the detector flags again
        log.add_normalization("perturbed c1", "norm", "1", "normalized c1", [])
        log.add_score("normalized c1", det, {"toxicity": 0.905}, 0.905, 1, None)


def test_robustness_equals_a_hand_count(tmp_path):
    db = tmp_path / "hand.sqlite"
    _hand_log(db)
    (det,) = json.loads(to_json(report_from_db(db)))["sections"]["robustness"]["detectors"]
    rows = {r["type"]: r for r in det["rows"]}
    assert set(rows) == {"all", "X", "Y"}
    every = rows["all"]
    # ACC@0.5, clean: c1 .805≥.5 toxic ✓, c2 .605 ✓, c3 .205<.5 not ✓, c4 .405 ✓ -> 4/4 = 1.0
    #      perturbed: c1 .305 ✗, c2 .555 ✓, c3 .705 flagged ✗, c4 .105 ✓ -> 2/4 = 0.5; ΔACC = 0.5 - 1.0
    assert every["n_pairs"] == 4
    assert (every["acc_clean"], every["acc_perturbed"], every["delta_acc"]) == pytest.approx((1.0, 0.5, -0.5))
    # Area under accuracy(t) over t = 0, 0.01, ..., 1 (trapezoids). A toxic item with score s = (k + ½)/100 is
    # right for t ≤ k/100: k full steps of 0.01 and one half step, area = 0.01·k + 0.005 = s; a non-toxic one
    # is right for t ≥ (k+1)/100, area = 1 - s. So the curve's area is the mean of those per-item areas:
    # clean     (0.805 + 0.605 + (1-0.205) + (1-0.405)) / 4 = 2.80 / 4 = 0.7000
    # perturbed (0.305 + 0.555 + (1-0.705) + (1-0.105)) / 4 = 2.05 / 4 = 0.5125   ΔAUC = 0.1875
    assert every["auc_clean"] == pytest.approx(0.70, abs=1e-9)
    assert every["auc_perturbed"] == pytest.approx(0.5125, abs=1e-9)
    assert every["delta_auc"] == pytest.approx(0.1875, abs=1e-9)
    # ROC-AUC: clean, positives {.805, .605} outrank negatives {.205, .405} in 4 of 4 pairs = 1.0;
    # perturbed, {.305, .555} vs {.705, .105}: only the two pairs with .105 -> 2/4 = 0.5
    assert every["roc_auc_clean"] == pytest.approx(1.0) and every["roc_auc_perturbed"] == pytest.approx(0.5)
    y = [t for _, t, _, _, _ in PAIRS[:4]]
    assert every["roc_auc_clean"] == pytest.approx(roc_auc_score(y, [c for _, _, c, _, _ in PAIRS[:4]]))
    assert every["roc_auc_perturbed"] == pytest.approx(roc_auc_score(y, [p for _, _, _, p, _ in PAIRS[:4]]))
    # per type: X = c1, c2 (both toxic): clean 2/2, perturbed 1/2, ΔAUC = ((.805-.305) + (.605-.555)) / 2 = 0.275
    #           Y = c3, c4 (both not):   clean 2/2, perturbed 1/2, ΔAUC = ((.705-.205) + (.105-.405)) / 2 = 0.100
    for kind, delta in (("X", 0.275), ("Y", 0.100)):
        r = rows[kind]
        assert (r["n_pairs"], r["acc_clean"], r["acc_perturbed"]) == (2, 1.0, 0.5)
        assert r["delta_auc"] == pytest.approx(delta, abs=1e-9)
        assert r["roc_auc_clean"] is None  # one gold class only
    # decision flips at 0.5, every pair (c5 has no gold label): c1 T->F, c2 T->T, c3 F->T, c4 F->F, c5 T->F = 3/5
    assert det["flip_rate"] == {"dataset:hand": pytest.approx(0.6)} and det["n_flip_pairs"] == {"dataset:hand": 5}
    # normalized: only c1's perturbed text has a normalized form (.905): clean ✓, normalized ✓ -> 1.0 and 1.0;
    # ΔAUC = .805 - .905 = -0.1 (the normalized text scores higher than the clean one)
    norm = every["normalized"]["norm@1"]
    assert (norm["n_pairs"], norm["acc_clean"], norm["acc_perturbed"]) == (1, 1.0, 1.0)
    assert norm["delta_auc"] == pytest.approx(-0.1, abs=1e-9)


@pytest.fixture
def noisyhate_report(data_dir, tmp_path):
    db, rows = audit_noisyhate_recorded(data_dir, tmp_path)
    return json.loads(to_json(report_from_db(db))), rows


def _curve_area(scores: np.ndarray) -> float:
    """Area under the share of (all-toxic) items scored ≥ t, t on 101 points, by numpy's trapezoid rule."""
    grid = np.linspace(0, 1, 101)
    return float(np.trapezoid([(scores >= t).mean() for t in grid], grid))


def test_noisyhate_table4_per_type_from_the_csv(noisyhate_report):
    report, rows = noisyhate_report
    (det,) = report["sections"]["robustness"]["detectors"]
    got = {r["type"]: r for r in det["rows"]}
    # the paper's Table 4 (Perspective, AllPert) as the dev half reproduces it: ACC@0.5 0.816 -> 0.639
    assert round(got["all"]["acc_clean"], 3) == 0.816 and round(got["all"]["acc_perturbed"], 3) == 0.639
    by_type: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_type["all"].append(r)
        for t in r["types"].split("|"):
            by_type[t].append(r)
    assert set(got) == set(by_type) == {"all", "RepeatChar", "Abbr", "SpecialChar", "MixedCase", "MixedCase+"}
    for kind, members in by_type.items():
        clean = np.array([float(r["perspective_clean"]) for r in members])
        pert = np.array([float(r["perspective_perturbed"]) for r in members])
        r = got[kind]
        assert r["n_pairs"] == len(members), kind
        assert r["acc_clean"] == pytest.approx((clean >= 0.5).mean(), abs=1e-12), kind   # every row is toxic
        assert r["acc_perturbed"] == pytest.approx((pert >= 0.5).mean(), abs=1e-12), kind
        assert r["delta_auc"] == pytest.approx(_curve_area(clean) - _curve_area(pert), abs=1e-9), kind
        # the exact integral of P(score ≥ t) over [0, 1] is the mean score: the grid's ΔAUC stays close to it
        assert r["delta_auc"] == pytest.approx(clean.mean() - pert.mean(), abs=3e-3), kind
        assert r["roc_auc_clean"] is None  # NoisyHate is all toxic


def test_robustness_page_warns_of_few_pairs_and_shows_the_flip_rate(tmp_path):
    """Four labelled pairs give a ΔACC of -0.5 and a ΔAUC of 0.19 printed like any other: the page must
    say they rest on 4 pairs, as the labelled section says of fewer than 30 items; and the decision
    flip rate the docs promise (every pair, labelled or not) must be on the page, not only in the JSON."""
    from modlens.analysis.report import render_html

    db = tmp_path / "hand.sqlite"
    _hand_log(db)
    report = report_from_db(db)
    (det,) = report["sections"]["robustness"]["detectors"]
    rows = {r["type"]: r for r in det["rows"]}
    assert rows["all"]["warnings"] == ["only 4 pairs (< 30)"] and rows["X"]["warnings"] == ["only 2 pairs (< 30)"]
    assert rows["all"]["normalized"]["norm@1"]["warnings"] == ["only 1 pair (< 30)"]
    page = render_html(report)
    assert "⚠ only 4 pairs (&lt; 30)" in page and "⚠ only 1 pair (&lt; 30)" in page
    assert "decision flip rate" in page and "0.600" in page


def test_a_blank_gold_value_is_no_label_here_as_in_the_labelled_section(tmp_path):
    """A gold value of '' (a blank cell kept as text by an older log) is no gold label to the labelled
    section (`labelled.gold`); the robustness section read it as 'not toxic' and counted its pair."""
    from modlens.analysis import labelled

    db = tmp_path / "blank.sqlite"
    _hand_log(db)
    with StudyLog(db) as log:
        cid = log.comment_id("dataset:hand", "c5")  # c5 had no gold label: now a blank one
        add_gold_labels(log, ensure_label_set(log, "dataset:hand", "toxic (hand)"), [(cid, "")])
    report = report_from_db(db)
    assert labelled.gold({"toxic": ""}) is None
    (det,) = report["sections"]["robustness"]["detectors"]
    every = next(r for r in det["rows"] if r["type"] == "all")
    assert every["n_pairs"] == 4  # c1-c4; c5 still counts only towards the flip rate
    assert det["n_flip_pairs"] == {"dataset:hand": 5}
