"""Statistical safeguards of the people and human sections: separation in the ordered logit is
detected (complete, quasi, none) and answered with a Firth-type penalized fit; crossings carry
95% intervals; alpha carries a seeded bootstrap interval; small samples are warned about."""
import warnings

import numpy as np
import pytest
from scipy.special import expit

from modlens.analysis import alpha, ordlogit, separation, synthetic
from modlens.analysis.report import render_html, report_from_db


def _separated(rng, n=150):
    s = rng.random(n)
    return s, np.digitize(s, [0.3, 0.7])  # a score threshold splits every level: complete separation


# --- the separation test ------------------------------------------------------------------------

def test_complete_separation_is_detected_and_the_ml_fit_diverges():
    s, y = _separated(np.random.default_rng(0))
    assert separation.check(s[:, None], y, 3) == separation.Separation("complete", [0])
    ml = ordlogit.fit(s[:, None], y, 3)
    assert ml.beta[0] > 200  # the bug report's "706.9, converged": the optimizer just stopped on the way to infinity


def test_quasi_separation_overlap_only_at_ties():
    s, y = _separated(np.random.default_rng(1))
    s, y = np.r_[s, 0.7, 0.7], np.r_[y, 1, 2]  # the two upper levels meet at one tied score
    assert separation.check(s[:, None], y, 3).kind == "quasi"


def test_a_platform_with_a_single_level_is_quasi_separation_by_that_platform():
    rng = np.random.default_rng(2)
    s, platform = rng.random(300), rng.integers(0, 3, 300)
    y = np.digitize(4 * s + rng.logistic(size=300), [1.5, 3.0])
    y[platform == 2] = 0  # every comment on platform 2 is "not toxic"
    X = np.column_stack([s, platform == 1, platform == 2]).astype(float)
    assert separation.check(X, y, 3) == separation.Separation("quasi", [2])


