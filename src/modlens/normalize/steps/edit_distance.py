"""One-edit typos (swapped neighbours, a wrong letter, an extra letter, a missing letter
anywhere) against the lexicon, with a cost per kind of edit."""
from __future__ import annotations

import string
from collections.abc import Iterator

from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import WILDCARD, Hypothesis, Step

LETTERS = string.ascii_lowercase
SWAP_COST = 1.5
EXTRA_DOUBLE_COST = 1.0  # "stuppid": the extra letter repeats its neighbour
EXTRA_COST = 2.0
MISSING_COST = 2.0
NEAR_KEY_COST = 2.0      # a neighbouring key on a QWERTY keyboard
VOWEL_FOR_VOWEL_COST = 2.5  # a misheard vowel
WRONG_COST = 4.0
QWERTY = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]
VOWELS = set("aeiouy")


def _neighbours() -> dict[str, set[str]]:
    near: dict[str, set[str]] = {c: set() for row in QWERTY for c in row}
    for r, row in enumerate(QWERTY):
        for i, c in enumerate(row):
            for rr in (r - 1, r, r + 1):
                if 0 <= rr < len(QWERTY):
                    for j in (i - 1, i, i + 1):
                        if 0 <= j < len(QWERTY[rr]) and QWERTY[rr][j] != c:
                            near[c].add(QWERTY[rr][j])
    return near


NEAR = _neighbours()


def substitution_cost(typed: str, meant: str) -> float:
    if meant in NEAR.get(typed, ()):
        return NEAR_KEY_COST
    if typed in VOWELS and meant in VOWELS:
        return VOWEL_FOR_VOWEL_COST
    return WRONG_COST
MIN_LENGTH = 3


def one_edit(word: str) -> Iterator[tuple[str, float]]:
    """(candidate, cost) for every spelling one edit away from `word`."""
    for i in range(len(word)):
        left, right = word[:i], word[i + 1:]
        doubled = (i > 0 and word[i - 1] == word[i]) or (i + 1 < len(word) and word[i + 1] == word[i])
        yield left + right, EXTRA_DOUBLE_COST if doubled else EXTRA_COST
        if i + 1 < len(word):
            yield left + word[i + 1] + word[i] + word[i + 2:], SWAP_COST
        for c in LETTERS:
            if c != word[i]:
                yield left + c + right, substitution_cost(word[i], c)
    for i in range(len(word) + 1):
        for c in LETTERS:
            yield word[:i] + c + word[i:], MISSING_COST


class EditDistance(Step):
    name = "edit_distance"
    kind = "search"
    letters_only = True

    def candidates(self, hyp: Hypothesis, lexicon: Lexicon) -> list[Hypothesis]:
        if len(hyp.text) < MIN_LENGTH or not hyp.text.isalpha() or WILDCARD in hyp.text:
            return []
        best: dict[str, float] = {}
        for candidate, cost in known_edits(hyp.text, lexicon):
            if cost < best.get(candidate, 99.0):
                best[candidate] = cost
        return [hyp.but(w, c, self.name) for w, c in best.items()]


def known_edits(word: str, lexicon: Lexicon) -> Iterator[tuple[str, float]]:
    """The known words among `one_edit(word)`, in the same order and with the same costs.
    Nearly every spelling one edit away is unknown, so this tests membership before it
    works out a cost, and builds each position's 25 substitutions in one comprehension."""
    known = lexicon.freq
    n = len(word)
    for i in range(n):
        left, right, typed = word[:i], word[i + 1:], word[i]
        dropped = left + right
        if dropped in known:
            doubled = (i > 0 and word[i - 1] == typed) or (i + 1 < n and word[i + 1] == typed)
            yield dropped, EXTRA_DOUBLE_COST if doubled else EXTRA_COST
        if i + 1 < n:
            swapped = left + word[i + 1] + typed + word[i + 2:]
            if swapped in known:
                yield swapped, SWAP_COST
        for c in [c for c in LETTERS if c != typed and left + c + right in known]:
            yield left + c + right, substitution_cost(typed, c)
    for i in range(n + 1):
        left, right = word[:i], word[i:]
        for c in [c for c in LETTERS if left + c + right in known]:
            yield left + c + right, MISSING_COST
