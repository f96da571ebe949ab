"""Deleted spaces ("Ihate", "muchdisdain", "idiotpeople"): an unknown all-letter token is cut
into two or three known words. The cut is chosen by a unigram language model over the
lexicon (highest summed log frequency), and short parts must be common function words, so
junk fragments ("au", "ed") never make a split. The pipeline asks for a split only when the
token is unknown, and uses it only when it beats the best one-word repair or keeps letters
that repair dropped ("Ihate"); it never asks for mentions, URLs, numbers or possible names
(Title-case words inside a sentence; at a sentence's start only "I"/"So"/... + word).
"""
from __future__ import annotations

import math
from functools import lru_cache

from modlens.normalize.lexicon import FREQUENCY_WEIGHT, Lexicon
from modlens.normalize.steps._base import Step

MAX_PARTS = 3
MIN_TOKEN = 4          # "isa", "ofa": too short to tell a join from a typo
MAX_TOKEN = 30
# Minimum frequency per million of a part, by its length: a one- or two-letter part must be a
# function word ("i", "a", "to", "so", "us"; not "u", "re", "au"), a three-letter part a
# common word. Set by hand from the lexicon's frequency list, then checked on HateCheck.
SHORT_PART_MIN_FREQ = {1: 1000.0, 2: 1000.0, 3: 10.0}
LONG_PART_MIN_FREQ = 1.0
# Only the first part may be this short: a short word at the end or in the middle is more
# often an informal ending ("killin", "woulda", "killas") or a fragment ("realising").
MIN_LATER_PART = 3
# Word endings that are also listed as words: "retweeting" is not "retweet ing".
SUFFIXES = {"ing", "est", "ally", "ness", "ment", "ist", "ish", "ers", "less", "able", "dom"}
# Cost of each inserted space, in the pipeline's prior units (a missing letter costs 2.0).
SPLIT_COST = 1.5
# A split must score (`split_prior` minus the spaces' cost) at least this; stricter than the
# pipeline's ACCEPT_FLOOR because a wrong split is worse than a wrong letter.
SPLIT_FLOOR = -1.5


def part_ok(part: str, lexicon: Lexicon) -> bool:
    freq = lexicon.freq.get(part)
    return freq is not None and freq >= SHORT_PART_MIN_FREQ.get(len(part), LONG_PART_MIN_FREQ)


def informal_word(word: str, lexicon: Lexicon) -> bool:
    """Spellings that are one word written informally, not two words: a dropped g ("blowin"
    is "blowing", not "blow in"), a dropped apostrophe ("werent" is not "we rent"), and
    laughter ("ahahaha", two letters repeated)."""
    return ((word.endswith("in") and word + "g" in lexicon)
            or (word.endswith("nt") and word[:-2] in lexicon)
            or len(set(word)) <= 2)


def split_prior(parts: tuple[str, ...], lexicon: Lexicon) -> float:
    """The prior of a cut, in the units of one word's: the weighted log frequency of its
    rarest part. No offensiveness bonus: that bonus rewards reading a disguise as an
    offensive word, and would reward carving one out of any unknown word ("hatefull")."""
    return FREQUENCY_WEIGHT * math.log(min(lexicon.freq[p] for p in parts))


def is_splittable(core: str) -> bool:
    """Plain letters only, all lower, all upper or with a leading capital: never mixed case
    (that is the mixed_case step's signal), digits, apostrophes or symbols."""
    if not (MIN_TOKEN <= len(core) <= MAX_TOKEN) or not core.isascii() or not core.isalpha():
        return False
    return core.islower() or core.isupper() or core[1:].islower()


class WordSplit(Step):
    name = "word_split"
    kind = "split"

    def split(self, core: str, lexicon: Lexicon) -> tuple[list[str], float] | None:
        """The cut of `core` into known words, as slices of `core` (case kept), and its score
        (`split_prior` minus the cost of the spaces); None when there is no good cut."""
        word = core.lower()
        if not is_splittable(core) or word in lexicon or informal_word(word, lexicon):
            return None
        parts = _segment(word, lexicon)
        if parts is None:
            return None
        score = split_prior(parts, lexicon) - SPLIT_COST * (len(parts) - 1)
        if score < SPLIT_FLOOR:
            return None
        out, i = [], 0
        for p in parts:
            out.append(core[i:i + len(p)])
            i += len(p)
        return out, score


def _segment(word: str, lexicon: Lexicon) -> tuple[str, ...] | None:
    """Best cut of `word` into 2..MAX_PARTS known parts by summed log frequency per million
    (so every extra part must pay for itself with frequency), or None. When the best cut
    has a short or suffix-like later part ("is it", "kill in", "retweet ing") the token is
    left alone rather than cut a worse way ("i sit")."""

    @lru_cache(maxsize=None)
    def best(start: int, parts_left: int) -> tuple[float, tuple[str, ...]] | None:
        rest = word[start:]
        found: tuple[float, tuple[str, ...]] | None = (
            (math.log(lexicon.freq[rest] / 1e6), (rest,)) if part_ok(rest, lexicon) else None)
        if parts_left > 1:
            for end in range(start + 1, len(word)):
                head = word[start:end]
                if not part_ok(head, lexicon):
                    continue
                tail = best(end, parts_left - 1)
                if tail is not None:
                    logp = math.log(lexicon.freq[head] / 1e6) + tail[0]
                    if found is None or logp > found[0]:
                        found = (logp, (head,) + tail[1])
        return found

    result = best(0, MAX_PARTS)
    if result is None or len(result[1]) < 2:
        return None
    parts = result[1]
    if any(len(p) < MIN_LATER_PART for p in parts[1:]) or parts[-1] in SUFFIXES:
        return None
    return parts
