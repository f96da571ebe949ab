"""Does the ordered logit's maximum-likelihood estimate exist? A linear-programming test for
complete and quasi-complete separation (Albert & Anderson 1984; the LP form of Konis 2007),
extended to the cut points of a proportional-odds model.

With cut points theta_j and linear predictor eta_i = x_i·beta, an outcome y_i = k has
likelihood F(theta_k - eta_i) - F(theta_{k-1} - eta_i). Moving the parameters along a direction
d = (b, t) never lowers that likelihood when
    t_k - x_i·b >= 0        (if k is not the top level)  and
    x_i·b - t_{k-1} >= 0    (if k is not the bottom level),
and raises it strictly when either is > 0. So the MLE is finite if and only if no direction
satisfies every such inequality with at least one strict: otherwise the likelihood keeps rising
towards its supremum as the coefficients run to infinity (the "706.9, converged" of a fit that
merely stopped). Two LPs over the box -1 <= d <= 1 decide it:
  1. maximize the sum of the margins subject to every margin >= 0: optimum 0 -> overlap (the
     MLE exists); > 0 -> separation;
  2. maximize s subject to every margin >= s: s > 0 -> *complete* separation (some direction
     classifies every outcome strictly: a threshold of x·b splits the levels with no overlap);
     otherwise *quasi-complete* (the split holds only with ties on a boundary).
The test needs every level 0..K-1 to occur (a level nobody chose has no identified cut point;
callers drop such levels first). The direction found names the predictors involved: e.g. the
score (it orders the levels perfectly), or a platform indicator (every comment on that platform
has the same level at an end of the scale).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linprog

TOL = 1e-6  # LP margins below this count as zero (HiGHS feasibility tolerance is 1e-7)


@dataclass
class Separation:
    kind: str | None                  # "complete", "quasi" or None (overlap: the MLE exists)
    involved: list[int] = field(default_factory=list)  # predictor columns with a nonzero direction entry


def _margins(X: np.ndarray, y: np.ndarray, n_levels: int) -> np.ndarray:
    """Rows m such that m·d >= 0 is one inequality of the module docstring, d = (b, t)."""
    p = X.shape[1]
    upper, lower = y < n_levels - 1, y > 0
    up = np.zeros((int(upper.sum()), p + n_levels - 1))      # t_k - x_i·b >= 0
    up[:, :p] = -X[upper]
    up[np.arange(len(up)), p + y[upper]] = 1.0
    lo = np.zeros((int(lower.sum()), p + n_levels - 1))      # x_i·b - t_{k-1} >= 0
    lo[:, :p] = X[lower]
    lo[np.arange(len(lo)), p + y[lower] - 1] = -1.0
    return np.vstack([up, lo])


def check(X: np.ndarray, y: np.ndarray, n_levels: int) -> Separation:
    """`X` without an intercept column, `y` in 0..n_levels-1 with every level present."""
    X, y = np.asarray(X, float), np.asarray(y, int)
    if set(np.unique(y).tolist()) != set(range(n_levels)):
        raise ValueError("every level 0..n_levels-1 must occur (drop the unused ones first)")
    M = _margins(X, y, n_levels)
    n_var = M.shape[1]
    bounds = [(-1.0, 1.0)] * n_var
    # LP 1: max sum(M d) s.t. M d >= 0
    first = linprog(-M.sum(axis=0), A_ub=-M, b_ub=np.zeros(len(M)), bounds=bounds, method="highs")
    if first.status != 0 or (M @ first.x).max() <= TOL:
        return Separation(None)
    # LP 2: max s s.t. M d - s >= 0, s <= 1 (variables d, s)
    c = np.zeros(n_var + 1)
    c[-1] = -1.0
    second = linprog(c, A_ub=np.hstack([-M, np.ones((len(M), 1))]), b_ub=np.zeros(len(M)),
                     bounds=bounds + [(None, 1.0)], method="highs")
    complete = second.status == 0 and -second.fun > TOL
    d = second.x[:n_var] if complete else first.x
    b = d[:X.shape[1]]
    involved = [j for j in range(X.shape[1]) if abs(b[j]) > TOL]
    return Separation("complete" if complete else "quasi", involved)
