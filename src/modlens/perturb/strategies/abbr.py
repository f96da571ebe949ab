"""Abbr (NoisyHate Table 2): drop letters, stupid -> stupd, account -> accnt."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import VOWELS, Strategy, WordEdit, interior, letter_positions, replace_chars, weighted_sample


class Abbr(Strategy):
    key = "abbr"
    description = "delete one or two inner letters, vowels and doubled letters first (stupid -> stupd)"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        n_letters = len(letter_positions(word))
        if n_letters < 4:
            return None  # "cat" -> "ct" is no longer the word
        inner = interior(word)
        lower = word.lower()

        def weight(i: int) -> float:
            doubled = (i > 0 and lower[i - 1] == lower[i]) or (i + 1 < len(lower) and lower[i + 1] == lower[i])
            return 3.0 if word[i] in VOWELS or doubled else 1.0

        k = 1 if n_letters < 6 else rng.randint(1, 2)
        chosen = weighted_sample(rng, inner, [weight(i) for i in inner], k)
        edit = replace_chars(word, {i: "" for i in chosen})
        edit.params = {"deleted": chosen}
        return edit
