"""Ordered logistic regression (proportional odds), fitted by maximum likelihood with scipy.

P(y <= j | x) = logistic(theta_j - x·beta), j = 0..K-2. The cut points are parametrized as
theta_0 and log-increments, so they stay ordered during the search (the same parametrization
as statsmodels' OrderedModel, against which tests check this fit). Standard errors come from
the inverse of the numerical Hessian of the negative log-likelihood.

When the data are separated (`separation.py`) the MLE does not exist: the optimizer merely
stops somewhere along a ray to infinity. `fit(..., penalty="jeffreys")` then maximizes the
Firth-type penalized log-likelihood  l(beta, theta) + 1/2 log det I(beta, theta), I the expected
(Fisher) information in the (beta, cut point) parametrization: the posterior mode under the
Jeffreys prior, finite under separation because I vanishes as the coefficients grow (Firth 1993;
for cumulative link models Kosmidis 2014). Its standard errors are Wald errors from the observed
information of the unpenalized likelihood at that estimate (as logistf reports them): usable,
but approximate under separation, so callers label them.

`converged` is true only when the search settled on a finite minimum of its objective: it ended
before its iteration limit, the objective's gradient there is ~0 per row (GRAD_TOL), its Hessian
is positive definite (curvature in every direction), and, for the maximum-likelihood fit, the data
are not separated (then the likelihood has no maximum to settle on, whatever the optimizer says).
`convergence_note` says which of these failed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from modlens.analysis import separation
from modlens.errors import ModlensError

MAX_ITER = 2000   # BFGS iterations; the Nelder-Mead polish gets ten times as many
# Largest |gradient| per row (of the objective / n) at a converged estimate. Both objectives are
# sums over rows, so their gradient at the minimum (what the search leaves, plus the rounding error
# of the numerical difference) grows with n: an absolute limit of 1e-4 failed good fits from 50k
# rows on. Per row it does not grow: settled fits read 2e-9 to 3e-7 from 40 to 200k rows. A
# per-row gradient g leaves the estimate about g / c from the minimum along a direction of per-row
# curvature c, which is g * sqrt(n / c) standard errors: for the flattest direction of the
# overlapping test data (c ~ 0.008) and g = 1e-6, about 1% of a standard error at a million rows.
GRAD_TOL = 1e-6


class FitError(ModlensError, ValueError):
    """Too little or degenerate data for the model (the message says why)."""


@dataclass
class OrderedLogit:
    beta: np.ndarray          # one coefficient per predictor column
    cutpoints: np.ndarray     # K-1 ordered thresholds
    params: np.ndarray        # raw parameter vector: beta, theta_0, log increments
    cov: np.ndarray | None    # covariance of `params`
    loglik: float
    n: int
    n_levels: int
    converged: bool
    names: list[str] = field(default_factory=list)
    penalty: str | None = None  # None: maximum likelihood; "jeffreys": Firth-type penalized
    convergence_note: str | None = None  # why `converged` is false (None when it is true)

    def probabilities(self, X: np.ndarray) -> np.ndarray:
        """P(y = j | x) for every row of X: shape (n, K)."""
        eta = np.asarray(X, float) @ self.beta
        cdf = expit(self.cutpoints[None, :] - eta[:, None])
        cdf = np.hstack([np.zeros((len(eta), 1)), cdf, np.ones((len(eta), 1))])
        return np.diff(cdf, axis=1)

    def se(self) -> np.ndarray | None:
        return None if self.cov is None else np.sqrt(np.clip(np.diag(self.cov), 0, None))


def _cutpoints(raw: np.ndarray) -> np.ndarray:
    return np.concatenate([[raw[0]], raw[0] + np.cumsum(np.exp(raw[1:]))])


def _negloglik(params: np.ndarray, X: np.ndarray, y: np.ndarray, K: int) -> float:
    p = X.shape[1]
    beta, theta = params[:p], _cutpoints(params[p:])
    eta = X @ beta
    upper = np.where(y < K - 1, expit(theta[np.minimum(y, K - 2)] - eta), 1.0)
    lower = np.where(y > 0, expit(theta[np.maximum(y - 1, 0)] - eta), 0.0)
    return -float(np.sum(np.log(np.clip(upper - lower, 1e-300, None))))


def fisher_information(beta: np.ndarray, cutpoints: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Expected information of (beta, cut points): sum over rows and levels k of
    d pi_k d pi_k^T / pi_k, with pi_k = F(theta_k - eta) - F(theta_{k-1} - eta)."""
    n, p = X.shape
    K = len(cutpoints) + 1
    F = expit(cutpoints[None, :] - (X @ beta)[:, None])                 # n x (K-1)
    dens = np.hstack([np.zeros((n, 1)), F * (1 - F), np.zeros((n, 1))])  # f at theta_{-1..K-1}
    cdf = np.hstack([np.zeros((n, 1)), F, np.ones((n, 1))])
    pi = np.clip(np.diff(cdf, axis=1), 1e-300, None)                     # n x K
    A = np.zeros((n, K, p + K - 1))
    A[:, :, :p] = -(dens[:, 1:] - dens[:, :-1])[:, :, None] * X[:, None, :]  # d pi_k / d beta
    for k in range(K):
        if k < K - 1:
            A[:, k, p + k] += dens[:, k + 1]        # d pi_k / d theta_k
        if k > 0:
            A[:, k, p + k - 1] -= dens[:, k]        # d pi_k / d theta_{k-1}
    D = (A / np.sqrt(pi)[:, :, None]).reshape(n * K, p + K - 1)
    info: np.ndarray = D.T @ D
    return info


