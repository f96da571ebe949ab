"""Zero-width insertion: an invisible U+200B inside the word splits it for tokenizers."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import Strategy, WordEdit, insert_at, letter_positions

ZERO_WIDTH = ("\u200b", "\u200c", "\u200d")  # zero-width space, non-joiner, joiner


class ZeroWidth(Strategy):
    key = "zero_width"
    description = "insert an invisible zero-width character between two letters"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        pos = letter_positions(word)
        if len(pos) < 2:
            return None
        i = rng.choice(pos[1:])
        z = rng.choice(ZERO_WIDTH)
        edit = insert_at(word, i, z)
        edit.params = {"index": i, "char": f"U+{ord(z):04X}"}
        return edit
