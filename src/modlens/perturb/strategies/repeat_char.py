"""RepeatChar (NoisyHate Table 2): stretch a letter, stupid -> stuppppid."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import VOWELS, Strategy, WordEdit, letter_positions, replace_chars, weighted_sample


class RepeatChar(Strategy):
    key = "repeat_char"
    description = "repeat one or two letters 2-4 extra times (stupid -> stuppppid)"

    def __init__(self, min_extra: int = 2, max_extra: int = 4):
        self.min_extra, self.max_extra = min_extra, max_extra

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        pos = letter_positions(word)
        if len(pos) < 2:
            return None
        # People stretch vowels and word endings most ("idiooot", "daaamn", "crapp").
        weights = [3.0 if word[i] in VOWELS or i == pos[-1] else 1.0 for i in pos]
        k = 2 if len(pos) >= 6 and rng.random() < 0.3 else 1
        chosen = weighted_sample(rng, pos, weights, k)
        extra = {i: rng.randint(self.min_extra, self.max_extra) for i in chosen}
        edit = replace_chars(word, {i: word[i] * (1 + n) for i, n in extra.items()})
        edit.params = {"repeats": [[i, n] for i, n in sorted(extra.items())]}
        return edit
