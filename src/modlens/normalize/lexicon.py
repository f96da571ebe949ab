"""The normalizer's dictionary: which words are known, and how plausible each one is.

Plausibility is a log prior: log frequency per million (general English and comments mixed,
see `tools/build_lexicon.py`) plus a bonus for words that mark offensive comments, because
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
                "`python tools/build_lexicon.py` (see docs/NORMALIZE.md)")
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
        self._position_index: dict[int, _PositionIndex] = {}
        self._initial_index: dict[str, _InitialIndex] = {}
        # every known word is all a-z: lets the index (and the pipeline) rule words out quickly
        self.plain_letters = re.fullmatch(r"[a-z]+(?:\n[a-z]+)*", "\n".join(self.freq)) is not None

    def __contains__(self, word: str) -> bool:
        return word in self.freq

    def __len__(self) -> int:
        return len(self.freq)

    def match(self, pattern: str, wildcard: str = "?") -> list[str]:
        """Known words of the same length matching `pattern`, where `wildcard` stands for any
        one letter (a-z), in lexicon order.

        Called for every wildcard guess of every unknown token, and nearly every guess matches
        nothing, so this intersects per-position bitsets instead of compiling a regex: each
        fixed character narrows the set and an empty set stops the scan."""
        index = self._positions(len(pattern))
        if index is None:
            return []
        found = index.everything
        for i, c in enumerate(pattern):
            found &= index.letter_at[i] if c == wildcard else index.char_at[i].get(c, 0)
            if not found:
                return []
        return index.words_in(found)

    def _positions(self, length: int) -> "_PositionIndex | None":
        """The bitset index of words of `length`, built on first use (most lengths never are)."""
        index = self._position_index.get(length)
        if index is None and length in self.by_length:
            index = self._position_index[length] = _PositionIndex(self.by_length[length])
        return index

    def supersequences(self, short: str, max_extra: int) -> list[str]:
        """Known words that start with `short`'s first letter, contain `short` as a
        subsequence, and are at most `max_extra` letters longer (in lexicon order)."""
        if short and self.plain_letters:
            return self._supersequences_indexed(short, max_extra)
        gap = f"[a-z]{{0,{max_extra}}}"
        regex = "^" + re.escape(short[0]) + "".join(gap + re.escape(c) for c in short[1:]) + gap + "$"
        n = len(short)
        return [w for w in re.findall(regex, self._initial_blob.get(short[0], ""), re.M)
                if n < len(w) <= n + max_extra]

    def _supersequences_indexed(self, short: str, max_extra: int) -> list[str]:
        """`supersequences` without a regex per call: bitsets keep the words of the right
        initial and length that hold every letter of `short`, and only those few are walked.
        Same answer as the regex only because every known word is all a-z (checked at load)."""
        index = self._initial_index.get(short[0])
        if index is None:
            if short[0] not in self.by_initial:
                return []
            index = self._initial_index[short[0]] = _InitialIndex(self.by_initial[short[0]])
        n = len(short)
        found = 0
        for length in range(n + 1, n + max_extra + 1):
            found |= index.of_length.get(length, 0)
        for c in set(short[1:]):
            found &= index.containing.get(c, 0)
            if not found:
                return []
        rest = short[1:]
        out = []
        for word in index.words_in(found):
            letters = iter(word[1:])
            if all(c in letters for c in rest):  # `in` advances the iterator: a subsequence test
                out.append(word)
        return out

    def prior(self, word: str) -> float:
        freq = self.freq.get(word)
        if freq is None:
            return UNKNOWN_PRIOR
        return FREQUENCY_WEIGHT * math.log(freq) + OFFENSIVE_WEIGHT * self.offensive[word]


def _bits(indices: list[int], size: int) -> int:
    """An int with the given bits set (built in a bytearray: setting bits on a big int one by
    one would copy it each time)."""
    buf = bytearray((size + 7) // 8)
    for k in indices:
        buf[k >> 3] |= 1 << (k & 7)
    return int.from_bytes(buf, "little")


class _Bitsets:
    """A word list whose subsets are ints: bit k stands for `words[k]`."""
    words: list[str]

    def words_in(self, bits: int) -> list[str]:
        """The words whose bits are set, in list order."""
        out = []
        while bits:
            low = bits & -bits
            out.append(self.words[low.bit_length() - 1])
            bits ^= low
        return out


class _InitialIndex(_Bitsets):
    """Words sharing a first letter, as bitsets by length and by letter they contain."""

    def __init__(self, words: list[str]):
        self.words = words
        by_length: dict[int, list[int]] = defaultdict(list)
        by_letter: dict[str, list[int]] = defaultdict(list)
        for k, word in enumerate(words):
            by_length[len(word)].append(k)
            for c in set(word):
                by_letter[c].append(k)
        self.of_length = {n: _bits(ks, len(words)) for n, ks in by_length.items()}
        self.containing = {c: _bits(ks, len(words)) for c, ks in by_letter.items()}


class _PositionIndex(_Bitsets):
    """Words of one length as bitsets: bit k of `char_at[i][c]` is set when word k has `c` at
    position i; `letter_at[i]` has the words with an a-z letter there (what a wildcard matches)."""

    def __init__(self, words: list[str]):
        self.words = words
        length = len(words[0])
        slots: list[dict[str, bytearray]] = [{} for _ in range(length)]
        letters = [bytearray((len(words) + 7) // 8) for _ in range(length)]
        for k, word in enumerate(words):
            byte, bit = k >> 3, 1 << (k & 7)
            for i, c in enumerate(word):
                slot = slots[i].get(c)
                if slot is None:
                    slot = slots[i][c] = bytearray(len(letters[0]))
                slot[byte] |= bit
                if "a" <= c <= "z":
                    letters[i][byte] |= bit
        self.char_at = [{c: int.from_bytes(b, "little") for c, b in slot.items()} for slot in slots]
        self.letter_at = [int.from_bytes(b, "little") for b in letters]
        self.everything = (1 << len(words)) - 1


@lru_cache(maxsize=4)
def load_lexicon(path: str | None = None) -> Lexicon:
    return Lexicon(path or DEFAULT_LEXICON_PATH)
