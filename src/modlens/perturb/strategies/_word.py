"""What every strategy shares: it rewrites one word (its letters, without surrounding
punctuation) with a seeded RNG and says which characters of the word it replaced."""
from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

VOWELS = set("aeiouAEIOU")


@dataclass
class WordEdit:
    text: str                                   # the perturbed word
    spans: list[tuple[int, int]]                # replaced [start, end) spans of the *original* word;
                                                # start == end is an insertion before `start`
    params: dict[str, Any] = field(default_factory=dict)


class Strategy(ABC):
    key: str = ""
    description: str = ""

    def availability(self) -> str | None:
        """None when usable, else a one-line reason with the fix."""
        return None

    def data(self) -> dict[str, Any]:
        """What the strategy reads beside its code (a table), named by its content: recorded with
        an attack, so one made with other data is another attack. {} when it reads none."""
        return {}

    @abstractmethod
    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        """A perturbed form of `word`, or None when this strategy cannot apply to it."""


def letter_positions(word: str) -> list[int]:
    return [i for i, c in enumerate(word) if c.isalpha()]


def interior(word: str) -> list[int]:
    """Letters other than the first and last: edits there keep the word readable."""
    pos = letter_positions(word)
    return pos[1:-1]


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, with touching replacement spans joined (insertions stay separate)."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s == out[-1][1] and s != e and out[-1][0] != out[-1][1]:
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def weighted_sample(rng: random.Random, items: list[int], weights: list[float], k: int) -> list[int]:
    """k distinct items, drawn without replacement with the given weights."""
    items, weights = list(items), list(weights)
    chosen = []
    for _ in range(min(k, len(items))):
        i = rng.choices(range(len(items)), weights=weights)[0]
        chosen.append(items.pop(i))
        weights.pop(i)
    return sorted(chosen)


def replace_chars(word: str, subs: dict[int, str]) -> WordEdit:
    """Replace single characters (index -> new string, possibly empty or longer)."""
    out = "".join(subs.get(i, c) for i, c in enumerate(word))
    return WordEdit(out, merge_spans([(i, i + 1) for i in subs]))


def insert_at(word: str, index: int, piece: str) -> WordEdit:
    return WordEdit(word[:index] + piece + word[index:], [(index, index)])
