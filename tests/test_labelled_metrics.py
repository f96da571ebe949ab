"""Labelled-data metrics: every metric against scikit-learn on data with ties and on
hand-worked examples, the bootstrap intervals' determinism and coverage, Wilson intervals against
statsmodels, and the report's "labelled" section on a log of known content, including its
per-group results, count warnings and skip reasons."""
import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import (accuracy_score, average_precision_score, brier_score_loss, f1_score,
                             precision_recall_curve, precision_score, recall_score, roc_auc_score)
from statsmodels.stats.proportion import proportion_confint

from modlens.analysis import labelled, metrics
from modlens.analysis.data import load
from modlens.analysis.skip import Skip
from modlens.studylog.records.labels import add_gold_labels, ensure_label_set
from modlens.studylog.store import StudyLog


def _data(seed: int, n: int = 400, prevalence: float = 0.3):
    """Scores rounded to 2 decimals (many ties), informative but imperfect."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prevalence).astype(int)
    s = np.clip(np.round(rng.normal(0.35 + 0.3 * y, 0.2), 2), 0, 1)
    return s, y


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.62])
def test_headline_metrics_equal_scikit_learn(seed, threshold):
    s, y = _data(seed)
    got = metrics.classification_metrics(s, y, threshold)
    pred = s >= threshold
    assert got["precision"] == pytest.approx(precision_score(y, pred), abs=1e-12)
    assert got["recall"] == pytest.approx(recall_score(y, pred), abs=1e-12)
    assert got["f1"] == pytest.approx(f1_score(y, pred), abs=1e-12)
    assert got["accuracy"] == pytest.approx(accuracy_score(y, pred), abs=1e-12)
    assert got["roc_auc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert got["pr_auc"] == pytest.approx(average_precision_score(y, s), abs=1e-12)
    assert got["brier"] == pytest.approx(brier_score_loss(y, s), abs=1e-12)
    assert metrics.average_precision(s, y) == got["pr_auc"] and metrics.brier_score(s, y) == got["brier"]


def test_hand_worked_example():
    s, y = [0.9, 0.8, 0.7, 0.3, 0.2], [1, 0, 1, 0, 0]
    got = metrics.classification_metrics(s, y, 0.5)
    # ranked: + - + - -  -> AP = 1/2 · 1 + 1/2 · 2/3; ROC: the positives outrank 3 and 2 of 3 negatives
    assert got["pr_auc"] == pytest.approx(5 / 6) and got["roc_auc"] == pytest.approx(5 / 6)
    assert (got["precision"], got["recall"], got["accuracy"]) == pytest.approx((2 / 3, 1.0, 0.8))
    assert got["brier"] == pytest.approx((0.01 + 0.64 + 0.09 + 0.09 + 0.04) / 5)
    best = metrics.best_f1_threshold(s, y)
    assert best == {"threshold": 0.7, "f1": pytest.approx(0.8), "precision": pytest.approx(2 / 3), "recall": 1.0}


def test_undefined_metrics_are_none():
    got = metrics.classification_metrics([0.1, 0.2], [0, 0], 0.5)
    assert got["precision"] is None and got["recall"] is None and got["roc_auc"] is None and got["pr_auc"] is None
    assert got["accuracy"] == 1.0 and metrics.best_f1_threshold([0.1, 0.2], [0, 0]) is None
    with pytest.raises(ValueError, match="one length"):
        metrics.classification_metrics([0.1, 0.2], [1], 0.5)


@pytest.mark.parametrize("seed", [0, 5])
def test_best_f1_threshold_is_the_maximum_of_the_precision_recall_curve(seed):
    s, y = _data(seed)
    p, r, t = precision_recall_curve(y, s)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = 2 * p * r / (p + r)
    best = metrics.best_f1_threshold(s, y)
    assert best["f1"] == pytest.approx(np.nanmax(f1[:-1]), abs=1e-12)
    assert best["threshold"] in set(t[np.isclose(f1[:-1], np.nanmax(f1[:-1]))])
    assert f1_score(y, s >= best["threshold"]) == pytest.approx(best["f1"], abs=1e-12)


def test_a_best_f1_threshold_flagging_almost_every_item_is_degenerate():
    """SASS-like: 250 items, 72% positive, scores that say nothing above the 7 lowest negatives. The
    best-F1 threshold (found here by scikit-learn, not by the code under test) flags 243 of 250."""
    rng = np.random.default_rng(3)
    y = np.array([1] * 181 + [0] * 69)
    s = np.round(rng.uniform(0.05, 1.0, 250), 3)
    s[181:188] = [0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04]  # seven negatives below everything else
    p, r, t = precision_recall_curve(y, s)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = 2 * p * r / (p + r)
    k = int(np.nanargmax(f1[:-1]))
    flagged = int((s >= t[k]).sum())
    assert flagged == 243  # the scenario holds by scikit-learn's count
    warnings = labelled.degenerate(list(s), list(y), 0.5, metrics.best_f1_threshold(s, y))
    assert any(f"calls {flagged} of 250 items toxic" in w for w in warnings), warnings
    all_positive = f1_score(y, np.ones_like(y))
    assert any(f"all-positive classifier's {all_positive:.3f}" in w for w in warnings)
    # an informative detector's best threshold is not flagged
    s2, y2 = _data(0)
    assert not any("best-F1" in w for w in labelled.degenerate(list(s2), list(y2), 0.5, metrics.best_f1_threshold(s2, y2)))


@pytest.mark.parametrize("n_bins", [5, 10])
def test_reliability_curve_equals_calibration_curve(n_bins):
    s, y = _data(3)
    s = np.r_[s, [0.2, 0.4, 1.0, 0.0]]  # scores on bin edges fall where scikit-learn puts them
    y = np.r_[y, [1, 0, 1, 0]]
    share, mean_score = calibration_curve(y, s, n_bins=n_bins, strategy="uniform")
    bins = metrics.reliability_curve(s, y, n_bins)
    assert len(bins) == n_bins and sum(b["n"] for b in bins) == len(s)
    full = [b for b in bins if b["n"]]
    assert [b["share_positive"] for b in full] == pytest.approx(list(share))
    assert [b["mean_score"] for b in full] == pytest.approx(list(mean_score))
    assert all(b["mean_score"] is None for b in bins if not b["n"])


def _intervals(s, y, threshold, **kw):
    """Each headline metric's percentile interval, as `metrics.bootstrap` gives it."""
    return {k: v["ci"] for k, v in metrics.bootstrap(s, y, threshold, **kw).items()}


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    s, y = _data(7)
    a = _intervals(s, y, 0.5)
    assert a == _intervals(s, y, 0.5)  # the same report on every run
    assert a != _intervals(s, y, 0.5, seed=1)
    point = metrics.classification_metrics(s, y, 0.5)
    for k in metrics.HEADLINE:
        lo, hi = a[k]
        assert lo < point[k] < hi, k
        assert hi - lo < 0.2, k


