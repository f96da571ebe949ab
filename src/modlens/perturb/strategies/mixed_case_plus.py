"""MixedCase+ (NoisyHate Table 2): capitals that spell a real English word, democrats -> democRATs."""
from __future__ import annotations

import functools
import hashlib
import random
from typing import Any

from modlens.perturb.strategies._word import Strategy, WordEdit

WORDS = "pyspellchecker:en"  # what the list is; which one, by content: `words_sha`


@functools.lru_cache(maxsize=4)
def english_words(min_frequency: int = 1000, min_length: int = 3) -> frozenset[str]:
    """Common English words from pyspellchecker's bundled frequency list (offline). The
    frequency floor drops the list's rare fragments ("ats", "crat") that nobody would read
    as a hidden word."""
    from spellchecker import SpellChecker

    freq = SpellChecker(language="en").word_frequency.dictionary
    return frozenset(w for w, n in freq.items() if n >= min_frequency and len(w) >= min_length and w.isalpha())


@functools.lru_cache(maxsize=4)
def words_sha(min_frequency: int = 1000, min_length: int = 3) -> str:
    """The word list by content (SHA-256 of its sorted words): pyspellchecker is not pinned, and
    another release lists other words, so a variant drawn from it names the list it was drawn from."""
    words = english_words(min_frequency, min_length)
    return hashlib.sha256("\n".join(sorted(words)).encode()).hexdigest()[:12]


class MixedCasePlus(Strategy):
    key = "mixed_case_plus"
    description = "upper-case a run of letters that is itself a common English word (democrats -> democRATs)"

    def __init__(self, min_frequency: int = 1000, min_length: int = 3):
        self.min_frequency, self.min_length = min_frequency, min_length

    def data(self) -> dict[str, Any]:
        return {"words": WORDS, "words_sha": words_sha(self.min_frequency, self.min_length)}

    def hidden_words(self, word: str) -> list[tuple[int, int, str]]:
        """Every (start, end, word) substring that is a dictionary word, shorter than the word
        by at least two letters (capitalising "IDIOTs" hides nothing new)."""
        words = english_words(self.min_frequency, self.min_length)
        low = word.lower()
        n = len(low)
        return [(s, e, low[s:e]) for s in range(n) for e in range(s + self.min_length, n + 1)
                if e - s <= n - 2 and low[s:e].isalpha() and low[s:e] in words]

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        found = self.hidden_words(word)
        if not found:
            return None
        # Longer hidden words carry the "extra meaning" the strategy is about.
        start, end, hidden = rng.choices(found, weights=[(e - s) ** 2 for s, e, _ in found])[0]
        out = word[:start] + word[start:end].upper() + word[end:]
        if out == word:
            return None
        return WordEdit(out, [(start, end)], {"hidden": hidden, "span": [start, end], **self.data()})
