"""pyspellchecker (edit distance 2, its own English frequency list) as the last resort for a
word no other step could place. Slow (tens of ms per word), so it only sees leftovers."""
from __future__ import annotations

import hashlib
import importlib.metadata
import pkgutil
from functools import lru_cache
from typing import TYPE_CHECKING

from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import WILDCARD, Hypothesis, Step

FALLBACK_COST = 3.0
MIN_LENGTH = 3

if TYPE_CHECKING:  # the class is imported when the checker is first built (`checker`); the package itself
    # is imported earlier, when a Normalizer is built: `model()` reads its version and word list
    from spellchecker import SpellChecker


@lru_cache(maxsize=1)
def word_list_sha() -> str:
    """SHA-256 of pyspellchecker's English list, read as `SpellChecker(language="en")` reads it."""
    data = pkgutil.get_data("spellchecker", "resources/en.json.gz")
    return hashlib.sha256(data or b"").hexdigest()[:12]


class PySpell(Step):
    name = "pyspell"
    kind = "search"
    letters_only = True

    def __init__(self, distance: int = 2):
        self.distance = distance
        self._checker: SpellChecker | None = None

    def model(self) -> str:
        # pyspellchecker is not pinned: another release corrects with another list (and code)
        return f"pyspellchecker {importlib.metadata.version('pyspellchecker')} en {word_list_sha()} distance {self.distance}"

    def checker(self) -> SpellChecker:
        if self._checker is None:
            from spellchecker import SpellChecker
            self._checker = SpellChecker(language="en", distance=self.distance)
        return self._checker

    def candidates(self, hyp: Hypothesis, lexicon: Lexicon) -> list[Hypothesis]:
        if len(hyp.text) < MIN_LENGTH or not hyp.text.isalpha() or WILDCARD in hyp.text:
            return []
        word = self.checker().correction(hyp.text)
        if not word or word == hyp.text or word not in lexicon:
            return []
        return [hyp.but(word, FALLBACK_COST, self.name)]
