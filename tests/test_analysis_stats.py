"""Each statistic against an independent reference implementation, on data with a known answer."""
import warnings

import numpy as np
import pytest

from modlens.analysis import alpha, majority, metrics, ordlogit, raters
from modlens.metrics import accuracy, roc_auc


def _noisy_ratings(rng, n_units=50, n_raters=6, k=4, missing=0.3):
    truth = rng.integers(0, k, n_units)
    data = np.clip(truth[None, :] + rng.integers(-1, 2, (n_raters, n_units)), 0, k - 1).astype(float)
    data[rng.random(data.shape) < missing] = np.nan
    return data


@pytest.mark.parametrize("seed", range(4))
def test_alpha_matches_krippendorff_package(seed):
    import krippendorff
    data = _noisy_ratings(np.random.default_rng(seed))
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    units = [[int(v) for v in data[:, u] if not np.isnan(v)] for u in range(data.shape[1])]
    assert alpha.alpha_ordinal(units, 4) == pytest.approx(ref, abs=1e-10)


def test_alpha_reproduces_krippendorffs_worked_example():
    """Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: 4 observers, 12
    units, values 1-5, missing data; the paper prints ordinal alpha = 0.815."""
    observers = ["1 2 3 3 2 1 4 1 2 . . .", "1 2 3 3 2 2 4 1 2 5 . 3", ". 3 3 3 2 3 4 2 2 5 1 .",
                 "1 2 3 3 2 4 4 1 2 5 1 ."]
    rows = [row.split() for row in observers]
    units = [[int(r[u]) - 1 for r in rows if r[u] != "."] for u in range(12)]
    assert alpha.alpha_ordinal(units, 5) == pytest.approx(0.815, abs=5e-4)


def test_alpha_known_values():
    assert alpha.alpha_ordinal([[0, 0], [1, 1], [2, 2, 2]], 3) == pytest.approx(1.0)
    assert alpha.alpha_ordinal([[0], [1]], 3) is None            # nothing pairable
    assert alpha.alpha_ordinal([[1, 1], [1, 1]], 3) is None      # one level only: undefined
    assert alpha.alpha_ordinal([[0, 2], [2, 0], [0, 2]], 3) < 0  # systematic disagreement
    levels = ["not toxic", "hard to say", "toxic"]
    assert alpha.alpha_from_ratings({1: ["toxic", "toxic"], 2: ["not toxic", "not toxic"]}, levels) == pytest.approx(1.0)


def test_ordered_logit_matches_statsmodels():
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    rng = np.random.default_rng(3)
    n = 400
    score, platform = rng.random(n), rng.integers(0, 3, n)
    X = np.column_stack([score, platform == 1, platform == 2]).astype(float)
    y = np.digitize(X @ [6.0, -1.0, 0.7] + rng.logistic(size=n), [2.0, 3.5])
    ours = ordlogit.fit(X, y, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = OrderedModel(y, X, distr="logit").fit(method="bfgs", disp=False, maxiter=2000)
    assert ours.params == pytest.approx(ref.params, abs=1e-3)
    assert ours.loglik == pytest.approx(ref.llf, abs=1e-6)
    assert ours.se() == pytest.approx(ref.bse, rel=1e-3)
    assert ours.probabilities(X[:5]) == pytest.approx(ref.predict(X[:5]), abs=1e-4)


def test_crossing_is_where_top_probability_is_one_half():
    rng = np.random.default_rng(5)
    s = rng.random(600)
    y = np.digitize(10 * (s - 0.6) + 1.5 + rng.logistic(size=600), [0.0, 1.5])  # P(top) = 0.5 at s = 0.6
    model = ordlogit.fit(s[:, None], y, 3)
    cross, se = ordlogit.crossing(model, np.zeros(1))
    assert model.probabilities(np.array([[cross]]))[0, 2] == pytest.approx(0.5, abs=1e-9)
    assert abs(cross - 0.6) < 3 * se and 0 < se < 0.05


def test_fit_refuses_degenerate_data():
    with pytest.raises(ordlogit.FitError, match="same level"):
        ordlogit.fit(np.random.rand(20, 1), np.zeros(20, int), 3)


def test_auc_and_prf_match_scikit_learn():
    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score

    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 300)
    s = np.round(np.clip(0.3 * y + rng.normal(0.4, 0.2, 300), 0, 1), 2)  # rounded: ties included
    assert roc_auc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    pred = metrics.predict(s, 0.5)
    assert accuracy(s, y, 0.5) == pytest.approx(accuracy_score(y, pred))
    prf = metrics.precision_recall_f1(pred, y)
    assert prf["precision"] == pytest.approx(precision_score(y, pred))
    assert prf["recall"] == pytest.approx(recall_score(y, pred))
    assert prf["f1"] == pytest.approx(f1_score(y, pred))
    assert roc_auc(s, np.ones(300)) is None


