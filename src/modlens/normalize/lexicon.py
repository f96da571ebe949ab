"""The normalizer's dictionary: which words are known, and how plausible each one is.

Plausibility is a log prior: log frequency per million (general English and comments mixed,
see `build_lexicon.py`) plus a bonus for words that mark offensive comments, because
people disguise exactly those words to slip past moderation.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

DEFAULT_LEXICON_PATH = Path(__file__).with_name("data") / "lexicon.txt"

# Log frequency is tempered: a very common word ("for") should not win over a plausible
# disguised one ("fool") on frequency alone. Chosen on HateCheck spell_* cases, not NoisyHate.
FREQUENCY_WEIGHT = 0.4
# How much one unit of offensiveness (log-odds above base rate) counts against log frequency.
OFFENSIVE_WEIGHT = 2.0
# Log prior of an unknown word: below every known one.
UNKNOWN_PRIOR = -20.0


class Lexicon:
    def __init__(self, path: Path | str = DEFAULT_LEXICON_PATH):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(
                f"normalizer lexicon not found at {self.path}; rebuild it with "
                "`python -m modlens.normalize.build_lexicon` (see docs/NORMALIZE.md)")
        raw = self.path.read_bytes()
        self.digest = hashlib.sha256(raw).hexdigest()[:12]
        self.freq: dict[str, float] = {}
        self.offensive: dict[str, float] = {}
        for n, line in enumerate(raw.decode("utf-8").splitlines(), 1):
            if not line or line.startswith("#"):
                continue
            try:
                word, freq, off = line.split("\t")
                self.freq[word] = float(freq)
                self.offensive[word] = float(off)
            except ValueError as exc:
                raise ValueError(f"{self.path}:{n}: expected word<TAB>freq<TAB>offensiveness") from exc
        # words grouped by first letter, for the dropped-letter search
        self.by_initial: dict[str, list[str]] = defaultdict(list)
        # words grouped by length, for placeholder patterns ("st?pid")
        self.by_length: dict[int, list[str]] = defaultdict(list)
        for word in self.freq:
            self.by_initial[word[0]].append(word)
            self.by_length[len(word)].append(word)
        # the same groups as newline-joined blobs, so a regex scans them at C speed
        self._initial_blob = {k: "\n".join(v) for k, v in self.by_initial.items()}
        self._length_blob = {k: "\n".join(v) for k, v in self.by_length.items()}

    def __contains__(self, word: str) -> bool:
        return word in self.freq

    def __len__(self) -> int:
        return len(self.freq)

    def match(self, pattern: str, wildcard: str = "?") -> list[str]:
        """Known words of the same length matching `pattern`, where `wildcard` stands for any
        one letter."""
        regex = "^" + "".join("[a-z]" if c == wildcard else re.escape(c) for c in pattern) + "$"
        return re.findall(regex, self._length_blob.get(len(pattern), ""), re.M)

    def supersequences(self, short: str, max_extra: int) -> list[str]:
        """Known words that start with `short`'s first letter, contain `short` as a
        subsequence, and are at most `max_extra` letters longer."""
        gap = f"[a-z]{{0,{max_extra}}}"
        regex = "^" + re.escape(short[0]) + "".join(gap + re.escape(c) for c in short[1:]) + gap + "$"
        n = len(short)
        return [w for w in re.findall(regex, self._initial_blob.get(short[0], ""), re.M)
                if n < len(w) <= n + max_extra]

    def prior(self, word: str) -> float:
        freq = self.freq.get(word)
        if freq is None:
            return UNKNOWN_PRIOR
        return FREQUENCY_WEIGHT * math.log(freq) + OFFENSIVE_WEIGHT * self.offensive[word]


@lru_cache(maxsize=4)
def load_lexicon(path: str | None = None) -> Lexicon:
    return Lexicon(path or DEFAULT_LEXICON_PATH)
