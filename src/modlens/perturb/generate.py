"""Variant generation for the daemon and audits: perturb the words the target detector relies
on (Algorithm 1 of NoisyHate) with each configured strategy, reproducibly.

Every variant is reproducible from (source text, strategy, seed, params["word_index"],
params["attempt"]): the strategy's RNG is `random.Random(f"{seed}/{strategy}/{word_index}/{attempt}")`.
"""
from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass
from typing import Any, Sequence

from modlens.perturb import registry
from modlens.perturb.base import Variant
from modlens.perturb.importance import heuristic_ranking, rank_by_importance
from modlens.perturb.strategies._word import Strategy, WordEdit

log = logging.getLogger(__name__)

_WORD = re.compile(r"\S+")
_CORE = re.compile(r"^(\W*)(.*?)(\W*)$", re.S)  # leading punctuation, word, trailing punctuation


@dataclass(frozen=True)
class WordSlot:
    index: int        # position among the whitespace words (matches importance[i])
    start: int        # the whitespace token in the text
    end: int
    core_start: int   # the word without surrounding punctuation ("idiot" in "(idiot!)")
    core_end: int

    def core(self, text: str) -> str:
        return text[self.core_start:self.core_end]


def word_slots(text: str) -> list[WordSlot]:
    slots = []
    for i, m in enumerate(_WORD.finditer(text)):
        lead, core, _ = _CORE.match(m.group()).groups()
        cs = m.start() + len(lead)
        slots.append(WordSlot(i, m.start(), m.end(), cs, cs + len(core)))
    return slots


def rng_for(seed: int, strategy: str, word_index: int, attempt: int) -> random.Random:
    return random.Random(f"{seed}/{strategy}/{word_index}/{attempt}")


def splice(text: str, edits: dict[WordSlot, WordEdit]) -> tuple[str, list[tuple[int, int]]]:
    """Apply word edits (at most one per word) to the text; returns the new text and the
    edited spans in the *source* text."""
    out, positions, cursor = [], [], 0
    for slot in sorted(edits, key=lambda s: s.core_start):
        edit = edits[slot]
        out += [text[cursor:slot.core_start], edit.text]
        cursor = slot.core_end
        positions += [(slot.core_start + s, slot.core_start + e) for s, e in edit.spans]
    out.append(text[cursor:])
    return "".join(out), positions


def perturb_word(text: str, strategy: Strategy, key: str, slot: WordSlot, seed: int, attempt: int = 0) -> WordEdit | None:
    word = slot.core(text)
    if sum(c.isalpha() for c in word) < 2:
        return None
    edit = strategy.perturb(word, rng_for(seed, key, slot.index, attempt))
    return None if edit is None or edit.text == word else edit


class VariantGenerator:
    def __init__(self, strategies: list[str], *, budget: int, seed: int, importance_threshold: float,
                 strategy_options: dict[str, dict[str, Any]] | None = None, max_rounds: int = 4):
        """`strategies` are registry keys (unknown keys raise KeyError). A strategy that cannot
        run here (e.g. human_lookup without its table) is left out and listed in `unavailable`
        with the reason. `budget` is the number of variants per text."""
        if budget < 0:
            raise ValueError("budget must be >= 0")
        self.budget, self.seed, self.threshold, self.max_rounds = budget, seed, importance_threshold, max_rounds
        self.options = strategy_options or {}
        self.strategies: dict[str, Strategy] = {}
        self.unavailable: dict[str, str] = {}
        for key in dict.fromkeys(strategies):
            strategy = registry.create(key, **self.options.get(key, {}))
            reason = strategy.availability()
            if reason:
                self.unavailable[key] = reason
                log.warning("perturbation strategy unavailable: %s", reason)
            else:
                self.strategies[key] = strategy

    def ranked_words(self, text: str, importance: Sequence[float] | None) -> tuple[list[int], str]:
        if importance is None:
            return heuristic_ranking(text), "heuristic"
        n = len(text.split())
        if len(importance) != n:
            raise ValueError(f"importance has {len(importance)} values but the text has {n} whitespace words")
        return rank_by_importance(importance, self.threshold), "importance"

    def generate(self, text: str, importance: list[float] | None = None) -> list[Variant]:
        """Up to `budget` distinct variants. Words are tried most important first: with
        `importance`, only words whose removal drops toxicity by more than the threshold (none
        qualify -> no variants, as in Algorithm 1); without it, `heuristic_ranking`. Strategies
        take turns in an order shuffled per text, so rare types are not crowded out when the
        budget is smaller than the number of strategies; each turn perturbs the most important
        word the strategy applies to; later rounds draw again (attempt 1, 2, ...)."""
        if not self.strategies or self.budget == 0:
            return []
        slots = word_slots(text)
        ranked, ranking = self.ranked_words(text, importance)
        order = list(self.strategies)
        random.Random(f"{self.seed}|{text}").shuffle(order)
        variants: list[Variant] = []
        seen = {text}
        for attempt in range(self.max_rounds):
            added = False
            for key in order:
                if len(variants) >= self.budget:
                    return variants
                for i in ranked:
                    v = self._variant(text, key, slots[i], attempt, importance, ranking)
                    if v is not None and v.text not in seen:
                        seen.add(v.text)
                        variants.append(v)
                        added = True
                        break
            if not added:
                break
        return variants

    def _variant(self, text, key, slot, attempt, importance, ranking) -> Variant | None:
        edit = perturb_word(text, self.strategies[key], key, slot, self.seed, attempt)
        if edit is None:
            return None
        new_text, positions = splice(text, {slot: edit})
        params: dict[str, Any] = {
            "word_index": slot.index, "word": slot.core(text), "attempt": attempt, "ranking": ranking,
            "importance": None if importance is None else round(float(importance[slot.index]), 6),
            "threshold": self.threshold if importance is not None else None,
            "edit": edit.params,
        }
        if self.options.get(key):
            params["options"] = {k: str(v) for k, v in self.options[key].items()}
        return Variant(text=new_text, strategy=key, params=params, seed=self.seed,
                       positions=positions, source_text=text)


def reproduce(variant: Variant, strategy_options: dict[str, Any] | None = None) -> Variant | None:
    """Re-run the strategy that made a generator variant; equal text means it reproduced."""
    p = variant.params
    strategy = registry.create(variant.strategy, **(strategy_options or {}))
    slot = word_slots(variant.source_text)[p["word_index"]]
    edit = perturb_word(variant.source_text, strategy, variant.strategy, slot, variant.seed, p["attempt"])
    if edit is None:
        return None
    new_text, positions = splice(variant.source_text, {slot: edit})
    return Variant(new_text, variant.strategy, dict(p, edit=edit.params), variant.seed, positions, variant.source_text)
