"""DeepWordBug/TextBugger swap: exchange two neighbouring inner letters, stupid -> sutpid."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import Strategy, WordEdit, interior


class CharSwap(Strategy):
    key = "char_swap"
    description = "swap two adjacent inner letters (stupid -> stpuid)"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        inner = set(interior(word))
        pairs = [i for i in sorted(inner) if i + 1 in inner and word[i].lower() != word[i + 1].lower()]
        if not pairs:
            return None
        i = rng.choice(pairs)
        return WordEdit(word[:i] + word[i + 1] + word[i] + word[i + 2:], [(i, i + 2)], {"index": i})
