"""Ordered logistic regression (proportional odds), fitted by maximum likelihood with scipy.

P(y <= j | x) = logistic(theta_j - x·beta), j = 0..K-2. The cut points are parametrized as
theta_0 and log-increments, so they stay ordered during the search (the same parametrization
as statsmodels' OrderedModel, against which tests check this fit). Standard errors come from
the inverse of the numerical Hessian of the negative log-likelihood.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit


class FitError(ValueError):
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


def _hessian(f, x: np.ndarray, eps: float = 1e-4) -> np.ndarray:
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            e_i, e_j = np.eye(n)[i] * eps, np.eye(n)[j] * eps
            val = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j) + f(x - e_i - e_j)) / (4 * eps * eps)
            h[i, j] = h[j, i] = val
    return h


def fit(X: np.ndarray, y: Sequence[int], n_levels: int, names: Sequence[str] | None = None) -> OrderedLogit:
    """`X` without an intercept column (the cut points play that role); `y` in 0..n_levels-1."""
    X = np.asarray(X, float)
    y = np.asarray(y, int)
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
    f = lambda p: _negloglik(p, X, y, n_levels)  # noqa: E731
    res = minimize(f, start, method="BFGS", options={"gtol": 1e-7, "maxiter": 2000})
    if not res.success:  # BFGS can stop on precision loss near the optimum; polish with Nelder-Mead
        res2 = minimize(f, res.x, method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 20000})
        res = res2 if res2.fun <= res.fun else res
    try:
        cov = np.linalg.inv(_hessian(f, res.x))
        if not np.all(np.isfinite(cov)) or np.any(np.diag(cov) < 0):
            cov = None
    except np.linalg.LinAlgError:
        cov = None
    p = X.shape[1]
    return OrderedLogit(beta=res.x[:p], cutpoints=_cutpoints(res.x[p:]), params=res.x, cov=cov,
                        loglik=-float(res.fun), n=len(y), n_levels=n_levels,
                        converged=bool(res.success) or cov is not None, names=list(names or []))


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
