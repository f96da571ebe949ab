"""Space insertion (TextBugger, HateCheck spell_space_add): split the word, idiot -> idi ot."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import Strategy, WordEdit, insert_at, interior


class SpaceInsert(Strategy):
    key = "space_insert"
    description = "insert one space inside the word (idiot -> idi ot)"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        inner = interior(word)
        if not inner:
            return None
        i = rng.choice(inner + [inner[-1] + 1])  # after the first letter, up to before the last
        edit = insert_at(word, i, " ")
        edit.params = {"index": i}
        return edit
