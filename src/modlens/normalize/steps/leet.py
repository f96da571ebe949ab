"""Leetspeak and symbol substitution: each digit or symbol inside a word becomes each letter it
commonly stands for, and the dictionary decides ("stup1d" -> stupid, "ki11" -> kill). A symbol
that stands for nothing known becomes a wildcard at a higher cost ("dic1" -> "dic?" -> dick)."""
from __future__ import annotations

from operator import itemgetter

from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import WILDCARD, Hypothesis, Step, keep_best

# symbol -> letters it stands for, most usual first (each later one costs a little more)
LEET: dict[str, tuple[str, ...]] = {
    "0": ("o",), "1": ("i", "l"), "2": ("z",), "3": ("e",), "4": ("a",), "5": ("s",),
    "6": ("g", "b"), "7": ("t",), "8": ("b",), "9": ("g",),
    "@": ("a",), "$": ("s",), "!": ("i", "l"), "|": ("l", "i"), "+": ("t",), "€": ("e",),
    "£": ("l", "e"), "¢": ("c",), "ß": ("b", "ss"), "(": ("c",), "<": ("c",), "#": ("h",),
    "%": ("x",), "&": ("a",),
}
LEET_SYMBOLS = frozenset(LEET)
ALTERNATIVE_COST = 0.5   # second reading of a symbol
WILDCARD_COST = 3.0      # the symbol hides a letter we cannot read off it

# each symbol's readings with their costs, the wildcard last
OPTIONS = {ch: [(letters, i * ALTERNATIVE_COST) for i, letters in enumerate(readings)]
           + [(WILDCARD, WILDCARD_COST)] for ch, readings in LEET.items()}
_second = itemgetter(1)


class Leet(Step):
    name = "leet"
    symbols = LEET_SYMBOLS

    def expand(self, hyps: list[Hypothesis], lexicon: Lexicon) -> list[Hypothesis]:
        out = []
        for hyp in hyps:
            if LEET_SYMBOLS.isdisjoint(hyp.text) or not any(c.isalpha() for c in hyp.text):
                out.append(hyp)
                continue
            partial = [("", 0.0)]
            for ch in hyp.text:
                if ch not in LEET:
                    partial = [(p + ch, c) for p, c in partial]
                    continue
                grown = [(p + o, c + oc) for p, c in partial for o, oc in OPTIONS[ch]]
                grown.sort(key=_second)  # stable: ties keep reading order
                partial = grown[:64]
            out.append(hyp)  # keep the literal reading: the symbol may be punctuation
            out.extend(hyp.but(text, cost, self.name) for text, cost in partial)
        return keep_best(out)
