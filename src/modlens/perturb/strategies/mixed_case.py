"""MixedCase (NoisyHate Table 2): flip the case of some letters, stupid -> sTuPId."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import Strategy, WordEdit, letter_positions, replace_chars


class MixedCase(Strategy):
    key = "mixed_case"
    description = "flip the case of 30-60% of the letters, never giving plain Title/UPPER case (stupid -> sTuPId)"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        pos = letter_positions(word)
        if len(pos) < 3:
            return None
        for _ in range(20):  # redraw until the result is not an ordinary casing of the word
            k = max(2, round(len(pos) * rng.uniform(0.3, 0.6)))
            chosen = sorted(rng.sample(pos, min(k, len(pos) - 1)))
            out = "".join(c.swapcase() if i in chosen else c for i, c in enumerate(word))
            letters = "".join(c for c in out if c.isalpha())
            if letters not in (letters.lower(), letters.upper(), letters.capitalize()):
                edit = replace_chars(word, {i: word[i].swapcase() for i in chosen})
                edit.params = {"flipped": chosen}
                return edit
        return None
