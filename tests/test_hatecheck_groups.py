"""HateCheck per functionality is computed once (`modlens.metrics.by_group`): the report's section
and head training's HateCheck report both take their counts from it. Checked here by hand on a
small suite, and against scikit-learn for the AUC convention (a one-class functionality against
every case of the other class)."""
from __future__ import annotations

import csv

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from modlens.detectors.head import hatecheck_report
from modlens.metrics import by_group

# functionality, gold (1 hateful), score
CASES = [("slur_h", 1, 0.9), ("slur_h", 1, 0.4), ("slur_h", 1, 0.7),
         ("profanity_nh", 0, 0.6), ("profanity_nh", 0, 0.1),
         ("mixed", 1, 0.8), ("mixed", 0, 0.3), ("mixed", 0, 0.85)]


def groups() -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, (func, _, _) in enumerate(CASES):
        out.setdefault(func, []).append(i)
    return out


def test_accuracy_counts_and_the_hatecheck_auc_convention():
    y = np.array([g for _, g, _ in CASES])
    s = np.array([x for _, _, x in CASES])
    got = by_group(groups(), s, y, 0.5)
    assert (got["slur_h"].n, got["slur_h"].right, got["slur_h"].classes) == (3, 2, frozenset({1}))
    assert (got["profanity_nh"].right, got["mixed"].right) == (1, 2)
    assert got["slur_h"].accuracy == pytest.approx(2 / 3)
    # a one-class functionality: its cases against every non-hateful case of the suite
    others = [i for i, (_, g, _) in enumerate(CASES) if g == 0]
    idx = groups()["slur_h"] + others
    assert got["slur_h"].auc == pytest.approx(roc_auc_score(y[idx], s[idx]))
    mixed = groups()["mixed"]  # both classes: its own AUC
    assert got["mixed"].auc == pytest.approx(roc_auc_score(y[mixed], s[mixed]))
    assert by_group(groups(), s, y, 0.5, auc=False)["slur_h"].auc is None


def test_head_trainings_report_is_the_same_computation(tmp_path):
    path = tmp_path / "test_suite_cases.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["", "functionality", "case_id", "test_case", "label_gold", "target_ident"])
        for i, (func, gold, _) in enumerate(CASES):
            w.writerow([i, func, i + 1, f"case {i}", "hateful" if gold else "non-hateful", "women"])
    scores = {f"case {i}": x for i, (_, _, x) in enumerate(CASES)}
    report = hatecheck_report(lambda texts: np.array([scores[t] for t in texts]), path)
    y, s = [g for _, g, _ in CASES], [x for _, _, x in CASES]
    for func, g in by_group(groups(), s, y, 0.5).items():
        assert report["by_functionality"][func]["accuracy"] == round(g.right / g.n, 4)
        assert report["by_functionality"][func]["auc"] == round(g.auc, 4)
