"""Character edit distance (DeepWordBug, Gao et al. 2018: an edit-distance budget on the
whole text; TextAttack's LevenshteinEditDistance): Levenshtein(source, candidate) <= max."""
from __future__ import annotations

from typing import Any, Sequence

from modlens.perturb.parts import Candidate, Constraint


def levenshtein(a: str, b: str, limit: int | None = None) -> int:
    """Edit distance (insert, delete, substitute: 1 each). A candidate shares most of its text
    with the source, so the common prefix and suffix are cut first and only the edited middle
    is compared. With `limit`, stops as soon as the distance must exceed it (returns limit+1)."""
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    a, b = a[start:end_a], b[start:end_b]
    if len(a) < len(b):
        a, b = b, a
    if limit is not None and len(a) - len(b) > limit:
        return limit + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if limit is not None and min(cur) > limit:
            return limit + 1
        prev = cur
    return prev[-1]


class EditDistance(Constraint):
    key = "edit_distance"
    stage = "pre"

    def __init__(self, max_distance: int = 30):
        if max_distance < 0:
            raise ValueError("max_distance must be >= 0")
        self.max_distance = int(max_distance)

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "max_distance": self.max_distance}

    def check_many(self, source: str, candidates: Sequence[Candidate]) -> list[str | None]:
        out: list[str | None] = []
        for cand in candidates:
            d = levenshtein(source, cand.text, self.max_distance)
            out.append(None if d <= self.max_distance else f"edit distance > {self.max_distance}")
        return out
