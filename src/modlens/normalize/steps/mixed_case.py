"""Mixed case: "democRATs" is folded to "democrats", and the word its capitals spell out
("rats") is reported as hidden. Lower, UPPER and Title case words are left alone."""
from __future__ import annotations

import re

from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import Step

UPPER_RUN = re.compile(r"[A-Z]{2,}")
MIN_HIDDEN = 3


def is_mixed(word: str) -> bool:
    letters = [c for c in word if c.isalpha()]
    if len(letters) < 2:
        return False
    rest = letters[1:]
    return any(c.isupper() for c in rest) and any(c.islower() for c in letters)


class MixedCase(Step):
    name = "mixed_case"
    kind = "case"

    def hidden(self, word: str, lexicon: Lexicon) -> str | None:
        """The longest known word (>= 3 letters, not the whole word) made of a capital run,
        optionally with the lower-case letters that follow it up to the word's end."""
        if not is_mixed(word):
            return None
        whole = word.lower()
        best = None
        for run in UPPER_RUN.finditer(word):
            for candidate in (word[run.start():].lower(), run.group(0).lower()):
                if len(candidate) >= MIN_HIDDEN and candidate != whole and candidate in lexicon:
                    if best is None or len(candidate) > len(best):
                        best = candidate
                    break
        return best
