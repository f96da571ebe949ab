"""DeepWordBug insert: add a random letter inside the word, stupid -> stuxpid."""
from __future__ import annotations

import random
import string

from modlens.perturb.strategies._word import Strategy, WordEdit, insert_at, letter_positions


class CharInsert(Strategy):
    key = "char_insert"
    description = "insert one random letter between two inner letters (stupid -> stuxpid)"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        pos = letter_positions(word)
        if len(pos) < 2:
            return None
        i = rng.choice(pos[1:])  # before any letter but the first
        c = rng.choice(string.ascii_lowercase)
        c = c.upper() if word[i - 1].isupper() and word[i].isupper() else c
        edit = insert_at(word, i, c)
        edit.params = {"index": i, "inserted": c}
        return edit