def test_bootstrap_intervals_cover_the_truth_about_95_percent():
    """Accuracy of a detector that is right with probability 0.8 on each of 150 items: the
    interval should contain 0.8 in about 95% of 200 independent samples (binomial: 0.88-0.99)."""
    rng = np.random.default_rng(11)
    covered = 0
    for _ in range(200):
        y = (rng.random(150) < 0.5).astype(int)
        right = rng.random(150) < 0.8
        s = np.where(right == (y == 1), 0.9, 0.1)
        lo, hi = _intervals(s, y, 0.5, n_resamples=400)["accuracy"]
        covered += lo <= 0.8 <= hi
    assert 0.88 <= covered / 200 <= 0.99


def test_stratified_bootstrap_keeps_auc_defined_with_few_positives():
    s = np.r_[np.linspace(0, 1, 60), [0.95, 0.2]]
    y = np.r_[np.zeros(60, int), [1, 1]]
    ci = _intervals(s, y, 0.5)
    assert ci["roc_auc"] is not None and ci["pr_auc"] is not None


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (140, 173)])
def test_wilson_interval_equals_statsmodels(k, n):
    assert metrics.wilson_interval(k, n) == pytest.approx(list(proportion_confint(k, n, method="wilson")), abs=1e-12)
    assert metrics.wilson_interval(0, 0) is None