def _jeffreys_penalized(params: np.ndarray, X: np.ndarray, y: np.ndarray, K: int) -> float:
    p = X.shape[1]
    sign, logdet = np.linalg.slogdet(fisher_information(params[:p], _cutpoints(params[p:]), X))
    if sign <= 0 or not np.isfinite(logdet):
        return 1e300
    return _negloglik(params, X, y, K) - 0.5 * float(logdet)


def _hessian(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-4) -> np.ndarray:
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            e_i, e_j = np.eye(n)[i] * eps, np.eye(n)[j] * eps
            val = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j) + f(x - e_i - e_j)) / (4 * eps * eps)
            h[i, j] = h[j, i] = val
    return h


def fit(X: np.ndarray, outcomes: Sequence[int] | np.ndarray, n_levels: int, names: Sequence[str] | None = None,
        penalty: str | None = None, sep: separation.Separation | None = None) -> OrderedLogit:
    """`X` without an intercept column (the cut points play that role); `outcomes` in 0..n_levels-1.
    `penalty="jeffreys"`: the Firth-type penalized fit (module docstring), for separated data.
    `sep`: the caller's `separation.check(X, outcomes, n_levels)` of these same data, so that the
    maximum-likelihood fit's convergence check does not solve its LPs again (solved when not given)."""
    if penalty not in (None, "jeffreys"):
        raise ValueError(f"unknown penalty {penalty!r}; use None or 'jeffreys'")
    X = np.asarray(X, float)
    y = np.asarray(outcomes, int)
    if X.ndim != 2 or len(X) != len(y):
        raise FitError("X must be 2-D with one row per outcome")
    if len(y) < X.shape[1] + n_levels:
        raise FitError(f"{len(y)} observations are too few for {X.shape[1]} predictors and {n_levels} levels")
    if y.min() < 0 or y.max() >= n_levels:
        raise FitError(f"outcomes must lie in 0..{n_levels - 1}")
    if len(np.unique(y)) < 2:
        raise FitError("all outcomes are the same level; nothing to fit")
    # start: beta 0, cut points at the logits of the empirical cumulative shares
    share = np.clip(np.cumsum(np.bincount(y, minlength=n_levels))[:-1] / len(y), 0.02, 0.98)
    theta0 = np.log(share / (1 - share))
    theta0 = np.maximum.accumulate(theta0 + np.arange(len(theta0)) * 1e-3)
    start = np.concatenate([np.zeros(X.shape[1]), [theta0[0]], np.log(np.maximum(np.diff(theta0), 1e-2))])
    def f(params: np.ndarray) -> float:
        return _negloglik(params, X, y, n_levels)

    def objective(params: np.ndarray) -> float:
        return f(params) if penalty is None else _jeffreys_penalized(params, X, y, n_levels)

    res = minimize(objective, start, method="BFGS", options={"gtol": 1e-7, "maxiter": MAX_ITER})
    limit = MAX_ITER
    if not res.success:  # BFGS can stop on precision loss near the optimum; polish with Nelder-Mead
        res2 = minimize(objective, res.x, method="Nelder-Mead",
                        options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 10 * MAX_ITER})
        if res2.fun <= res.fun:
            res, limit = res2, 10 * MAX_ITER
    cov: np.ndarray | None
    hessian = _hessian(f, res.x)
    try:
        cov = np.linalg.inv(hessian)
        if not np.all(np.isfinite(cov)) or np.any(np.diag(cov) < 0):
            cov = None
    except np.linalg.LinAlgError:
        cov = None
    p = X.shape[1]
    # the maximum-likelihood fit minimized f itself: its convergence check reuses f's Hessian
    note = _unsettled(objective, res.x, res.nit >= limit, limit, X, y, n_levels, penalty, sep,
                      hessian if penalty is None else None)
    return OrderedLogit(beta=res.x[:p], cutpoints=_cutpoints(res.x[p:]), params=res.x, cov=cov,
                        loglik=-f(res.x), n=len(y), n_levels=n_levels, converged=note is None,
                        names=list(names or []), penalty=penalty, convergence_note=note)


