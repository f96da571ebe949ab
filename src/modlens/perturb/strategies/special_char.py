"""SpecialChar (NoisyHate Table 2): letters replaced by digits or symbols, stupid -> 5tupid, st*pid."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import VOWELS, Strategy, WordEdit, replace_chars, weighted_sample

# Look-alike digits and symbols people use in comments (leetspeak).
LEET: dict[str, str] = {
    "a": "@4", "b": "8", "e": "3", "g": "9", "i": "1!", "l": "1", "o": "0", "s": "5$", "t": "7", "z": "2",
}
PLACEHOLDER = "*"  # masks a vowel: st*pid, f*ck


class SpecialChar(Strategy):
    key = "special_char"
    description = "replace one or two letters by a look-alike digit/symbol or '*' (stupid -> 5tupid, st*pid)"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        candidates = [i for i, c in enumerate(word) if c.lower() in LEET or c in VOWELS]
        if len(word) < 3 or not candidates:
            return None
        k = 2 if len(word) >= 7 and len(candidates) >= 2 and rng.random() < 0.3 else 1
        weights = [2.0 if word[i].lower() in LEET else 1.0 for i in candidates]
        chosen = weighted_sample(rng, candidates, weights, k)
        subs = {}
        for i in chosen:
            c = word[i]
            # '*' only hides inner vowels: a leading '*' reads as markup, not as a letter.
            masked = c in VOWELS and 0 < i < len(word) - 1
            if c.lower() in LEET and not (masked and rng.random() < 0.3):
                subs[i] = rng.choice(LEET[c.lower()])
            elif masked:
                subs[i] = PLACEHOLDER
            else:
                subs[i] = rng.choice(LEET.get(c.lower(), PLACEHOLDER))
        edit = replace_chars(word, subs)
        edit.params = {"substitutions": [[i, word[i], s] for i, s in sorted(subs.items())]}
        return edit
