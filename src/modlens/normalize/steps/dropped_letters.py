"""Dropped letters (abbreviations such as "stpd", "idot", "libral"): known words that contain
the token as a subsequence, keep its first letter, and miss at most a few letters. Dropping a
vowel or one of a double letter is cheap, a consonant dearer; the lexicon prior (frequency in
comments, offensiveness) then picks among them."""
from __future__ import annotations

from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import WILDCARD, Hypothesis, Step

MAX_DROPPED = 3
MIN_LENGTH = 3
BASE_COST = 0.5
VOWEL_COST = 1.0
DOUBLE_COST = 0.5
CONSONANT_COST = 2.0
VOWELS = set("aeiouy")


def dropped_cost(short: str, word: str) -> float | None:
    """Cost of reading `word` as `short` with letters dropped; None when it is not one."""
    if not short or short[0] != word[0]:
        return None
    cost, i = BASE_COST, 0
    for j, c in enumerate(word):
        if i < len(short) and short[i] == c:
            i += 1
        elif j > 0 and word[j - 1] == c:
            cost += DOUBLE_COST
        elif c in VOWELS:
            cost += VOWEL_COST
        else:
            cost += CONSONANT_COST
    return cost if i == len(short) else None


class DroppedLetters(Step):
    name = "dropped_letters"
    kind = "search"
    letters_only = True

    def candidates(self, hyp: Hypothesis, lexicon: Lexicon) -> list[Hypothesis]:
        short = hyp.text
        if len(short) < MIN_LENGTH or not short.isalpha() or WILDCARD in short:
            return []
        out = []
        for word in lexicon.supersequences(short, MAX_DROPPED):
            cost = dropped_cost(short, word)
            if cost is not None:
                out.append(hyp.but(word, cost, self.name))
        return out
