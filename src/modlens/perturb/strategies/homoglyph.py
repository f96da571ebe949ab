"""TextBugger visual substitution: a Latin letter replaced by an identical-looking Cyrillic or
Greek one, "idiot" -> "idiоt" (the о is U+043E)."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import Strategy, WordEdit, letter_positions

HOMOGLYPHS: dict[str, str] = {
    "a": "\u0430", "c": "\u0441", "e": "\u0435", "i": "\u0456", "j": "\u0458", "o": "\u043e",
    "p": "\u0440", "s": "\u0455", "x": "\u0445", "y": "\u0443",
    "A": "\u0410", "B": "\u0412", "C": "\u0421", "E": "\u0415", "H": "\u041d", "I": "\u0406",
    "K": "\u041a", "M": "\u041c", "O": "\u041e", "P": "\u0420", "T": "\u0422", "X": "\u0425",
    "N": "\u039d", "Z": "\u0396",
}


class Homoglyph(Strategy):
    key = "homoglyph"
    description = "replace one letter by a look-alike Cyrillic/Greek letter (invisible to readers)"

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        pos = [i for i in letter_positions(word) if word[i] in HOMOGLYPHS]
        if not pos:
            return None
        i = rng.choice(pos)
        g = HOMOGLYPHS[word[i]]
        return WordEdit(word[:i] + g + word[i + 1:], [(i, i + 1)], {"index": i, "original": word[i], "glyph": f"U+{ord(g):04X}"})
