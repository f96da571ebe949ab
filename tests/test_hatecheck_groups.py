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


def test_a_functionality_a_detector_scored_only_partly_says_so_in_its_cell(tmp_path):
    """The functionality row's n counts its cases; a detector that failed on some of them has its
    accuracy over the rest: the cell must say over how many, not sit under the row's n as if over all."""
    from modlens.analysis import hatecheck
    from modlens.analysis.data import load
    from modlens.analysis.sections.hatecheck import render
    from modlens.studylog.store import StudyLog

    db = tmp_path / "hc.sqlite"
    with StudyLog(db) as log:
        full = log.ensure_detector("full", "1", "toxic", 0.5, {})
        part = log.ensure_detector("part", "1", "toxic", 0.5, {})
        page = log.ensure_page("dataset:hatecheck", "suite", None, None)
        for i, (func, gold, score) in enumerate(CASES):
            text = f"case {i}"
            cid = log.add_comment("dataset:hatecheck", f"k{i}", page, text)
            log.add_label(cid, "functionality", func, "dataset:hatecheck")
            log.add_label(cid, "label_gold", "hateful" if gold else "non-hateful", "dataset:hatecheck")
            log.add_score(text, full, {"toxic": score}, score, 1, None)
            if func == "slur_h" and i == 0:  # part failed on one of slur_h's three cases
                log.add_score(text, part, None, None, 1, "timeout")
            else:
                log.add_score(text, part, {"toxic": score}, score, 1, None)
    section = hatecheck.analyze(load(db))
    (block,) = section["sources"]
    slur = next(r for r in block["functionalities"] if r["key"] == "slur_h")
    assert slur["n"] == 3 and slur["detectors"]["part@1"]["n"] == 2 and slur["detectors"]["full@1"]["n"] == 3
    page = render(section)
    import re
    # slur_h, the hateful total and all cases: part's cells only (full scored every case)
    assert re.findall(r"\((\d+ of \d+) scored\)", page) == ["2 of 3", "3 of 4", "7 of 8"]
