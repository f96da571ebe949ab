"""Machine character attack (DeepWordBug / TextBugger): one of the character edits, drawn at random."""
from __future__ import annotations

import random

from modlens.perturb.strategies._word import Strategy, WordEdit
from modlens.perturb.strategies.char_delete import CharDelete
from modlens.perturb.strategies.char_insert import CharInsert
from modlens.perturb.strategies.char_swap import CharSwap
from modlens.perturb.strategies.homoglyph import Homoglyph
from modlens.perturb.strategies.key_substitute import KeySubstitute
from modlens.perturb.strategies.space_insert import SpaceInsert
from modlens.perturb.strategies.zero_width import ZeroWidth

OPERATIONS: dict[str, type[Strategy]] = {
    s.key: s for s in (CharSwap, CharDelete, CharInsert, KeySubstitute, Homoglyph, ZeroWidth, SpaceInsert)
}


class CharAttack(Strategy):
    key = "char_attack"
    description = "one machine character edit: swap, delete, insert, neighbouring key, homoglyph, zero-width, space"

    def __init__(self, operations: list[str] | None = None):
        ops = operations or list(OPERATIONS)
        unknown = [o for o in ops if o not in OPERATIONS]
        if unknown:
            raise ValueError(f"char_attack: unknown operations {unknown}; known: {', '.join(OPERATIONS)}")
        self.operations = {o: OPERATIONS[o]() for o in ops}

    def perturb(self, word: str, rng: random.Random) -> WordEdit | None:
        order = list(self.operations)
        rng.shuffle(order)
        for op in order:  # first operation (in random order) that applies to this word
            edit = self.operations[op].perturb(word, rng)
            if edit is not None:
                edit.params = {"op": op, **edit.params}
                return edit
        return None
