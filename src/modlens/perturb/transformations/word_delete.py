"""Word deletion (TextAttack's WordDeletion; ToxicTrap's word-level edits): drop the word,
"you are a stupid idiot" -> "you are a idiot". Only the word's letters go; punctuation around
it stays, so a sentence keeps its shape ("idiot!" -> "!")."""
from __future__ import annotations

import random
from typing import Sequence

from modlens.perturb.generate import WordSlot
from modlens.perturb.parts import Transformation, WordChange


class WordDelete(Transformation):
    key = "word_delete"
    kind = "word"
    description = "delete the word"

    def changes(self, text: str, slots: Sequence[WordSlot], index: int, rng: random.Random,
                k: int) -> list[WordChange]:
        word = slots[index].core(text)
        if k <= 0 or not word or len(slots) < 2:  # deleting a one-word text leaves nothing to judge
            return []
        return [WordChange(index, word, "", self.key, {"deleted": word})]