def test_overlapping_data_do_not_warn_and_still_match_statsmodels():
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    rng = np.random.default_rng(3)
    n = 400
    score, platform = rng.random(n), rng.integers(0, 3, n)
    X = np.column_stack([score, platform == 1, platform == 2]).astype(float)
    y = np.digitize(X @ [6.0, -1.0, 0.7] + rng.logistic(size=n), [2.0, 3.5])
    assert separation.check(X, y, 3).kind is None
    ours = ordlogit.fit(X, y, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = OrderedModel(y, X, distr="logit").fit(method="bfgs", disp=False, maxiter=2000)
    assert ours.penalty is None and ours.params == pytest.approx(ref.params, abs=1e-3)


def test_separation_needs_every_level():
    with pytest.raises(ValueError, match="every level"):
        separation.check(np.random.rand(10, 1), np.zeros(10, int), 2)


# --- the penalized fit --------------------------------------------------------------------------

def test_penalized_fit_is_finite_and_crosses_in_the_gap():
    s, y = _separated(np.random.default_rng(0))
    model = ordlogit.fit(s[:, None], y, 3, penalty="jeffreys")
    assert model.converged and model.penalty == "jeffreys" and 0 < model.beta[0] < 1e3
    c = ordlogit.crossing_interval(model, np.zeros(1))
    gap = (s[y < 2].max(), s[y == 2].min())  # any point here separates the top level
    assert gap[0] - 0.01 < c.estimate < gap[1] + 0.01
    assert c.ci[0] < c.estimate < c.ci[1] and c.bounded


def test_binary_penalized_fit_solves_firths_modified_score_equations():
    """Two levels: the cumulative logit is logistic regression, and the Jeffreys-penalized mode
    solves Firth's (1993) equations sum_i (y_i - p_i + h_i (1/2 - p_i)) x_i = 0 (h: hat values)."""
    rng = np.random.default_rng(4)
    s = rng.random(60)
    y = (s > 0.55).astype(int)
    y[[3, 7]] = 1 - y[[3, 7]]  # two flips keep the MLE finite but far from the penalized mode
    model = ordlogit.fit(s[:, None], y, 2, penalty="jeffreys")
    Z = np.column_stack([np.ones_like(s), s])           # P(y=1) = logistic(score·beta - theta)
    p = expit(Z @ [-model.cutpoints[0], model.beta[0]])
    W = p * (1 - p)
    h = W * np.einsum("ij,jk,ik->i", Z, np.linalg.inv(Z.T @ (Z * W[:, None])), Z)
    assert Z.T @ (y - p + h * (0.5 - p)) == pytest.approx([0, 0], abs=1e-4)


def test_fisher_information_is_the_expected_observed_information():
    """I = sum_i sum_k pi_ik * Hessian of -log pi_ik, with the Hessian taken numerically."""
    rng = np.random.default_rng(5)
    X = rng.random((6, 2))
    beta, cut = np.array([1.5, -0.7]), np.array([-0.3, 0.4, 1.2])
    theta = np.r_[beta, cut]

    def neg_log_pi(t, x, k):
        cdf = np.r_[0.0, expit(t[2:] - x @ t[:2]), 1.0]
        return -np.log(cdf[k + 1] - cdf[k])

    eps, expected = 1e-4, np.zeros((5, 5))
    for x in X:
        probs = np.diff(np.r_[0.0, expit(cut - x @ beta), 1.0])
        for k, pk in enumerate(probs):
            f = lambda t, x=x, k=k: neg_log_pi(t, x, k)  # noqa: E731
            E = np.eye(5) * eps
            H = np.array([[(f(theta + E[i] + E[j]) - f(theta + E[i] - E[j]) - f(theta - E[i] + E[j])
                            + f(theta - E[i] - E[j])) / (4 * eps * eps) for j in range(5)] for i in range(5)])
            expected += pk * H
    assert ordlogit.fisher_information(beta, cut, X) == pytest.approx(expected, abs=1e-5)


def test_crossing_interval_is_unbounded_when_the_score_does_not_matter():
    rng = np.random.default_rng(6)
    s = rng.random(200)
    y = np.digitize(rng.logistic(size=200), [-0.5, 0.5])  # unrelated to the score
    c = ordlogit.crossing_interval(ordlogit.fit(s[:, None], y, 3), np.zeros(1))
    assert c.bounded is False


def test_unknown_penalty_is_an_error():
    with pytest.raises(ValueError, match="unknown penalty"):
        ordlogit.fit(np.random.rand(20, 1), np.arange(20) % 2, 2, penalty="ridge")


# --- alpha's bootstrap interval -----------------------------------------------------------------

def _units(rng, n_units=100, n_raters=3, k=4):
    truth = rng.integers(0, k, n_units)
    return [list(np.clip(t + rng.integers(-1, 2, n_raters), 0, k - 1)) for t in truth]


def test_alpha_interval_covers_the_value_and_is_reproducible():
    units = _units(np.random.default_rng(7))
    a = alpha.alpha_ordinal(units, 4)
    ci = alpha.bootstrap_interval(units, 4, seed=11)
    assert ci.low < a < ci.high and ci.replicates == 1000
    assert alpha.bootstrap_interval(units, 4, seed=11) == ci
    assert alpha.bootstrap_interval(units, 4, seed=12) != ci
    assert alpha.bootstrap_interval([[0, 1]], 4) is None  # one pairable unit: nothing to resample


def test_alpha_interval_width_matches_the_sampling_spread():
    """The bootstrap interval's width is that of alpha over fresh samples from the same raters
    (the spread it is meant to estimate): within a factor 1.5 of 3.92 sampling SDs."""
    rng = np.random.default_rng(8)
    spread = np.std([alpha.alpha_ordinal(_units(rng), 4) for _ in range(300)])
    ci = alpha.bootstrap_interval(_units(rng), 4, seed=0)
    assert 1 / 1.5 < (ci.high - ci.low) / (3.92 * spread) < 1.5


# --- the report ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("safeguards")
    # raters without noise and a step-function truth: every platform's levels split at a score
    synthetic.generate(d / "sep.sqlite", synthetic.SyntheticSpec(seed=2, slope=1e4, noise=(0.0, 0.0), inconsistency=0.0))
    synthetic.generate(d / "small.sqlite", synthetic.SyntheticSpec(seed=3, comments_per_platform=8))
    synthetic.generate(d / "normal.sqlite", synthetic.SyntheticSpec(seed=1))
    return {k: report_from_db(d / f"{k}.sqlite") for k in ("sep", "small", "normal")}


def test_report_flags_separation_and_shows_the_penalized_fit(logs):
    fit = logs["sep"]["sections"]["people"]["detectors"][0]["attributes"]["toxicity"]
    assert fit["separation"] == "complete" and "score" in fit["separated_by"]
    assert fit["estimator"].startswith("Firth") and fit["reliable"]
    assert any("complete separation" in w for w in fit["warnings"])
    planted = {"news": 0.45, "youtube": 0.55, "twitter": 0.65}
    for p, e in fit["platforms"].items():
        assert abs(e["crossing_top"] - planted[p]) < 0.02
        assert "penalized" in e["crossing_top_ci_note"]
    page = render_html(logs["sep"])
    assert "⚠ penalized (complete separation)" in page and "complete separation by score" in page


def test_report_on_overlapping_data_has_no_separation_warning(logs):
    people = logs["normal"]["sections"]["people"]
    fit = people["detectors"][0]["attributes"]["toxicity"]
    assert fit["separation"] is None and fit["estimator"] == "maximum likelihood" and fit["warnings"] == []
    for e in fit["platforms"].values():
        lo, hi = e["crossing_top_ci"]
        assert lo < e["crossing_top"] < hi and e["crossing_top_ci_note"] is None
        assert hi - lo == pytest.approx(2 * 1.959964 * e["crossing_top_se"], rel=1e-6)
    assert "separation by" not in render_html(logs["normal"])
    for a in logs["normal"]["sections"]["human"]["attributes"]:
        assert a["alpha_ci"][0] < a["alpha"] < a["alpha_ci"][1] and a["warnings"] == []


def test_report_warns_about_small_samples(logs):
    s = logs["small"]["sections"]
    fit = s["people"]["detectors"][0]["attributes"]["toxicity"]
    assert sum("fewer than 30" in w for w in fit["warnings"]) == 3  # one per platform, 8 comments each
    assert all("only 8 comments" in (e["crossing_top_ci_note"] or "") for e in fit["platforms"].values())
    tox = next(a for a in s["human"]["attributes"] if a["name"] == "toxicity")
    assert any("fewer than 30" in w for w in tox["warnings"])
    page = render_html(logs["small"])
    assert "alpha rests on 24 comments" in page and "fewer than 30): its shift" in page


def test_alpha_interval_in_the_report_is_reproducible(logs, tmp_path):
    db = tmp_path / "again.sqlite"
    synthetic.generate(db, synthetic.SyntheticSpec(seed=1))
    again = report_from_db(db)["sections"]["human"]["attributes"]
    assert [a["alpha_ci"] for a in again] == [a["alpha_ci"] for a in logs["normal"]["sections"]["human"]["attributes"]]


# --- convergence: "converged" says the search settled on a finite minimum --------------------------

def _overlapping(n=400):
    rng = np.random.default_rng(3)
    score, platform = rng.random(n), rng.integers(0, 3, n)
    X = np.column_stack([score, platform == 1, platform == 2]).astype(float)
    return X, np.digitize(X @ [6.0, -1.0, 0.7] + rng.logistic(size=n), [2.0, 3.5])


def test_ml_fit_on_separated_data_is_not_converged():
    """The likelihood of separated data rises without bound as the score coefficient grows: the
    search stops on the way to infinity, and its Hessian may even invert there. Not converged."""
    for s, y in (_separated(np.random.default_rng(0)), _separated(np.random.default_rng(9), n=40)):
        ml = ordlogit.fit(s[:, None], y, 3)
        assert not ml.converged and "separat" in ml.convergence_note
        penalized = ordlogit.fit(s[:, None], y, 3, penalty="jeffreys")  # finite by construction
        assert penalized.converged and penalized.convergence_note is None


def test_ml_fit_on_overlapping_data_is_converged():
    X, y = _overlapping()
    model = ordlogit.fit(X, y, 3)
    assert model.converged and model.convergence_note is None and model.cov is not None


def test_fit_stopped_at_its_iteration_limit_is_not_converged(monkeypatch):
    X, y = _overlapping()
    monkeypatch.setattr(ordlogit, "MAX_ITER", 3)  # a real search, cut short: its Hessian still inverts
    model = ordlogit.fit(X, y, 3)
    assert model.cov is not None
    assert not model.converged and "iteration limit" in model.convergence_note


def test_report_says_a_fit_that_stopped_at_its_iteration_limit_did_not_converge(tmp_path, monkeypatch):
    db = tmp_path / "study.sqlite"
    synthetic.generate(db, synthetic.SyntheticSpec(seed=1))
    fit = report_from_db(db)["sections"]["people"]["detectors"][0]["attributes"]["toxicity"]
    assert fit["converged"] and fit["reliable"]
    monkeypatch.setattr(ordlogit, "MAX_ITER", 3)
    report = report_from_db(db)
    fit = report["sections"]["people"]["detectors"][0]["attributes"]["toxicity"]
    assert fit["converged"] is False and fit["reliable"] is False
    assert any("iteration limit" in w for w in fit["warnings"])
    assert "UNRELIABLE" in render_html(report)


def test_ml_fit_on_a_hundred_thousand_overlapping_rows_is_converged():
    """The objective is a sum over rows, so its gradient at the minimum (and the rounding error of
    the numerical gradient) grows with n: an absolute limit called this good fit unsettled at 100k
    rows (largest |gradient| 1.3e-3) while it matched statsmodels within 8e-5."""
    X, y = _overlapping(100_000)
    model = ordlogit.fit(X, y, 3)
    assert model.converged and model.convergence_note is None
    assert model.params == pytest.approx([6.0, -1.0, 0.7, 2.0, np.log(1.5)], abs=0.1)  # the planted model
    # the per-row limit still tells an end point off the minimum: 1e-3 in the score coefficient
    # (a thirtieth of its standard error here) leaves a gradient per row of ~1e-4
    def f(params):
        return ordlogit._negloglik(params, X, y, 3)
    off = model.params + np.r_[1e-3, 0.0, 0.0, 0.0, 0.0]
    note = ordlogit._unsettled(f, off, False, ordlogit.MAX_ITER, X, y, 3, None, separation.Separation(None), None)
    assert note is not None and "gradient has not settled" in note


def test_ml_fit_uses_the_callers_separation_check_and_computes_its_hessian_once(monkeypatch):
    X, y = _overlapping()
    checks, hessians = [], []
    real_check, real_hessian = separation.check, ordlogit._hessian
    monkeypatch.setattr(separation, "check", lambda *a: checks.append(1) or real_check(*a))
    monkeypatch.setattr(ordlogit, "_hessian", lambda *a: hessians.append(1) or real_hessian(*a))
    sep = separation.check(X, y, 3)
    model = ordlogit.fit(X, y, 3, sep=sep)
    assert model.converged and len(checks) == 1 and len(hessians) == 1  # the one for the covariance
    assert ordlogit.fit(X, y, 3).converged and len(checks) == 2  # not given: fit checks itself
    s, y_sep = _separated(np.random.default_rng(0))
    model = ordlogit.fit(s[:, None], y_sep, 3, sep=separation.check(s[:, None], y_sep, 3))
    assert not model.converged and "separat" in model.convergence_note