def _unsettled(objective: Callable[[np.ndarray], float], x: np.ndarray, at_limit: bool, limit: int,
               X: np.ndarray, y: np.ndarray, n_levels: int, penalty: str | None,
               sep: separation.Separation | None, hessian: np.ndarray | None) -> str | None:
    """Why the search's end point `x` is not a settled, finite minimum of `objective` (None: it is).
    The optimizer's own success flag is not enough: on separated data it reports success on a
    flat stretch of likelihood far along the ray to infinity. `sep` and `hessian` (of `objective`
    at `x`), when given, are used instead of being computed again."""
    if at_limit:
        return f"stopped at its iteration limit ({limit}) before the search settled"
    if penalty is None:
        missing = sorted(set(range(n_levels)) - set(y.tolist()))
        if missing:
            return (f"level(s) {missing} never occur: their cut points are not identified, so the "
                    "likelihood has no maximum")
        if sep is None:
            sep = separation.check(X, y, n_levels)
        if sep.kind is not None:
            return (f"the data are separated ({sep.kind}): the likelihood keeps rising as the coefficients "
                    "grow, so there is no maximum to converge to")
    eps = 1e-6
    grad = np.array([(objective(x + e) - objective(x - e)) / (2 * eps) for e in np.eye(len(x)) * eps]) / len(y)
    if not np.all(np.isfinite(grad)) or np.abs(grad).max() > GRAD_TOL:
        return (f"the gradient has not settled (largest |gradient| per row {np.abs(grad).max():.2g} "
                f"> {GRAD_TOL:g})")
    if hessian is None:
        hessian = _hessian(objective, x)
    try:
        if not np.all(np.isfinite(hessian)):
            raise np.linalg.LinAlgError("non-finite Hessian")
        np.linalg.cholesky(hessian)
    except np.linalg.LinAlgError:
        return "the Hessian is not positive definite: the estimate is not a determined minimum"
    return None


def crossing(model: OrderedLogit, x_other: np.ndarray, score_index: int = 0,
             level: int | None = None) -> tuple[float | None, float | None]:
    """Score at which P(y >= level) = 0.5 (default: the top level), with the other predictors
    fixed at `x_other` (its entry at `score_index` is ignored), and its delta-method standard error.

    P(y >= level) = 1 - logistic(theta_{level-1} - x·beta) = 0.5  <=>  x·beta = theta_{level-1}.
    """
    level = model.n_levels - 1 if level is None else level
    if not 1 <= level < model.n_levels:
        raise ValueError(f"level must be in 1..{model.n_levels - 1}")
    b = model.beta
    if abs(b[score_index]) < 1e-12:
        return None, None
    x = np.asarray(x_other, float).copy()
    x[score_index] = 0.0
    cut = level - 1
    theta = model.cutpoints[cut]
    s = (theta - x @ b) / b[score_index]
    if model.cov is None:
        return float(s), None
    # gradient of s w.r.t. the raw parameters (beta, theta_0, log increments)
    p = len(b)
    grad = np.zeros_like(model.params)
    grad[:p] = -x / b[score_index]
    grad[score_index] = -(theta - x @ b) / b[score_index] ** 2
    raw = model.params[p:]
    grad[p] = 1.0 / b[score_index]                                  # d theta_cut / d theta_0
    grad[p + 1:p + 1 + cut] = np.exp(raw[1:1 + cut]) / b[score_index]  # d theta_cut / d log increment
    var = float(grad @ model.cov @ grad)
    return float(s), float(np.sqrt(var)) if var >= 0 else None


Z95 = 1.959963984540054  # standard normal 97.5% quantile


@dataclass
class CrossingInterval:
    estimate: float | None
    se: float | None
    ci: tuple[float, float] | None  # estimate ± 1.96 se (delta method)
    # Fieller: the exact confidence set of a ratio (theta - x·b) / b_score is a bounded interval only
    # when the Wald test rejects b_score = 0 at the same level; otherwise it is unbounded and the
    # delta-method interval above means nothing. None when there is no standard error.
    bounded: bool | None


def crossing_interval(model: OrderedLogit, x_other: np.ndarray, score_index: int = 0,
                      level: int | None = None, z: float = Z95) -> CrossingInterval:
    """`crossing` with its 95% delta-method interval and Fieller's boundedness check."""
    s, se = crossing(model, x_other, score_index, level)
    if s is None or se is None or model.cov is None:
        return CrossingInterval(s, se, None, None)
    var_b = float(model.cov[score_index, score_index])
    bounded = var_b > 0 and model.beta[score_index] ** 2 / var_b > z * z
    return CrossingInterval(s, se, (s - z * se, s + z * se), bool(bounded))
