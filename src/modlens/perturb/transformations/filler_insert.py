"""Filler insertion (ToxicTrap's word insertion; TextAttack's WordInsertion family): put a
filler word after the word, "you are stupid" -> "you are really stupid". Fillers carry no
meaning of their own, so the comment reads the same while its tokens change."""
from __future__ import annotations

import random
from typing import Sequence

from modlens.perturb.generate import WordSlot
from modlens.perturb.parts import Transformation, WordChange

FILLERS = ("like", "really", "just", "so", "totally", "actually", "literally", "basically")


class FillerInsert(Transformation):
    key = "filler_insert"
    kind = "word"
    description = "insert a filler word (like, really, just, so, ...) after the word"

    def __init__(self, fillers: Sequence[str] = FILLERS):
        words = [str(f).strip() for f in fillers]
        if not words or any(not w or any(c.isspace() for c in w) for w in words):
            raise ValueError("fillers must be a non-empty list of single words")
        self.fillers = tuple(dict.fromkeys(words))

    def changes(self, text: str, slots: Sequence[WordSlot], index: int, rng: random.Random,
                k: int) -> list[WordChange]:
        word = slots[index].core(text)
        if k <= 0 or not word:
            return []
        nxt = slots[index + 1].core(text).lower() if index + 1 < len(slots) else ""
        # the rng picks which fillers (and their order), so k < len(fillers) still varies by seed
        options = [f for f in self.fillers if f.lower() not in (word.lower(), nxt)]
        picked = rng.sample(options, min(k, len(options)))
        return [WordChange(index, word, f, self.key, {"filler": f}, insert_after=True) for f in picked]
