"""Placeholder characters inside a word (`*`, `_`, `-`, `.`): either each hides one letter
("st*pid", "f__k") or they separate spelled-out letters ("i.d.i.o.t", "s-t-u-p-i-d")."""
from __future__ import annotations

import re

from modlens.normalize.lexicon import Lexicon
from modlens.normalize.steps._base import WILDCARD, Hypothesis, Step, keep_best

PLACEHOLDERS = "*_-.·•"
PLACEHOLDER_SET = frozenset(PLACEHOLDERS)
SEPARATED = re.compile(r"^(?:[a-z0-9@$!?][*_\-.·•])+[a-z0-9@$!?]$")
HIDDEN_LETTER_COST = 1.0
SEPARATOR_COST = 0.5


class Placeholder(Step):
    name = "placeholder"
    symbols = PLACEHOLDER_SET  # masked as WILDCARD, or deleted between spelled-out letters

    def expand(self, hyps: list[Hypothesis], lexicon: Lexicon) -> list[Hypothesis]:
        out = []
        for hyp in hyps:
            out.append(hyp)
            text = hyp.text
            # a leading placeholder is punctuation; a trailing `*`/`_` after letters is a
            # mask ("f***"), a trailing `-`/`.` is punctuation
            body = text.rstrip("-.·•") if text[:1].isalpha() else text[1:-1]
            if PLACEHOLDER_SET.isdisjoint(body[1:]):
                continue
            if SEPARATED.match(text):
                out.append(hyp.but(re.sub(f"[{re.escape(PLACEHOLDERS)}]", "", text), SEPARATOR_COST, self.name))
            start = text.index(body[1:], 1) if text[:1].isalpha() else 1
            masked = "".join(WILDCARD if c in PLACEHOLDERS else c for c in body[1:])
            n = masked.count(WILDCARD)
            out.append(hyp.but(text[:start] + masked + text[start + len(masked):], HIDDEN_LETTER_COST * n, self.name))
        return keep_best(out)
