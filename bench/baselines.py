"""pyspellchecker as a baseline, run the way the NoisyHate paper ran it: each word on its own,
lowercased, edit distance 2, its own English frequency list. Punctuation around a word is
kept aside and put back."""
from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)


class PySpellBaseline:
    name = "pyspellchecker"

    def __init__(self, distance: int = 2):
        from spellchecker import SpellChecker

        self.checker = SpellChecker(language="en", distance=distance)
        self.version = f"pyspellchecker-d{distance}"
        self.correct_word = lru_cache(maxsize=100_000)(self._correct_word)

    def _correct_word(self, word: str) -> str:
        word = word.lower()
        return self.checker.correction(word) or word

    def normalize_text(self, text: str) -> str:
        out = []
        for token in text.split():
            lead, core, trail = WORD.match(token).groups()
            out.append(lead + (self.correct_word(core) if core else "") + trail)
        return " ".join(out)
