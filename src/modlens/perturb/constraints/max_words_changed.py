"""Maximum share of words changed (A2T, Yoo & Qi 2021: at most 10% of the words; TextAttack's
MaxModificationRate). A candidate may change at most max(min_words, floor(fraction x words))
words of the source; an inserted filler counts as a changed word."""
from __future__ import annotations

import math
from typing import Any, Sequence

from modlens.perturb.generate import word_slots
from modlens.perturb.parts import Candidate, Constraint


def changed_positions(candidate: Candidate) -> set[tuple[int, bool]]:
    """Distinct (word_index, insert_after) places the candidate changes."""
    return {(c.word_index, c.insert_after) for c in candidate.changes}


class MaxWordsChanged(Constraint):
    key = "max_words_changed"
    stage = "pre"

    def __init__(self, fraction: float = 0.25, min_words: int = 1):
        if not 0 < fraction <= 1:
            raise ValueError("fraction must be in (0, 1]")
        if min_words < 0:
            raise ValueError("min_words must be >= 0")
        self.fraction, self.min_words = float(fraction), int(min_words)

    def limit(self, source: str) -> int:
        return max(self.min_words, math.floor(self.fraction * len(word_slots(source))))

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "fraction": self.fraction, "min_words": self.min_words}

    def check_many(self, source: str, candidates: Sequence[Candidate]) -> list[str | None]:
        limit, n = self.limit(source), len(word_slots(source))
        out: list[str | None] = []
        for cand in candidates:
            changed = len(changed_positions(cand))
            out.append(None if changed <= limit else f"{changed} of {n} words changed > {limit} allowed")
        return out
