"""DeepWordBug/TextBugger delete: remove one inner letter, stupid -> stpid."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import Strategy, WordEdit, interior


class CharDelete(Strategy):
    key = "char_delete"
    description = "delete one inner letter (stupid -> stpid)"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        inner = interior(word)
        if len(inner) < 2:  # keep at least three letters
            return None
        i = rng.choice(inner)
        return WordEdit(word[:i] + word[i + 1:], [(i, i + 1)], {"index": i, "deleted": word[i]})
