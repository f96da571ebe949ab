"""Krippendorff's alpha for ordinal ratings (the human-centred Perspective study, Table 4), from the coincidence matrix.

alpha = 1 - D_o / D_e, with the ordinal distance of Krippendorff (2011): the squared number of
pairable values lying between two categories, counting the end categories by half. Units with
fewer than two ratings carry no pairable value and are ignored; raters may be missing anywhere.

Its uncertainty: a percentile bootstrap over comments (units resampled with replacement, each
replicate's alpha from the summed per-unit coincidence matrices), seeded, so the same log and seed
give the same interval. Resampling units rather than single values keeps each comment's ratings
together, the dependence alpha is about (cluster bootstrap; Krippendorff's own bootstrap, Hayes &
Krippendorff 2007, resamples pairs of values instead and comes out a little narrower).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np


def unit_coincidences(units: Iterable[Sequence[int]], n_levels: int) -> np.ndarray:
    """Per pairable unit (two or more values) its coincidence matrix: shape (units, n_levels, n_levels)."""
    out = []
    for values in units:
        m = len(values)
        if m < 2:
            continue
        counts = np.bincount(np.asarray(values, dtype=int), minlength=n_levels).astype(float)
        out.append((np.outer(counts, counts) - np.diag(counts)) / (m - 1))
    stacked: np.ndarray = np.array(out).reshape(len(out), n_levels, n_levels)
    return stacked


def coincidences(units: Iterable[Sequence[int]], n_levels: int) -> np.ndarray:
    """o[c, k]: pairs of values (c, k) within units, each unit weighted by 1 / (m_u - 1)."""
    total: np.ndarray = unit_coincidences(units, n_levels).sum(axis=0)
    return total


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
    return alpha_from_coincidences(coincidences(units, n_levels))


def alpha_from_coincidences(o: np.ndarray) -> float | None:
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


@dataclass
class AlphaInterval:
    low: float
    high: float
    replicates: int   # replicates with a defined alpha (a replicate drawing a single level has none)
    seed: int


def bootstrap_interval(units: Iterable[Sequence[int]], n_levels: int, replicates: int = 1000, seed: int = 0,
                       confidence: float = 0.95) -> AlphaInterval | None:
    """Percentile bootstrap interval of alpha, resampling pairable units. None with fewer than
    two pairable units or when no replicate has a defined alpha."""
    per_unit = unit_coincidences(units, n_levels)
    n = len(per_unit)
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    weights = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(replicates)]).astype(float)
    summed = (weights @ per_unit.reshape(n, -1)).reshape(replicates, n_levels, n_levels)
    values = [a for o in summed if (a := alpha_from_coincidences(o)) is not None]
    if not values:
        return None
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return AlphaInterval(float(low), float(high), len(values), seed)


def _indexed(ratings: Mapping[Any, Sequence[str]], levels: Sequence[str]) -> list[list[int]]:
    index = {lv: i for i, lv in enumerate(levels)}
    return [[index[v] for v in vals if v in index] for vals in ratings.values()]


def alpha_from_ratings(ratings: Mapping[Any, Sequence[str]], levels: Sequence[str]) -> float | None:
    """Same, with the levels given as labels (in their order)."""
    return alpha_ordinal(_indexed(ratings, levels), len(levels))


def bootstrap_from_ratings(ratings: Mapping[Any, Sequence[str]], levels: Sequence[str], replicates: int = 1000,
                           seed: int = 0) -> AlphaInterval | None:
    """`bootstrap_interval` with the levels given as labels."""
    return bootstrap_interval(_indexed(ratings, levels), len(levels), replicates, seed)


def agreement_label(alpha: float | None) -> str:
    """Landis & Koch benchmarks, as the paper reads them."""
    if alpha is None:
        return "n/a"
    for bound, label in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if alpha <= bound:
            return label
    return "near perfect"