def test_area_under_accuracy_curve_of_toxic_set_is_the_mean_score():
    # all texts toxic: accuracy(t) = P(score >= t), whose integral over [0, 1] is E[score]
    s = np.random.default_rng(1).random(2000)
    t = np.linspace(0, 1, 2001)
    assert metrics.area(metrics.accuracy_curve(s, np.ones_like(s), t), t) == pytest.approx(s.mean(), abs=1e-3)


@pytest.mark.parametrize("attr,values,expected", [
    ("toxicity", ["toxic", "toxic", "hard to say"], ("toxic", "mode")),
    ("toxicity", ["toxic", "toxic", "hard to say", "hard to say"], ("toxic", "tie rule")),
    ("toxicity", ["not toxic", "hard to say"], ("not toxic", "tie rule")),
    ("toxicity", ["not toxic", "not toxic", "toxic", "toxic"], ("hard to say", "tie rule")),
    ("toxicity", ["not toxic", "hard to say", "toxic"], (None, "tie dropped")),
    ("formality", ["formal", "very formal"], ("formal", "tie rule")),
    ("formality", ["informal", "very informal"], ("informal", "tie rule")),
    ("formality", ["formal", "informal"], (None, "tie dropped")),
    ("respectfulness", ["disrespectful", "slightly disrespectful"], ("disrespectful", "tie rule")),
    ("respectfulness", ["respectful", "partially respectful"], ("respectful", "tie rule")),
    ("stereotypes", ["possibly present", "present"], ("possibly present", "tie rule")),
    ("stereotypes", ["possibly present", "heavily present"], ("present", "tie rule")),
    ("stereotypes", ["heavily present", "present"], ("heavily present", "tie rule")),
    ("stereotypes", ["not present", "present"], (None, "tie dropped")),
    ("custom", ["a", "b"], (None, "tie dropped")),
    ("toxicity", [], (None, "no ratings")),
])
def test_majority_tie_rules_tables_13_and_15(attr, values, expected):
    assert majority.majority(attr, values) == expected


@pytest.mark.parametrize("counts,decision", [
    ((0, 0, 2), raters.USE), ((0, 0, 3), raters.USE), ((0, 1, 1), raters.USE), ((0, 1, 2), raters.USE),
    ((0, 2, 0), raters.USE), ((0, 2, 1), raters.DONT_USE), ((0, 2, 2), raters.REJECT),
    ((1, 0, 1), raters.USE), ((1, 0, 2), raters.DONT_USE), ((1, 1, 0), raters.USE), ((1, 1, 1), raters.DONT_USE),
    ((1, 2, 0), raters.DONT_USE), ((1, 2, 1), raters.REJECT), ((2, 0, 0), raters.DONT_USE),
    ((2, 0, 1), raters.DONT_USE), ((2, 0, 2), raters.REJECT), ((2, 1, 0), raters.DONT_USE), ((2, 1, 1), raters.REJECT),
    ((0, 0, 4), raters.REJECT), ((0, 3, 0), raters.REJECT),
])
def test_table_11_rubric(counts, decision):
    assert raters.rubric(*counts) == decision