# --- the report section ---------------------------------------------------------------------------

def _log(path, rows, detector_scores=True):
    """rows: (platform, key, text, toxic or None, target or None, score)."""
    with StudyLog(path) as log:
        det = log.ensure_detector("det", "v1", "toxicity", 0.5, {})
        for platform, key, text, toxic, target, score in rows:
            page = log.ensure_page(platform, "f", None, None)
            cid = log.add_comment(platform, key, page, text)
            if toxic is not None:  # gold labels live in a label set of their source
                add_gold_labels(log, ensure_label_set(log, platform, "toxic (test)"), [(cid, str(toxic))])
            if target is not None:
                log.add_label(cid, "target_ident", target, platform)
            if detector_scores and score is not None:
                log.add_score(text, det, {"toxicity": score}, score, 1, None)


def test_labelled_section_matches_scikit_learn_per_source_and_group(tmp_path):
    rows, expected = [], {}
    for platform, seed in (("dataset:a", 1), ("dataset:b", 2)):
        s, y = _data(seed, n=200)
        targets = np.where(np.arange(200) < 180, "women", "immigrants")
        rows += [(platform, f"k{i}", f"{platform} text {i}", int(y[i]), str(targets[i]), float(s[i])) for i in range(200)]
        expected[platform] = (s, y, targets)
    rows.append(("dataset:a", "unlabelled", "no label here", None, None, 0.9))  # not in the section
    rows.append(("dataset:a", "unscored", "never scored", 1, None, None))       # counted for the source, not the detector
    _log(tmp_path / "l.sqlite", rows)
    section = labelled.analyze(load(tmp_path / "l.sqlite"))
    assert [src["source"] for src in section["sources"]] == ["dataset:a", "dataset:b"]
    for src in section["sources"]:
        s, y, targets = expected[src["source"]]
        (d,) = src["detectors"]
        assert src["n"] == 200 + (src["source"] == "dataset:a") and d["n"] == 200 and d["positives"] == y.sum()
        m = d["metrics"]
        assert m["f1"]["value"] == pytest.approx(f1_score(y, s >= 0.5))
        assert m["roc_auc"]["value"] == pytest.approx(roc_auc_score(y, s))
        assert m["pr_auc"]["value"] == pytest.approx(average_precision_score(y, s))
        assert m["brier"]["value"] == pytest.approx(brier_score_loss(y, s))
        assert all(m[k]["ci"][0] <= m[k]["value"] <= m[k]["ci"][1] for k in metrics.HEADLINE)
        assert d["warnings"] == []
        groups = {g["value"]: g for g in d["groups"]["target_ident"]}
        for value, g in groups.items():
            keep = targets == value
            assert g["n"] == keep.sum()
            assert g["metrics"]["accuracy"]["value"] == pytest.approx(accuracy_score(y[keep], s[keep] >= 0.5))
        assert any("items (< 30)" in w for w in groups["immigrants"]["warnings"])  # 20 items: flagged
        assert groups["women"]["warnings"] == []


def test_labelled_section_says_why_it_is_empty(tmp_path):
    _log(tmp_path / "none.sqlite", [("youtube", "k1", "hello", None, None, 0.2)])
    skip = labelled.analyze(load(tmp_path / "none.sqlite"))
    assert isinstance(skip, Skip) and "no gold labels: pass --label" in skip.reason
    _log(tmp_path / "unscored.sqlite", [("dataset:x", "k1", "hello", 1, None, 0.2)], detector_scores=False)
    skip = labelled.analyze(load(tmp_path / "unscored.sqlite"))
    assert isinstance(skip, Skip) and "no detector scored the 1 labelled comments" in skip.reason


def test_gold_label_values():
    assert [labelled.gold({"toxic": v}) for v in ("1", "0", "true", "False", "toxic", "")] == [1, 0, 1, 0, 1, None]
    assert labelled.gold({}) is None


