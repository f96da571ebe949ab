"""Krippendorff's alpha for ordinal ratings (seed 003, Table 4), from the coincidence matrix.

alpha = 1 - D_o / D_e, with the ordinal distance of Krippendorff (2011): the squared number of
pairable values lying between two categories, counting the end categories by half. Units with
fewer than two ratings carry no pairable value and are ignored; raters may be missing anywhere.
"""
from __future__ import annotations

from typing import Hashable, Iterable, Mapping, Sequence

import numpy as np


def coincidences(units: Iterable[Sequence[int]], n_levels: int) -> np.ndarray:
    """o[c, k]: pairs of values (c, k) within units, each unit weighted by 1 / (m_u - 1)."""
    o = np.zeros((n_levels, n_levels))
    for values in units:
        m = len(values)
        if m < 2:
            continue
        counts = np.bincount(np.asarray(values, dtype=int), minlength=n_levels).astype(float)
        o += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    return o


def ordinal_distance(marginals: np.ndarray) -> np.ndarray:
    """delta^2[c, k] = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2."""
    k = len(marginals)
    cum = np.concatenate([[0.0], np.cumsum(marginals)])
    d = np.zeros((k, k))
    for a in range(k):
        for b in range(a, k):
            d[a, b] = d[b, a] = (cum[b + 1] - cum[a] - (marginals[a] + marginals[b]) / 2) ** 2
    return d


def alpha_ordinal(units: Iterable[Sequence[int]], n_levels: int) -> float | None:
    """`units`: per comment, the level indices (0..n_levels-1) its raters gave. None when
    there is nothing to compare (fewer than two pairable values, or a single level used)."""
    o = coincidences(units, n_levels)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if n < 2:
        return None
    delta = ordinal_distance(n_c)
    expected = (np.outer(n_c, n_c) * delta).sum()
    if expected == 0:
        return None
    observed = (o * delta).sum()
    return float(1.0 - (n - 1) * observed / expected)


def alpha_from_ratings(ratings: Mapping[Hashable, Sequence[str]], levels: Sequence[str]) -> float | None:
    """Same, with the levels given as labels (in their order)."""
    index = {lv: i for i, lv in enumerate(levels)}
    return alpha_ordinal(([index[v] for v in vals if v in index] for vals in ratings.values()), len(levels))


def agreement_label(alpha: float | None) -> str:
    """Landis & Koch benchmarks, as the paper reads them."""
    if alpha is None:
        return "n/a"
    for bound, label in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if alpha <= bound:
            return label
    return "near perfect"
