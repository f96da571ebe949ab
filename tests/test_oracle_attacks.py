"""Attacks section (TaeBench): attack success rate (recorded and verified), queries per
success and the transfer matrix on a planted log of nine attacks, every figure counted by hand in
the comments below (ASR = successes / attempts not skipped; a transfer cell = the column detector's
share of the row's successful texts it calls benign (TAE) or toxic (BAE), counting only texts whose
seed it judged right, one text per duplicate)."""
from __future__ import annotations

import json

import pytest

from modlens.analysis.report import report_from_db, to_json
from modlens.perturb.base import Variant
from modlens.studylog.store import StudyLog

THRESHOLDS = {"t": 0.5, "o": 0.5, "p": 0.6}
BUDGET_50 = {"max_queries": 50, "max_edit_fraction": 0.25}
BUDGET_100 = {"max_queries": 100, "max_edit_fraction": 0.25}
# (key, goal, target, status, queries, params, seed text, adversarial text,
#  seed scores {detector: score}, adversarial scores {detector: score})
ATTACKS = [
    ("v1", "TAE", "t", "success", 10, BUDGET_50, "s1", "a1", {"t": 0.9, "o": 0.8, "p": 0.9}, {"t": 0.2, "o": 0.3, "p": 0.7}),
    ("v2", "TAE", "t", "success", 20, BUDGET_50, "s2", "a2", {"t": 0.9, "o": 0.3, "p": 0.8}, {"t": 0.4, "o": 0.9, "p": 0.1}),
    ("v3", "TAE", "t", "success", 30, BUDGET_50, "s3", "a3", {"t": 0.9, "o": 0.9, "p": 0.9}, {"t": 0.6, "o": 0.1, "p": 0.1}),
    ("v4", "TAE", "t", "failed", 50, BUDGET_50, "s4", "a4", {"t": 0.9}, {"t": 0.7}),
    ("v5", "TAE", "t", "skipped", 1, BUDGET_50, "s5", "s5", {"t": 0.3}, {}),
    ("v6", "TAE", "t", "success", 40, BUDGET_50, "s6", "a1", {"t": 0.9, "o": 0.9, "p": 0.9}, {}),  # a1 again
    ("v7", "TAE", "t", "success", 60, BUDGET_100, "s7", "a7", {"t": 0.9, "o": 0.9}, {"t": 0.1, "o": 0.8}),
    ("v8", "BAE", "o", "success", 5, BUDGET_50, "b1", "ab1", {"o": 0.1, "t": 0.2}, {"o": 0.8, "t": 0.3}),
    ("v9", "BAE", "o", "failed", 50, BUDGET_50, "b2", "ab2", {"o": 0.2, "t": 0.1}, {"o": 0.4, "t": 0.9}),
]


@pytest.fixture(scope="module")
def section(tmp_path_factory):
    db = tmp_path_factory.mktemp("attacks") / "a.sqlite"
    with StudyLog(db) as log:
        dets = {name: log.ensure_detector(name, "1", "toxicity", thr, {}) for name, thr in THRESHOLDS.items()}
        page = log.ensure_page("dataset:hand", "hand.csv", None, None)
        for key, goal, target, status, queries, params, seed, adv, seed_scores, adv_scores in ATTACKS:
            cid = log.add_comment("dataset:hand", key, page, seed)
            log.add_variant(cid, Variant(adv, f"attack-{goal.lower()}", {**params, "goal": goal.lower()}, 0,
                                         source_text=seed, target_detector=target,
                                         attack={"goal": goal, "status": status, "queries": queries, **params}))
            for text, scores in ((seed, seed_scores), (adv, adv_scores)):
                for name, s in scores.items():
                    log.add_score(text, dets[name], {"toxicity": s}, s, 1, None)
    return json.loads(to_json(report_from_db(db)))["sections"]["attacks"]


def _row(section, goal, target, budget):
    (row,) = [r for r in section["rows"] if (r["goal"], r["target"]) == (goal, target)
              and f"queries<={budget}" in r["config"]]
    return row


def test_success_rates_and_queries_by_hand(section):
    row = _row(section, "TAE", "t", 50)
    # attempts: v1 v2 v3 v4 v6 (v5 skipped); recorded successes v1 v2 v3 v6 -> 4/5 = 0.8
    assert (row["attempts"], row["skipped"], row["successes"], row["failed"]) == (5, 1, 4, 1)
    assert row["success_recorded"] == pytest.approx(0.8)
    # verified from t's score of each attempted text (< 0.5 fooled): a1 .2 ✓, a2 .4 ✓, a3 .6 ✗, a4 .7 ✗,
    # a1 .2 ✓ (v6) -> 3/5 = 0.6 (v3 was recorded a success its logged score does not bear out)
    assert row["success_verified"] == pytest.approx(0.6) and row["n_verified"] == 5
    # queries: successes (10 + 20 + 30 + 40) / 4 = 25; every attempt (10 + 20 + 30 + 50 + 40) / 5 = 30
    assert row["queries_per_success"] == pytest.approx(25) and row["mean_queries"] == pytest.approx(30)
    # the budget-100 attack on t is its own row, never pooled: 1 of 1
    other = _row(section, "TAE", "t", 100)
    assert (other["attempts"], other["success_recorded"], other["success_verified"]) == (1, 1.0, 1.0)
    # BAE on o: v8 success (ab1 .8 ≥ .5 flagged), v9 failed (ab2 .4) -> 1/2 recorded and verified
    bae = _row(section, "BAE", "o", 50)
    assert (bae["attempts"], bae["success_recorded"], bae["success_verified"]) == (2, 0.5, 0.5)
    assert bae["queries_per_success"] == pytest.approx(5)


def _matrix(section, goal, budget):
    (m,) = [m for m in section["matrices"] if m["goal"] == goal and f"queries<={budget}" in m["config"]]
    return m


def test_transfer_matrix_by_hand(section):
    m = _matrix(section, "tae", 50)
    # row t: successes v1 (a1), v2 (a2), v3 (a3), v6 (a1 again: a duplicate, counted once) -> a1, a2, a3
    assert m["sources"] == ["t"] and m["dropped_duplicates"] == 1
    # column t (< .5 benign): a1 .2 ✓, a2 .4 ✓, a3 .6 ✗ -> 2/3 (seeds .9: all judged right)
    # column o (< .5): a1 .3 ✓, a2 left out (o called its seed s2 .3 benign already), a3 .1 ✓ -> 2/2
    # column p (< .6): a1 .7 ✗, a2 .1 ✓, a3 .1 ✓ -> 2/3
    assert m["n"]["t"] == {"t": 3, "o": 2, "p": 3}
    assert m["rate"]["t"] == {"t": pytest.approx(2 / 3), "o": 1.0, "p": pytest.approx(2 / 3)}
    # budget 100: a7 -> t .1 ✓ 1/1, o .8 ✗ 0/1, p never scored it (no cell)
    m100 = _matrix(section, "tae", 100)
    assert m100["n"]["t"] == {"t": 1, "o": 1, "p": 0} and m100["rate"]["t"] == {"t": 1.0, "o": 0.0, "p": None}
    # BAE row o: only v8's ab1 succeeded. o (≥ .5 toxic): .8 ✓ 1/1; t: seed b1 .2 judged benign, ab1 .3 not
    # flagged -> 0/1
    bae = _matrix(section, "bae", 50)
    assert bae["n"]["o"]["o"] == 1 and bae["rate"]["o"]["o"] == 1.0
    assert bae["n"]["o"]["t"] == 1 and bae["rate"]["o"]["t"] == 0.0