def test_sass_section_intervals_and_categories_only(tmp_path):
    from modlens.analysis import sass

    db = tmp_path / "s.sqlite"
    with StudyLog(db) as log:
        det = log.ensure_detector("det", "v1", "toxicity", 0.5, {})
        page = log.ensure_page("dataset:sass", "f", None, None)
        for i in range(40):
            text, score = f"text {i}", (i % 10) / 10
            cid = log.add_comment("dataset:sass", f"row-{i}", page, text)
            log.add_label(cid, "category", "Sarcasm" if i % 2 else "Neutral", "dataset:sass")
            log.add_score(text, det, {"toxicity": score}, score, 1, None)
    (s,) = sass.analyze(load(db))["sources"]
    assert s["categories_only"] and "precision" not in s["detectors"][0]
    assert s["detectors"][0]["mean_by_category"] == {"Neutral": pytest.approx(0.4), "Sarcasm": pytest.approx(0.5)}
    with StudyLog(db) as log:
        for i in range(40):
            cid = log.comment_id("dataset:sass", f"row-{i}")
            log.add_label(cid, "human_score", "0.9" if i % 3 == 0 else "0.1", "dataset:sass")
            add_gold_labels(log, ensure_label_set(log, "dataset:sass", "human_score > 0.5"),
                            [(cid, "1" if i % 3 == 0 else "0")])
    (s,) = sass.analyze(load(db))["sources"]
    assert s["release"] and s["source"] == "dataset:sass"
    (d,) = s["detectors"]
    y, pred = [int(i % 3 == 0) for i in range(40)], [(i % 10) / 10 >= 0.5 for i in range(40)]
    assert not s["categories_only"] and d["f1"] == pytest.approx(f1_score(y, pred))
    assert d["ci"]["f1"][0] <= d["f1"] <= d["ci"]["f1"][1]


def test_fewer_resamples_only_for_very_large_data():
    assert metrics.resamples_for(5000) == metrics.resamples_for(metrics.resamples_cap_items()) == 1000
    assert metrics.resamples_for(400_000) == 500 and metrics.resamples_for(10_000_000) == 200


def test_a_detector_that_failed_or_skipped_rows_says_its_figures_rest_on_fewer(tmp_path):
    """Two detectors on the same 40 labelled comments: `full` scored all, `part` failed on 10 (score
    rows with an error) and never scored 5. The source heading says 40; part's figures are over 25,
    the others' over 40, so its column must say which rows it left out and why, not only n = 25."""
    from modlens.analysis.report import build, render_html

    db = tmp_path / "p.sqlite"
    with StudyLog(db) as log:
        full = log.ensure_detector("full", "v1", "toxicity", 0.5, {})
        part = log.ensure_detector("part", "v1", "toxicity", 0.5, {})
        page = log.ensure_page("dataset:x", "f", None, None)
        labels = ensure_label_set(log, "dataset:x", "toxic (test)")
        for i in range(40):
            text, score = f"text {i}", (i % 10) / 10
            cid = log.add_comment("dataset:x", f"k{i}", page, text)
            add_gold_labels(log, labels, [(cid, str(int(i % 10 >= 5)))])
            log.add_score(text, full, {"toxicity": score}, score, 1, None)
            if i < 10:
                log.add_score(text, part, None, None, 1, "timeout")
            elif i >= 15:
                log.add_score(text, part, {"toxicity": score}, score, 1, None)
    data = load(db)
    (src,) = labelled.analyze(data)["sources"]
    by_name = {d["detector"]: d for d in src["detectors"]}
    assert src["n"] == 40 and by_name["full"]["n"] == 40 and by_name["part"]["n"] == 25
    assert by_name["full"]["left_out"] == {"failed": 0, "not_scored": 0}
    assert by_name["part"]["left_out"] == {"failed": 10, "not_scored": 5}
    page_html = render_html(build(data))
    assert "scored 25 of the 40 labelled comments (10 failed, 5 not scored): its figures are over those 25" in page_html
    assert page_html.count("labelled comments (") == 1  # full scored every one: nothing said of it
